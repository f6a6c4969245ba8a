"""FLOPs reports as tables and JSON; sizes still symbolic print as formulas (`36864*B*S**2 + ...`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is made: --json never needs it
    from rich.console import Group
    from rich.table import Table

    from .sheet import Sheet

from ..dims import fmt, to_json
from ..passes.flops import TRAINING_FACTOR, FlopsReport, token_input

ASSUMPTIONS = ("FLOPs = 2 per multiply-accumulate; attention counts q/k/v/o projections and both S x T "
               "matmuls (scores and values) over the full matrix, causal or not (a sliding window or a chunk: the keys "
               "it lets a query see); norms, activations and adds "
               "count a few FLOPs per element; embedding lookups count 0; a tied weight's matmul counts "
               f"(its parameters do not). Training ~ {TRAINING_FACTOR} x forward (backward ~ 2 x forward).")


def flops_text(n: Any) -> str:
    """12345678 -> '12.35 GFLOP'; a symbolic count stays a formula."""
    if not isinstance(n, (int, float)):
        return fmt(n)
    for unit, size in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("KFLOP", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:g} FLOP"


def _num(n: Any) -> Any:
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    return to_json(n) if not isinstance(n, float) else n


def flops_json(r: FlopsReport) -> dict[str, Any]:
    return {"model": r.model.name, "bindings": {k: to_json(v) for k, v in r.bindings.items()},
            "forward_flops": _num(r.forward), "training_flops": _num(r.training),
            "training_factor": TRAINING_FACTOR, "tokens": _num(r.tokens), "unit": r.unit,
            "forward_flops_per_token": _num(r.per_token), "tokens_of": token_input(r.model),
            "by_category": {k: _num(v) for k, v in r.by_category.items()},
            "by_op": {k: _num(v) for k, v in r.by_op.items()},
            "nodes": [{"path": n.path, "op": n.op, "flops": _num(n.flops)} for n in r.nodes()],
            "assumptions": ASSUMPTIONS}


def per_unit_label(r: FlopsReport) -> str:
    """`Forward ÷ 512 tokens of input_ids`: the whole forward divided by the first input's tokens
    (an encoder-decoder's decoder tokens are in the forward, not in the divisor)."""
    n = fmt(r.tokens)
    return f"Forward ÷ {n} {r.unit}{'' if n == '1' else 's'} of {token_input(r.model)}"


def flops_table(r: FlopsReport) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from .sheet import Col, Sheet

    sizes = ", ".join(f"{k}={v}" for k, v in r.bindings.items()) or "symbolic sizes"
    nodes = Sheet(f"{r.model.name}: forward FLOPs at {sizes}",
                  [Col("Node"), Col("Op"), Col("FLOPs", "number"), Col("≈", "number")], shrink=["≈", "Op"])
    _node_rows(nodes, r)
    concrete = isinstance(r.forward, (int, float))
    just = "right" if concrete else "left"  # a formula wraps between its terms, a number never
    totals = Table(show_header=False, box=None, padding=(0, 2))
    totals.add_column()
    totals.add_column(justify=just)
    if concrete:
        totals.add_column()
    units = (lambda n: (flops_text(n),)) if concrete else (lambda n: ())
    totals.add_row("Forward (the whole model)", _exact(r.forward), *units(r.forward))
    totals.add_row(per_unit_label(r), *((_exact(r.per_token), *units(r.per_token)) if r.per_token is not None
                                        else ("— (give every size a value: --set)",)))
    totals.add_row(f"Training ≈ {TRAINING_FACTOR} × forward", _exact(r.training), *units(r.training))
    cats = Table(title="by category", title_justify="left")
    cats.add_column("Category")
    cats.add_column("FLOPs", justify=just)
    if concrete:
        cats.add_column("Share", justify="right")
    for k, v in sorted(r.by_category.items(), key=lambda kv: str(kv[0])):
        share = f"{100 * v / r.forward:.1f}%" if isinstance(v, int) and r.forward else ""
        cats.add_row(k, _exact(v), *([share] if concrete else []))
    return Group(nodes, totals, cats, Text(ASSUMPTIONS, style="dim"))


def _exact(n: Any) -> str:
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}"
    return f"{int(n):,}" if isinstance(n, (int, float)) else fmt(n)


def _node_rows(table: Sheet, r: FlopsReport) -> None:
    """Every node that costs something; a repeated block's nodes once with × N, and a schedule
    whose runs repeat with a period folded as the diagram folds it (`layers.[0, 2, 4, ..., 10].mlp  × 6`)."""
    for label, op_name, f, times in _rows(r.shapes.run, ""):
        if f == 0:
            continue
        label += f"  × {times}" if times > 1 else ""
        table.add_row(label, op_name, _exact(f * times), flops_text(f * times))


def _rows(run, prefix: str, times: int = 1):
    """(path, op, FLOPs of one evaluation, evaluations) of every op of `run`, as passes.flops.counted
    gives them, but one period of each repeating schedule for all of its runs."""
    from ..graph import OpNode
    from ..passes.flops import op_flops
    from ..passes.walk import join
    from .pattern import repeating
    patterns = repeating(run.graph)
    folded = {n for p in patterns.values() for n in p.drawn[1:] + p.skipped}
    for name, node in run.graph.nodes.items():
        if name in folded:
            continue
        if name in patterns:
            yield from _pattern_rows(run, prefix, times, patterns[name])
        elif isinstance(node, OpNode):
            path = join(prefix, name)
            yield path, node.op.op_name, op_flops(node, run.input_values(node), list(run.nodes[name]), path), times
        else:
            yield from _block_rows(run, prefix, times, name)


def _block_rows(run, prefix: str, times: int, name: str):
    """The rows of a call's repetitions, those evaluated once for several named by all of them
    (`layers.0..5.fc1  × 6`, not `layers.0.fc1  × 6`)."""
    node, index = run.graph.nodes[name], 0
    for segment in run.nodes[name]:
        path = node.rep_path(prefix, index)
        if node.indexed and segment.count > 1:
            path += f"..{node.start + index + segment.count - 1}"
        yield from _rows(segment.run, path, times * segment.count)
        index += segment.count


def _pattern_rows(run, prefix: str, times: int, pattern) -> list:
    """The runs of one period, each standing for the runs it repeats as (when their ops cost the
    same; else every run as it is)."""
    import re

    from ..passes.walk import join
    from .pattern import places
    runs = [run.graph.nodes[n] for n in pattern.drawn + pattern.skipped]
    period = len(pattern.drawn)
    base = join(prefix, runs[0].segment)
    own = re.compile(re.escape(base) + r"\.\d+(?:\.\.\d+)?(?=\.|$)")
    rows = {n.name: [(own.sub("", p, count=1), op, f, t) for p, op, f, t in _block_rows(run, prefix, times, n.name)]
            for n in runs}
    out = []
    for j in range(period):
        members = [rows[runs[k].name] for k in range(j, len(runs), period)]
        if any([r[:3] for r in m] != [r[:3] for r in members[0]] for m in members):
            return [row for n in runs for row in _block_rows(run, prefix, times, n.name)]
        label = f"{base}.[{places(runs, j, period)}]"
        for i, (suffix, op, f, _) in enumerate(members[0]):
            out.append((label + suffix, op, f, sum(m[i][3] for m in members)))
    return out
