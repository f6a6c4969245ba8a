"""`archgraph diff A B` as text (tables that choose their columns for the width) and JSON.

Values a schedule holds in some of its layers read `1024 (5 of 6 layers)`; a node's path is
printed whole (a Sheet never breaks a name), hyperparameters and shapes as the spec gives them.
"""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from ..machine import binary
from ..passes.diff import Change, DiffReport, StackPair, Values
from .flops import flops_text
from .sheet import Alt, Col, Sheet


def values_text(values: Values, layers: int | None = None) -> str:
    """`8`, `none`, `[1024, 4096]`, or each value with its layers: `1024 (5 of 6 layers), none (1 of 6)`."""
    if not values:
        return "—"
    total = layers or sum(values.values())
    if len(values) == 1 and next(iter(values.values())) == total:
        return _value(next(iter(values)))
    return ", ".join(f"{_value(v)} ({n} of {total} layers)" for v, n in values.items())


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(map(_value, value)) + "]"
    return str(value)


def signed(n: int) -> str:
    return f"{n:+,}" if n else "0"


def diff_json(d: DiffReport) -> dict[str, Any]:
    values = lambda v: [[_json(k), n] for k, n in v.items()]  # noqa: E731
    return {
        "a": d.a, "b": d.b, "sizes": {"a": d.sizes[0], "b": d.sizes[1]},
        "total": {name: {"a": pair[0], "b": pair[1], "change": pair[1] - pair[0]}
                  for name, pair in vars(d.total).items()},
        "stacks": [{"a": s.a, "b": s.b, "role": s.role, "layers": list(s.layers), "params": list(s.params),
                    "params_change": s.params[1] - s.params[0], "params_per_layer": list(s.per_layer),
                    "forward_flops": list(s.flops), "forward_flops_change": s.flops[1] - s.flops[0],
                    "does": [list(s.does[0]), list(s.does[1])]} for s in d.stacks],
        "nodes": [{"kind": c.kind, "a": c.a, "b": c.b, "op": c.op, "stack": c.stack, "params": list(c.params),
                   "changes": [{"what": w, "a": values(va), "b": values(vb)} for w, va, vb in c.details]}
                  for c in d.changes],
        "designs": [{"stack": x.stack, "stacks": list(x.stacks), "role": x.role, "a": [list(n) for n in x.a],
                     "b": [list(n) for n in x.b], "params": list(x.params)} for x in d.designs],
        "same": d.same,
        "inputs": [{"name": c.name, "kind": c.kind, "a": _input_json(c.a), "b": _input_json(c.b)} for c in d.inputs],
        "inputs_same": d.inputs_same,
    }


def _input_json(side) -> dict[str, Any] | None:
    return None if side is None else {"shape": list(side[0]), "dtype": side[1], "default": side[2]}


def input_text(side) -> str:
    """`[B, S] int64`, with `, optional (ones)` when a call may leave it out; `—` when absent."""
    if side is None:
        return "—"
    shape, dtype, default = side
    return f"[{', '.join(map(str, shape))}] {dtype}" + (f", optional ({default})" if default else "")


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def sizes_text(d: DiffReport) -> str:
    """The sizes the figures are at, each once: those A reads, then those only B reads (T5's T
    against GPT-2); a size both read at other values says which is which.

    >>> from types import SimpleNamespace as N
    >>> sizes_text(N(sizes=({"B": 1, "S": 512}, {"B": 1, "S": 512, "T": 512})))
    'B=1, S=512, T=512'
    """
    a, b = d.sizes
    return ", ".join(f"{k}={a[k]}" if k not in b or b[k] == a[k] else f"{k}={a[k]} in A, {b[k]} in B" for k in a) \
        + "".join(f", {k}={v}" if a else f"{k}={v}" for k, v in b.items() if k not in a)


def diff_table(d: DiffReport) -> Group:
    parts: list[Any] = [Text(f"A: {d.a}\nB: {d.b}\nwhat changed from A to B (figures at {sizes_text(d) or 'its sizes'})")]
    parts.append(_totals(d))
    if d.inputs:
        parts.append(_inputs(d))
    if d.stacks:
        parts.append(_stacks(d.stacks))
    if d.changes:
        parts.append(_nodes(d.changes))
    if d.designs:
        parts.append(_designs(d))
    if not d.changes and not d.designs:
        depth = "" if all(s.layers[0] == s.layers[1] for s in d.stacks) else "; only the depth of a stack differs"
        parts.append(Text(f"every node is the same in both ({d.same} places: ops, hyperparameters, tensor "
                          f"shapes){depth}"))
    elif d.same:
        parts.append(Text(f"{d.same} other nodes are the same in both", style="dim"))
    return Group(*parts)


