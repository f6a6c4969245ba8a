"""Closed-form formulas and the generated hand derivation (`explain`) as text and JSON."""
from __future__ import annotations

import re
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..passes.formula import FormulaReport, Term, tidy
from .sheet import Alt, Col, Sheet

_SUP = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def pretty(e: Any) -> str:
    """sympy text made readable: `12*H**2 + 13*H` -> `12·H² + 13·H`."""
    text = str(e)
    text = re.sub(r"\*\*(\d+)", lambda m: m.group(1).translate(_SUP), text)
    return text.replace("*", "·")


def formula_json(f: FormulaReport, flops: Any = None) -> dict[str, Any]:
    import sympy
    out = {"model": f.model, "params": pretty(f.total), "params_sympy": str(f.total),
           "params_latex": sympy.latex(f.total), "symbols": f.symbols, "value": f.evaluate(),
           "by_category": {k: str(v) for k, v in f.by_category.items()},
           "frozen": sorted(f.frozen), "notes": f.notes}
    if flops is not None:
        out["forward_flops"] = str(flops)
    return out


def _term_json(f: FormulaReport, t: Term) -> dict[str, Any]:
    if not t.is_block:
        return {"path": t.path, "op": t.kind, "category": t.category,
                "tensors": [{"name": x.name, "shape": [str(d) for d in x.shape], "formula": str(x.count),
                             "params": x.value if not x.tied_to else 0, **({"tied_to": x.tied_to} if x.tied_to else {})}
                            for x in t.tensors]}
    return {"path": t.path, "block": t.kind, "repeat": str(t.repeat), "repeat_value": t.repeat_value,
            "shared": t.shared, "per_repetition": str(tidy(t.body(), f.repeat_symbols)),
            "per_repetition_params": t.body_value(), "params": t.total_value(),
            "children": [_term_json(f, c) for c in t.children]}


def explain_json(f: FormulaReport) -> dict[str, Any]:
    steps, running = [], 0
    for t in f.terms:
        running += t.total_value()
        steps.append({**_term_json(f, t), "subtotal": running})
    return {"model": f.model, "symbols": f.symbols, "steps": steps, "total": str(f.total), "value": f.evaluate()}


def formula_table(f: FormulaReport, flops: Any = None) -> Group:
    values = ", ".join(f"{k}={v:,}" for k, v in f.symbols.items() if k in f.free_names())
    head = Table(show_header=False, box=None, padding=(0, 1))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("params", pretty(f.total))
    head.add_row("at", f"{values} = {f.evaluate():,}")
    if flops is not None:
        head.add_row("forward FLOPs", pretty(flops))
    cats = Table(title="by category", title_justify="left")
    cats.add_column("Category")
    cats.add_column("Formula")
    cats.add_column("Value", justify="right")
    for k, v in sorted(f.by_category.items()):
        cats.add_row(k, pretty(v), f"{int(v.xreplace(f.subs)) if hasattr(v, 'xreplace') else int(v):,}")
    parts: list[Any] = [Text(f"{f.model}: parameters as a formula", style="bold"), head, cats]
    if flops is not None:
        parts.append(Text("FLOPs: the sizes (B, S, ...) are symbols, the spec's variables take their values; "
                          "2 FLOPs per multiply-accumulate.", style="dim"))
    if f.frozen:
        parts.append(Text("kept as numbers where used (conditions, or not expressible): "
                          + ", ".join(sorted(f.frozen)), style="dim"))
    return Group(*parts)


def explain_table(f: FormulaReport) -> Group:
    table = Sheet(f"{f.model}: parameters, derived",
                  [Col("Node"), Col("Tensor"), Col("Shape"), Col("Formula", "text"), Col("Params", "number"),
                   Col("Subtotal", "number")], shrink=["Formula", "Shape", "Subtotal", "Formula"])
    running = 0
    for term in f.terms:
        running = _explain(table, f, term, 0, running)
    closing = Table(show_header=False, box=None, padding=(0, 1))
    closing.add_column(style="bold")
    closing.add_column()
    closing.add_row("total", f"{pretty(f.total)} = {f.evaluate():,}")
    values = ", ".join(f"{k} = {v:,}" for k, v in f.symbols.items() if k in f.free_names())
    closing.add_row("where", values)
    return Group(table, closing)


def _explain(table: Sheet, f: FormulaReport, term: Term, depth: int, running: int) -> int:
    pad = "  " * depth
    if not term.is_block:
        for t in term.tensors:
            shape = "[" + ", ".join(pretty(d) for d in t.shape) + "]"
            numbers = " × ".join(f"{int(d.xreplace(f.subs)):,}" for d in t.shape) if t.shape else "1"
            if t.tied_to:
                table.add_row(pad + term.path, t.name, shape, Alt(f"tied to {t.tied_to}", "tied"), "0", "")
                continue
            running += t.value if depth == 0 else 0
            table.add_row(pad + term.path, t.name, shape, Alt(f"{pretty(t.count)} = {numbers}", pretty(t.count)),
                          f"{t.value:,}",
                          f"{running:,}" if depth == 0 else "")
        return running
    times = "" if term.repeat_value == 1 and not term.shared else f" × {pretty(term.repeat)}"
    table.add_row(Text(pad + term.path + times + (" (shared)" if term.shared else ""), style="bold"),
                  Text(term.kind, style="bold"), "", "", "", "")
    inner = 0
    for child in term.children:
        _explain(table, f, child, depth + 1, 0)
        inner += child.total_value()
    body = tidy(term.body(), f.repeat_symbols)
    table.add_row(Text(pad + ("  one repetition" if times else "  block total"), style="italic"), "", "",
                  pretty(body), f"{term.body_value():,}", "")
    if times:
        n = term.repeat_value
        label = "once (shared)" if term.shared else f"× {pretty(term.repeat)} = × {n:,}"
        table.add_row(Text(pad + "  " + label, style="italic"), "", "", pretty(tidy(term.total(), f.repeat_symbols)),
                      f"{term.total_value():,}", "")
    if depth == 0:
        running += term.total_value()
        table.add_row("", "", "", "", "", Text(f"{running:,}", style="bold"))
    return running
