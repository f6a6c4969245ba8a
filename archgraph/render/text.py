"""Human-readable tables (rich): parameters grouped by block, shapes, the zoo."""
from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..dims import fmt_shape
from ..graph import Graph, OpNode
from ..passes.params import ParamReport, TensorRow, call_totals, graph_totals, node_tensors
from ..passes.shapes import ShapeReport
from ..passes.walk import Run


def num(n: int) -> str:
    return f"{n:,}"


def human(n: int) -> str:
    for unit, size in (("T", 10 ** 12), ("B", 10 ** 9), ("M", 10 ** 6), ("K", 10 ** 3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return str(n)


def _tensor_text(rows: list[TensorRow]) -> str:
    parts = []
    for r in rows:
        text = (f"{r.name} " if r.name else "") + f"[{', '.join(map(str, r.shape))}]"  # '': named by its node
        if r.tied_to:
            text += f" = {r.tied_to}"
        if r.buffer:
            text += " (buffer)"
        parts.append(text)
    return ", ".join(parts) if len(parts) <= 2 else "\n".join(parts)


def params_table(report: ParamReport) -> Group:
    model = report.model
    table = Table(title=f"{model.name}: parameters", title_justify="left", show_lines=False)
    table.add_column("Node", no_wrap=True)
    table.add_column("Op")
    table.add_column("Tensors", no_wrap=True)
    table.add_column("Params", justify="right")
    table.add_column("Category")
    _param_rows(table, model.graph, model, report.cache, 0)
    return Group(table, totals_table(report), category_table(report))


def _param_rows(table: Table, graph: Graph, model, cache: dict, depth: int) -> None:
    pad = "  " * depth
    for name, node in graph.nodes.items():
        if isinstance(node, OpNode):
            rows = node_tensors(node, model)
            new = sum(r.count for r in rows if not r.buffer and not r.tied_to)
            params = num(new) if new else ("tied" if node.ties else "—")
            cat = (node.category + ("" if node.trainable else " (frozen)")) if node.op.params() else ""
            table.add_row(pad + name, node.op.op_name, _tensor_text(rows), params, cat)
            continue
        body = graph_totals(node.body, cache)
        per, total = body.total, call_totals(node, body).total
        times = f"  × {node.repeat}" if node.indexed or node.repeat > 1 else ""
        shared = " shared" if node.shared else ""
        count = num(total) if node.repeat == 1 or node.shared else f"{num(total)}\n({node.repeat} × {num(per)})"
        table.add_row(Text(pad + node.label + times + shared, style="bold"), Text(node.block, style="bold"),
                      "", Text(count, style="bold"), "")
        _param_rows(table, node.body, model, cache, depth + 1)


def totals_table(report: ParamReport) -> Table:
    t = report.totals
    table = Table(show_header=False, box=None, padding=(0, 2))
    table.add_column()
    table.add_column(justify="right")
    table.add_column()
    table.add_row("Total params", num(t.total), human(t.total))
    table.add_row("Trainable params", num(t.trainable), "")
    table.add_row("Non-trainable params", num(t.non_trainable), "")
    if t.idle:
        table.add_row("Active params (one token)", num(t.active), human(t.active))
    if t.tied:
        table.add_row("Tied or shared (counted once)", num(t.tied), "")
    if t.buffers:
        table.add_row("Buffers (not parameters)", num(t.buffers), "")
    return table


def category_table(report: ParamReport) -> Table:
    total = report.totals.total or 1
    table = Table(title="by category", title_justify="left")
    table.add_column("Category")
    table.add_column("Params", justify="right")
    table.add_column("Share", justify="right")
    tied = report.totals.tied_by_category
    if tied:
        table.add_column("Tied or shared (not counted)", justify="right")
    for cat, n in sorted(report.totals.by_category.items(), key=lambda kv: -kv[1]):
        table.add_row(cat, num(n), f"{100 * n / total:.1f}%", *([num(tied[cat]) if tied[cat] else ""]
                                                                  if tied else []))
    return table


def shapes_table(report: ShapeReport) -> Table:
    table = Table(title=f"{report.model.name}: output shapes", title_justify="left")
    table.add_column("Node")
    table.add_column("Op")
    table.add_column("Inputs")
    table.add_column("Output shape")
    for name, shape in report.inputs.items():
        table.add_row(name, "input", "", fmt_shape(shape))
    _shape_rows(table, report.run, 0)
    return table


def _shape_rows(table: Table, run: Run, depth: int) -> None:
    pad = "  " * depth
    for name, node in run.graph.nodes.items():
        value = run.nodes[name]
        if isinstance(node, OpNode):
            table.add_row(pad + name, node.op.op_name, ", ".join(map(str, node.inputs)),
                          "\n".join(fmt_shape(s) for s in value))
            continue
        first = 0
        for segment in value:
            count, rep = segment.count, segment.run
            base = node.segment or node.name
            label = base if not node.indexed else f"{base}.{node.start + first}"
            if count > 1:
                label = f"{base}.{node.start + first}..{node.start + first + count - 1}  × {count}"
            table.add_row(Text(pad + label, style="bold"), Text(node.block, style="bold"),
                          ", ".join(map(str, node.inputs)), "")
            _shape_rows(table, rep, depth + 1)
            first += count


def zoo_table(rows: list[tuple[str, str, int | None, str]]) -> Table:
    table = Table(title="built-in models", title_justify="left")
    table.add_column("Name")
    table.add_column("Params", justify="right")
    table.add_column("")
    table.add_column("Description")
    for name, desc, total, error in rows:
        if total is None:
            table.add_row(name, "error", "", error)
        else:
            table.add_row(name, num(total), human(total), desc)
    return table
