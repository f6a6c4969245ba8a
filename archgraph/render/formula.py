"""Closed-form formulas and the generated hand derivation (`explain`) as text and JSON."""
from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..passes.formula import FormulaReport, Term, tidy
from .pattern import _period, places
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
    _explain_terms(table, f, f.terms, 0, 0)
    closing = Table(show_header=False, box=None, padding=(0, 1))
    closing.add_column(style="bold")
    closing.add_column()
    closing.add_row("total", f"{pretty(f.total)} = {f.evaluate():,}")
    values = ", ".join(f"{k} = {v:,}" for k, v in f.symbols.items() if k in f.free_names())
    closing.add_row("where", values)
    return Group(table, closing)


def _explain_terms(table: Sheet, f: FormulaReport, terms: list[Term], depth: int, running: int) -> int:
    """The terms in order, the runs of a layer schedule that repeat with a period folded as the
    diagram folds them (one period, each run with how often it comes)."""
    i = 0
    while i < len(terms):
        runs = _schedule(terms, i)
        period = _period([(id(t.children), t.repeat_value) for t in runs]) if len(runs) > 1 else None
        if period is None:
            running = _explain(table, f, terms[i], depth, running)
            i += 1
            continue
        running = _explain_pattern(table, f, runs, period, depth, running)
        i += len(runs)
    return running


def _schedule(terms: list[Term], i: int) -> list[Term]:
    """The runs of one layer schedule that start at terms[i] (block calls of one path, each named by
    its run), or [terms[i]]."""
    first = terms[i]
    runs = [first]
    while first.is_block and first.label != first.path and i + len(runs) < len(terms):
        nxt = terms[i + len(runs)]
        if not (nxt.is_block and nxt.path == first.path and nxt.kind == first.kind and nxt.label != nxt.path):
            break
        runs.append(nxt)
    return runs


def _explain_pattern(table: Sheet, f: FormulaReport, runs: list[Term], period: int, depth: int, running: int) -> int:
    pad = "  " * depth
    layers = sum(t.repeat_value for t in runs)
    first = runs[0].label[len(runs[0].path) + 1:].split("..")[0]
    last = int(first) + layers - 1
    kinds = _term_kinds(runs[:period])
    whole, rest = divmod(layers, sum(t.repeat_value for t in runs[:period]))
    times = f"{whole} × [{', '.join(kinds)}]" + (f" + {rest}" if rest else "")
    table.add_row(Text(f"{pad}{runs[0].path}.{first}..{last}  {times}", style="bold"),
                  Text(runs[0].kind, style="bold"), "", "", "", "")
    for j in range(period):
        members = runs[j::period]
        count = sum(t.repeat_value for t in members)
        where = places([SimpleNamespace(label=t.label, segment=t.path) for t in runs], j, period)
        table.add_row(Text(f"{pad}  {runs[0].path}.{where}  × {count}", style="bold"), Text(runs[j].kind, style="bold"),
                      "", "", "", "")
        _explain_terms(table, f, runs[j].children, depth + 2, 0)
        table.add_row(Text(pad + "    one repetition", style="italic"), "", "",
                      pretty(tidy(runs[j].body(), f.repeat_symbols)), f"{runs[j].body_value():,}", "")
        total = sum(t.total_value() for t in members)
        formula = pretty(tidy(sum((t.total() for t in members[1:]), members[0].total()), f.repeat_symbols))
        table.add_row(Text(f"{pad}    × {count:,}", style="italic"), "", "", formula, f"{total:,}", "")
    if depth == 0:
        running += sum(t.total_value() for t in runs)
        table.add_row("", "", "", "", "", Text(f"{running:,}", style="bold"))
    return running


def _term_kinds(runs: list[Term]) -> list[str]:
    """What tells each run of a period apart (as render.text.run_kinds, over terms): the ops with
    parameters, norms and embeddings aside, that not every run has."""
    def own(term: Term) -> list[str]:
        found: list[str] = []
        for c in term.children:
            for k in (own(c) if c.is_block else [c.kind] if c.tensors and c.category not in ("norm", "embedding")
                      else []):
                if k not in found:
                    found.append(k)
        return found
    each = [own(t) for t in runs]
    common = set.intersection(*(set(k) for k in each))
    return ["+".join([k for k in ks if k not in common] or ks or [t.kind]) for ks, t in zip(each, runs)]


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
    table.add_row(Text(pad + (term.label or term.path) + times + (" (shared)" if term.shared else ""), style="bold"),
                  Text(term.kind, style="bold"), "", "", "", "")
    _explain_terms(table, f, term.children, depth + 1, 0)
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