def _totals(d: DiffReport) -> Sheet:
    t = d.total
    sheet = Sheet("in total", [Col(""), Col("A", "number"), Col("B", "number"), Col("Change", "number")])
    rows = [("Parameters", t.params, "{:,}"), ("Active parameters", t.active, "{:,}"),
            ("Outside the stacks", t.outside, "{:,}")]
    for label, pair, form in rows:
        if label != "Active parameters" or t.active != t.params:
            sheet.add_row(label, form.format(pair[0]), form.format(pair[1]), signed(pair[1] - pair[0]))
    sheet.add_row("Forward FLOPs", flops_text(t.forward_flops[0]), flops_text(t.forward_flops[1]),
                  sign_text(flops_text(t.forward_flops[1] - t.forward_flops[0]))
                  if t.forward_flops[1] != t.forward_flops[0] else "0")
    for label, pair in (("Training memory", t.training_bytes), ("Serving memory", t.serving_bytes)):
        sheet.add_row(label, binary(pair[0]), binary(pair[1]), sign_text(binary(abs(pair[1] - pair[0])), pair[1] - pair[0]))
    return sheet


def sign_text(text: str, n: int | None = None) -> str:
    if n is None:
        return text if text.startswith("-") else f"+{text}"
    return "0" if n == 0 else ("+" if n > 0 else "-") + text


def _stacks(stacks: list[StackPair]) -> Sheet:
    sheet = Sheet("by stack", [Col("Stack"), Col("A", "text", wrap=8), Col("B", "text", wrap=8), Col("Change", "number")])
    for s in stacks:
        sheet.add_row(s.a if s.a == s.b else f"{s.a or '—'} -> {s.b or '—'}", "" if s.a else "—", "" if s.b else "—", "")
        sheet.add_row("  layers", str(s.layers[0]), str(s.layers[1]), signed(s.layers[1] - s.layers[0]))
        sheet.add_row("  parameters", f"{s.params[0]:,}", f"{s.params[1]:,}", signed(s.params[1] - s.params[0]))
        if all(s.per_layer) and s.per_layer[0] != s.per_layer[1]:
            sheet.add_row("  per layer", f"{s.per_layer[0]:,}", f"{s.per_layer[1]:,}",
                          signed(s.per_layer[1] - s.per_layer[0]))
        sheet.add_row("  forward FLOPs", flops_text(s.flops[0]), flops_text(s.flops[1]),
                      sign_text(flops_text(s.flops[1] - s.flops[0])) if s.flops[1] != s.flops[0] else "0")
        if s.does[0] != s.does[1]:
            sheet.add_row("  does", ", ".join(s.does[0]) or "—", ", ".join(s.does[1]) or "—", "")
    return _whole(sheet)


def _nodes(changes: list[Change]) -> Sheet:
    renamed = any(c.kind == "renamed" for c in changes)
    sheet = Sheet("nodes: its path and op, then what differs" + ("; renamed: the same op, tensors and values under "
                                                                  "another path" if renamed else ""),
                  [Col("Node"), Col("A", "text", wrap=8), Col("B", "text", wrap=8)])
    for c in changes:
        if c.kind == "renamed":  # A's path, then B's under it: the column as wide as the longer, not both
            sheet.add_row(f"{c.a}\n  -> {c.b}", c.op, "renamed")
            continue
        sheet.add_row(c.a or c.b, c.op if c.a else "—", c.op if c.b else "—")
        if c.params[0] != c.params[1]:
            sheet.add_row("  parameters", f"{c.params[0]:,}", f"{c.params[1]:,}")
        for what, va, vb in c.details:
            sheet.add_row(f"  {what}", values_text(va), values_text(vb))
    return _whole(sheet)


def _inputs(d: DiffReport) -> Sheet:
    sheet = Sheet("inputs: added, removed or changed" + (f" ({d.inputs_same} the same in both)" if d.inputs_same else ""),
                  [Col("Input"), Col("A", "text", wrap=8), Col("B", "text", wrap=8)])
    for c in d.inputs:
        sheet.add_row(f"{c.name} ({c.kind})", input_text(c.a), input_text(c.b))
    for col in sheet.cols[1:]:
        col.wrap = 20  # '[B, S] int64, optional' on one line, its default on the next
    return sheet


def _designs(d: DiffReport) -> Sheet:
    sheet = Sheet("different designs: a role both compute (their parameters), with no node in common",
                  [Col("Role, then its nodes"), Col("A", "text", wrap=8), Col("B", "text", wrap=8)])
    for x in d.designs:
        sheet.add_row(x.where, f"{x.params[0]:,}", f"{x.params[1]:,}")
        for path, op in x.a:
            sheet.add_row(f"  {path}", op, "—")
        for path, op in x.b:
            sheet.add_row(f"  {path}", "—", op)
    return _whole(sheet)


WHOLE = 16  # a value this short (a count with its unit, a shape) is never wrapped: '163.43 MFLOP', '[14336, 4096]'


def _whole(sheet: Sheet) -> Sheet:
    """The A and B columns at least as wide as their short values, so that a number and its unit
    stay on one line (prose columns otherwise give their width to the first of them)."""
    for i, col in enumerate(sheet.cols):
        if col.header in ("A", "B"):
            short = [len(str(cells[i])) for cells, _ in sheet.rows if len(str(cells[i])) <= WHOLE]
            col.wrap = max(short, default=col.wrap)
    return sheet
