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
from .labels import ACTIVE, ACTIVE_MEANS, REUSES, SHARED, SHARED_SHOWN, TRAINING_PER_TOKEN, shared_kinds, shared_text
from ..passes.kinds import kinds_of
from .pattern import Pattern, alike, call_inputs, places, repeating, run_kinds, values_text
from .sheet import Alt, Col, Sheet


def num(n: int) -> str:
    return f"{n:,}"


def human(n: int) -> str:
    for unit, size in (("T", 10 ** 12), ("B", 10 ** 9), ("M", 10 ** 6), ("K", 10 ** 3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return str(n)


def _tensor_text(rows: list[TensorRow], sep: str = ", ") -> str:
    parts = []
    for r in rows:
        text = (f"{r.name} " if r.name else "") + f"[{', '.join(map(str, r.shape))}]"  # '': named by its node
        if r.tied_to:
            text += f" = {r.tied_to}"
        if r.buffer:
            text += f" (buffer, {r.dtype})"
        parts.append(text)
    return sep.join(parts)


def _shapes_text(rows: list[TensorRow]) -> str:
    """The tensors' shapes alone, `768×2304 2304`: what a narrow table keeps of them."""
    return " ".join("×".join(map(str, r.shape)) + (" (buffer)" if r.buffer else "") for r in rows)


def tensors_cell(rows: list[TensorRow]) -> Alt:
    """A node's tensors, on one line, one per line, or as their shapes alone (see Sheet)."""
    one = _tensor_text(rows)
    return Alt(one, _tensor_text(rows, "\n"), _shapes_text(rows)) if len(rows) > 1 else Alt(one, one, _shapes_text(rows))


def params_table(report: ParamReport) -> Group:
    model = report.model
    sheet = Sheet(f"{model.name}: parameters", [Col("Node"), Col("Op"), Col("Tensors"), Col("Params", "number"),
                                                 Col("Category")],
                  shrink=["Tensors", "Tensors", "Category", "Tensors"], wider="a wider terminal or --json shows")
    _param_rows(sheet, model.graph, model, report.cache, 0)
    parts = [sheet, totals_table(report)] + ([shared_lines(report)] if report.totals.tied else [])
    return Group(*parts, category_table(report))


def _param_rows(sheet: Sheet, graph: Graph, model, cache: dict, depth: int, args: dict | None = None,
                prefix: str = "") -> None:
    """`args`: {node path under `prefix`: {hyperparameter: value in each kind}} of a schedule whose
    kinds differ only in those (its Op cell lists them: `dilation 1, 2, 4 .. 128`)."""
    pad = "  " * depth
    patterns, folded = repeating(graph), alike(graph)
    skipped = {n for p in patterns.values() for n in p.drawn[1:] + p.skipped} | {n for n, v in folded.items() if v is None}
    for name, node in graph.nodes.items():
        if name in skipped:  # folded into the first run
            continue
        if folded.get(name):  # kinds that differ only in arguments: one row, the arguments' values listed
            _kinds_rows(sheet, *folded[name], model, cache, depth)
            continue
        if isinstance(node, OpNode):
            rows = node_tensors(node, model)
            new = sum(r.count for r in rows if not r.buffer and not r.tied_to)
            params = num(new) if new else ("tied" if node.ties else "—")
            cat = (node.category + ("" if node.trainable else " (frozen)")) if node.op.params() else ""
            differ = (args or {}).get(prefix + name, {})
            op = node.op.op_name + "".join(f"\n{k} {values_text(v)}" for k, v in differ.items())
            sheet.add_row(pad + name, op, tensors_cell(rows) if rows else "", params, cat)
            continue
        if name in patterns:
            _pattern_rows(sheet, graph, patterns[name], model, cache, depth)
            continue
        body = graph_totals(node.body, cache)
        per, total = body.total, call_totals(node, body).total
        _block_row(sheet, pad + node.label, node, total, per, node.repeat)
        _param_rows(sheet, node.body, model, cache, depth + 1, args, f"{prefix}{name}.")


def _block_row(sheet: Sheet, label: str, node, total: int, per: int, times: int) -> None:
    suffix = f"  × {times}" if node.indexed or times > 1 else ""
    shared = " shared" if node.shared else ""
    count = num(total) if times == 1 or node.shared else f"{num(total)}\n({times} × {num(per)})"
    sheet.add_row(Text(label + suffix + shared, style="bold"), Text(node.block, style="bold"), "",
                  Text(count, style="bold"), "")


def _pattern_rows(sheet: Sheet, graph: Graph, pattern: Pattern, model, cache: dict, depth: int) -> None:
    """A schedule whose runs repeat with a period, folded as a diagram draws it:
    `blocks.0..11  6 × [mlp, moe]`, then each run of one period with how often it comes."""
    pad = "  " * depth
    runs = [graph.nodes[n] for n in pattern.drawn + pattern.skipped]
    period = len(pattern.drawn)
    totals = [call_totals(n, graph_totals(n.body, cache)).total for n in runs]
    first, last = pattern.start, pattern.start + pattern.layers - 1
    whole, rest = divmod(pattern.layers, pattern.period)
    times = f"{whole} × " + ("[" if period > 1 else "") + ", ".join(run_kinds(runs[:period])) \
        + ("]" if period > 1 else "") + (f" + {rest}" if rest else "")
    blocks = sorted({n.block for n in runs}, key=[n.block for n in runs].index)
    sheet.add_row(Text(f"{pad}{pattern.segment}.{first}..{last}  {times}", style="bold"),
                  Text(", ".join(blocks), style="bold"), "", Text(num(sum(totals)), style="bold"), "")
    for j, node in enumerate(runs[:period]):
        mine = range(j, len(runs), period)
        count = sum(runs[k].repeat for k in mine)
        body = graph_totals(node.body, cache)
        where = places(runs, j, period)
        _block_row(sheet, f"{pad}  {node.segment}.{where}" if node.segment else f"{pad}  {where}", node, sum(totals[k] for k in mine), body.total, count)
        _param_rows(sheet, node.body, model, cache, depth + 2)


def _kinds_rows(sheet: Sheet, runs: list, args: dict, model, cache: dict, depth: int) -> None:
    """`layers.0..15  × 16` (8 kinds differing in dilation, padding), then one kind's nodes, each
    argument that differs with its value in each kind."""
    pad = "  " * depth
    layers = sum(r.repeat for r in runs)
    first, last = runs[0].start, runs[0].start + layers - 1
    per = graph_totals(runs[0].body, cache).total
    total = sum(call_totals(r, graph_totals(r.body, cache)).total for r in runs)
    keys = sorted({k for values in args.values() for k in values})
    label = f"{pad}{runs[0].segment}.{first}..{last}  × {layers}"
    sheet.add_row(Text(f"{label}\n{pad}  ({len(kinds_of(runs))} kinds differing in {', '.join(keys)})", style="bold"),
                  Text(runs[0].block, style="bold"), "", Text(f"{num(total)}\n({layers} × {num(per)})",
                                                              style="bold"), "")
    _param_rows(sheet, runs[0].body, model, cache, depth + 1, args)


def totals_table(report: ParamReport) -> Table:
    t = report.totals
    table = Table(show_header=False, box=None, padding=(0, 2))
    table.add_column()
    table.add_column(justify="right")
    table.add_column()
    table.add_row("Total params", num(t.total), counted(t.total))
    table.add_row("Trainable params", num(t.trainable), "")
    table.add_row("Non-trainable params", num(t.non_trainable), "")
    if t.idle:
        table.add_row("Active params (one token)", num(t.active), counted(t.active))
    if t.tied:
        shared = report.shared()
        table.add_row(SHARED, num(sum(s.params for s in shared)), shared_kinds(shared))
        table.add_row(REUSES, num(t.tied), f"{shared[0].uses - 1} × {num(shared[0].params)}" if len(shared) == 1 else "")
    if t.buffers:
        table.add_row("Buffers (not parameters)", num(t.buffers), ", ".join(sorted(d for d, n in t.buffers_by_dtype.items() if n)))
    return table


def shared_lines(report: ParamReport) -> Text:
    """The tensors and shared blocks used more than once, each counted once, and how often each is
    used, one a line (wrapped between words, never cut), after the totals."""
    shared = report.shared() if report.totals.tied else []
    lines = [f"  shared: {shared_text(s)}" for s in shared[:SHARED_SHOWN]]
    if len(shared) > SHARED_SHOWN:
        lines.append(f"  … {len(shared) - SHARED_SHOWN} more (--json lists each under 'shared')")
    return Text("\n".join(lines))


def category_table(report: ParamReport) -> Table:
    total = report.totals.total or 1
    table = Table(title="by category", title_justify="left")
    table.add_column("Category")
    table.add_column("Params", justify="right")
    table.add_column("Share", justify="right")
    tied = report.totals.tied_by_category
    if tied:
        table.add_column(REUSES, justify="right")
    for cat, n in sorted(report.totals.by_category.items(), key=lambda kv: -kv[1]):
        table.add_row(cat, num(n), f"{100 * n / total:.1f}%", *([num(tied[cat]) if tied[cat] else ""]
                                                                  if tied else []))
    return table


def shapes_table(report: ShapeReport) -> Sheet:
    """Every node's output shapes; the inputs each node reads go first when the terminal is narrow."""
    table = Sheet(f"{report.model.name}: output shapes", [Col("Node"), Col("Op"), Col("Inputs", "text"),
                                                          Col("Output shape")], shrink=["Inputs"],
                  wider="a wider terminal or --json shows")
    for name, shape in report.inputs.items():
        table.add_row(name, "input", "", fmt_shape(shape))
    _shape_rows(table, report.run, 0)
    return table


def _shape_rows(table: Sheet, run: Run, depth: int) -> None:
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
                          ", ".join(call_inputs(node, run.input_values(node))), "")
            _shape_rows(table, rep, depth + 1)
            first += count


def counted(n: int) -> str:
    """A parameter count shortened, with its unit as FLOPs and bytes have theirs: `124.44 M params`."""
    return f"{human(n)} params"


def zoo_table(rows: list[tuple[str, str, int | None, str]]) -> Sheet:
    """One line per built-in model: in a narrow terminal its description up to the first comma
    or parenthesis, its parameters in units."""
    sheet = Sheet("built-in models", [Col("Name"), Col("Params", "number"), Col("≈", "number"),
                                      Col("Description", "text")], shrink=["Description", "≈", "Params"])
    for name, desc, total, error in rows:
        if total is None:
            sheet.add_row(name, "error", "", error)
        else:
            sheet.add_row(name, Alt(num(total), counted(total)), counted(total), Alt(desc, _headline(desc)))
    return sheet


def _headline(text: str) -> str:
    """`GPT-2 small decoder (Radford et al. 2019), 12 layers` -> `GPT-2 small decoder`."""
    import re
    return re.split(r",| \(", text, maxsplit=1)[0]



SWEEP_COLUMNS = {"params": "Params", "non_embedding_params": "Non-embedding", "active_non_embedding_params": "Active",
                 "weights_bf16_bytes": "bf16 weights", "weights_fp32_bytes": "fp32 weights",
                 "adam_training_bytes": "Adam training", "training_flops_per_token": TRAINING_PER_TOKEN}
# each mention shortens a column (to units: 1.48 B params, 2.76 GiB) or, the second time, drops it
SWEEP_SHRINK = ["fp32 weights", "bf16 weights", "Adam training", TRAINING_PER_TOKEN, "Non-embedding", "Active",
                "fp32 weights", "bf16 weights", "Non-embedding", "Adam training", TRAINING_PER_TOKEN, "Params"]


def sweep_table(model: str, rows: list[dict]) -> Group:
    """One row per point of a sweep: its values, then each metric exact (in units when the terminal
    is narrow); a refused point says why in the last column.  The active parameters have a column
    where they are not the non-embedding ones (a mixture of experts); a line under the table says
    what the training FLOPs per token count."""
    from .flops import flops_text
    from .memory import binary
    short = {"params": counted, "non_embedding_params": counted, "active_non_embedding_params": counted,
             "training_flops_per_token": flops_text}
    moe = any(r["active_non_embedding_params"] != r["non_embedding_params"] for r in rows)
    keys = [k for k in rows[0] if k != "refused" and (moe or k != "active_non_embedding_params")]
    refused = any(r.get("refused") for r in rows)
    cols = [Col(SWEEP_COLUMNS.get(k, k), "number") for k in keys] + ([Col("Refused", "text")] if refused else [])
    sheet = Sheet(f"{model}: sweep", cols, shrink=[h for h in SWEEP_SHRINK if h in {c.header for c in cols}])
    for r in rows:
        cells: list = []
        for k in keys:
            v = r[k]
            if v is None:
                cells.append("—")
            elif k in SWEEP_COLUMNS:
                cells.append(Alt(num(v), short.get(k, binary)(v)))
            else:
                cells.append(num(v))
        sheet.add_row(*cells, *([r.get("refused") or ""] if refused else []))
    flops = " ".join(TRAINING_PER_TOKEN.split("\n")[:2])
    return Group(sheet, Text(f"{flops}: {ACTIVE} (Kaplan et al.'s 6N), {ACTIVE_MEANS}", style="dim"))
