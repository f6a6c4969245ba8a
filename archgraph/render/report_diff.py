"""`archgraph diff A B -o page.html`: what changed, as the page lists it above the two panes (the
text tables' rows: totals, stacks, nodes and designs, each with A, B and the change)."""
from __future__ import annotations

import re
from html import escape

from ..machine import binary
from ..passes.diff import DiffReport
from .diff import input_text, sign_text, signed, values_text
from .flops import flops_text


def diff_html(d: DiffReport) -> str:
    t = d.total
    rows = [("Parameters", f"{t.params[0]:,}", f"{t.params[1]:,}", signed(t.params[1] - t.params[0])),
            ("Forward FLOPs", flops_text(t.forward_flops[0]), flops_text(t.forward_flops[1]),
             sign_text(flops_text(t.forward_flops[1] - t.forward_flops[0]))
             if t.forward_flops[1] != t.forward_flops[0] else "0"),
            *((label, binary(pair[0]), binary(pair[1]), sign_text(binary(abs(pair[1] - pair[0])), pair[1] - pair[0]))
              for label, pair in (("Training memory", t.training_bytes), ("Serving memory", t.serving_bytes)))]
    rows += [(f"input {c.name} ({c.kind})", input_text(c.a), input_text(c.b), "") for c in d.inputs]
    for s in d.stacks:
        name = s.a if s.a == s.b else f"{s.a or '—'} -> {s.b or '—'}"
        rows.append((f"{name}: layers", str(s.layers[0]), str(s.layers[1]), signed(s.layers[1] - s.layers[0])))
        rows.append((f"{name}: parameters", f"{s.params[0]:,}", f"{s.params[1]:,}", signed(s.params[1] - s.params[0])))
        if s.does[0] != s.does[1]:
            rows.append((f"{name}: does", ", ".join(s.does[0]) or "—", ", ".join(s.does[1]) or "—", ""))
    for c in d.changes:
        path = f"{c.a} -> {c.b}" if c.kind == "renamed" else c.a or c.b
        rows.append((f"{path} ({c.kind})", c.op if c.a else "—", c.op if c.b else "—", signed(c.params[1] - c.params[0])))
        rows += [(f"  {what}", values_text(va), values_text(vb), "") for what, va, vb in c.details]
    for x in d.designs:  # each side's nodes with their ops: 'transformer.h.ln_1 (layer_norm)'
        rows.append((f"{x.where} (different designs)", ", ".join(f"{p} ({op})" for p, op in x.a),
                     ", ".join(f"{p} ({op})" for p, op in x.b), signed(x.params[1] - x.params[0])))
    body = "\n".join("<tr>" + "".join(f"<td class=\"{'number' if k == 3 else 'text'}\">{_cell(v)}</td>"
                                      for k, v in enumerate(row)) + "</tr>" for row in rows)
    return (f"<h3>What changed from {escape(d.a)} to {escape(d.b)}</h3>\n<div class=\"scroll\"><table class=\"diff\">"
            f"<thead><tr><th>What</th><th>{escape(d.a)}</th><th>{escape(d.b)}</th><th class=\"number\">Change</th>"
            f"</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>\n")


def _cell(text: str) -> str:
    """Text that wraps between words and after a path's dots (before a name), never inside a number."""
    return re.sub(r"\.(?=[A-Za-z_])", ".<wbr>", escape(text))
