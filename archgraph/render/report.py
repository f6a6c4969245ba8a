"""The HTML report: one self-contained page (inline CSS, JavaScript and data; nothing fetched).

`report_data(models)` gathers what the page shows as data: for each model its parameter table,
the tree an explorer draws (`passes.explore`) and its `compare` summary (`passes.compare`);
`report_html(data)` only formats it.  With several models the comparison comes first (the
figures `compare` gives, parameters by category and per layer, two models side by side), then
the models' sections one after another at full width.  The browser draws the diagrams with
Graphviz in WebAssembly (viz.js) and pans and zooms them with d3, both vendored in `vendor/`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from importlib import resources
from typing import Any, Literal

from ..graph import BlockNode, Graph, Model, OpNode
from ..machine import binary
from ..names import script_json
from ..passes.compare import ModelSummary, summarize
from ..passes.diff import diff_marks
from ..passes.explore import explore, layer_sizes
from ..passes.params import ParamReport, call_totals, count_params, graph_totals, node_tensors
from .diagram import HIDDEN_HPARAMS
from .labels import REUSES, SHARED, SHARED_SHOWN, shared_text
from .page import Styles, content_security_policy
from .palette import CATEGORY_COLORS, SHARE_BINS, category_color, counted
from ..passes.kinds import kinds_of
from .pattern import alike, differing, kinds_text, repeating, values_text
from .report_compare import breakable, category_bars, comparison_html

VENDORED = ("d3.min.js", "viz-global.js")  # in the order the page loads them
OWN_SCRIPTS = ("report.js", "explorer_dot.js", "explorer.js")  # the tables; the DOT; the explorer


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    kind: Literal["text", "number"] = "text"


@dataclass
class Row:
    """A table row: `cells[column.key]`; a block row has children (rows whose `parent` is its id)."""

    id: str
    parent: str
    depth: int
    block: bool
    cells: dict[str, Any]


@dataclass
class Section:
    name: str
    description: str
    totals: dict[str, Any]
    rows: list[Row]
    tree: dict[str, Any]                  # passes.explore: what the explorer draws
    summary: ModelSummary
    layers: list[dict[str, Any]] = field(default_factory=list)  # passes.explore.layer_sizes


@dataclass
class ReportData:
    title: str
    columns: list[Column]                 # of every section's parameter table
    sections: list[Section]
    extra: list[str] = field(default_factory=list)  # sections other commands add, as HTML (plan --search)
    diffs: dict[str, Any] = field(default_factory=dict)  # "i-j" -> passes.diff's marks of models i and j
    changes: str = ""                     # archgraph diff -o: what changed, as HTML (render/report_diff.py)


TABLE_COLUMNS = [Column("node", "Node"), Column("op", "Op"), Column("tensors", "Tensors"),
                 Column("params", "Params (one)", "number"), Column("total", "Params (all)", "number"),
                 Column("share", "Share %", "number"), Column("category", "Category")]


def report_data(models: list[Model], diff: Any = None) -> ReportData:
    """Everything the report shows, as data: each model's table rows, tree and summary, measured at
    the sizes `compare` uses (B=1, S=512 unless a model binds them with --set)."""
    sections = []
    for model in models:
        params = count_params(model)
        summary = summarize(model.name, dict(model.bindings), load=lambda *_: model, probe=model)
        totals = {"total": params.totals.total, "trainable": params.totals.trainable,
                  "non_trainable": params.totals.non_trainable, "tied": params.totals.tied,
                  "buffers": params.totals.buffers, "buffer_bytes": params.totals.buffer_bytes,
                  "active": params.totals.active, "shared": params.shared()}
        tree = explore(model, summary.bindings, params, summary.stacks)
        _mark(model.graph, tree["graph"], {id(c) for stack in summary.stacks for c in stack.calls})
        sections.append(Section(model.name, model.description, totals, table_rows(params), tree, summary,
                                layer_sizes(summary.stacks)))
    title = "archgraph report: " + ", ".join(m.name for m in models)
    data = ReportData(title, list(TABLE_COLUMNS), sections)
    if diff is not None:  # `archgraph diff A B -o`: the two models' differing nodes, marked in the side-by-side panes
        from .report_diff import diff_html
        data.diffs["0-1"] = diff_marks(diff)
        data.changes = diff_html(diff)
        data.title = f"archgraph diff: {models[0].name} -> {models[1].name}"
    return data


def _mark(graph: Graph, tree: dict[str, Any], layers: set[int]) -> None:
    """Marks what the explorer draws as a diagram does: a call that is a stack's layers (`layer`: it
    stays closed at first, as T5's encoder.block.0 beside encoder.block × 5), and the first run of a
    layer schedule whose runs repeat (`pattern`, Jamba's, Gemma 3's: the runs one period draws and
    those it stands for)."""
    nodes = {n["name"]: n for n in tree["nodes"]}
    for first, p in repeating(graph).items():
        runs = [graph.nodes[n] for n in p.drawn + p.skipped]
        nodes[first]["pattern"] = {"label": p.label, "drawn": list(p.drawn), "skipped": list(p.skipped),
                                   "segment": p.segment, "start": p.start, "layers": p.layers, "period": p.period,
                                   "note": f"the {p.period} layers of {p.segment}.{p.start}..{p.start + p.period - 1} repeat",
                                   "differ": _differ([graph.nodes[n] for n in p.drawn]), "periodic": True,
                                   "kinds": kinds_text(runs), "block": _blocks(runs)}
    for first, (runs, args) in ((k, v) for k, v in alike(graph).items() if v and "pattern" not in nodes[k]):
        # kinds that differ only in arguments, in no period (GPT-2's attention scaled by 1 / (i + 1)):
        # one box, and one layer standing for all of them when opened
        seg, start, count, kinds = runs[0].segment, runs[0].start, sum(r.repeat for r in runs), len(kinds_of(runs))
        nodes[first]["pattern"] = {"label": f"{seg}.{start}..{start + count - 1}: {kinds} kinds alike but for "
                                            f"{', '.join(sorted({k for a in args.values() for k in a}))}, drawn as "
                                            f"{runs[0].label}", "drawn": [first], "skipped": [r.name for r in runs[1:]],
                                   "segment": seg, "start": start, "layers": count, "period": runs[0].repeat,
                                   "note": f"{kinds} kinds alike but for", "differ": _differ(runs), "periodic": False,
                                   "kinds": kinds_text(runs), "block": _blocks(runs)}
    for name, node in graph.nodes.items():
        if isinstance(node, BlockNode):
            nodes[name]["layer"] = id(node) in layers
            if nodes[name]["body"]:
                _mark(node.body, nodes[name]["body"], layers)


def _blocks(runs: list[BlockNode]) -> str:
    """The blocks a schedule's runs call, each once: `encoder_layer`, `mamba_layer, attention_layer`."""
    return ", ".join(dict.fromkeys(r.block for r in runs))


def _differ(runs: list[BlockNode]) -> dict[str, str]:
    """What tells a schedule's kinds apart when only arguments do: {argument: its values}
    (`dilation`: `1, 2, 4, ..., 128`), as the closed schedule's box says."""
    found = differing(runs) or {}
    return {k: values_text(v) for args in found.values() for k, v in args.items()}


def table_rows(report: ParamReport) -> list[Row]:
    """The parameter table as rows: blocks once (× N), their nodes nested under them."""
    rows: list[Row] = []
    _rows(rows, report.model.graph, report, "", 0, 1)
    return rows


def _rows(rows: list[Row], graph: Graph, report: ParamReport, parent: str, depth: int, times: int,
          args: dict | None = None, prefix: str = "") -> None:
    """`args`: the arguments each node's kinds take when a schedule's kinds differ only in them
    ({path under `prefix`: {argument: values}}): one block row stands for the schedule."""
    total = report.total or 1
    folded = alike(graph)
    for name, node in graph.nodes.items():
        row_id = f"{parent}/{name}" if parent else name
        if name in folded and folded[name] is None:
            continue
        if isinstance(node, OpNode):
            tensors = node_tensors(node, report.model)
            new = sum(t.count for t in tensors if not t.buffer and t.tied_to is None)
            text = "; ".join((f"{t.name} " if t.name else "") + f"[{', '.join(map(str, t.shape))}]"
                             + (f" = {t.tied_to}" if t.tied_to else "")
                             + (f" (buffer, {t.dtype})" if t.buffer else "") for t in tensors)
            differ = (args or {}).get(prefix + name, {})
            op = node.op.op_name + "".join(f"; {k} {values_text(v)}" for k, v in differ.items())
            cells = {"node": name, "op": op, "tensors": text, "params": new,
                     "total": new * times, "share": 100 * new * times / total,
                     "category": node.category if node.op.params() else ""}
            rows.append(Row(row_id, parent, depth, False, cells))
            continue
        per = graph_totals(node.body, report.cache)
        if name in folded:  # a schedule of kinds that differ only in arguments: one row for all
            runs, kinds = folded[name]
            layers = sum(r.repeat for r in runs)
            all_reps = sum(call_totals(r, graph_totals(r.body, report.cache)).total for r in runs)
            label = f"{node.segment}.{node.start}..{node.start + layers - 1} × {layers}"
            cells = {"node": label, "op": f"{node.block} ({len(kinds_of(runs))} kinds)", "tensors": "",
                     "params": per.total, "total": all_reps * times, "share": 100 * all_reps * times / total,
                     "category": ""}
            rows.append(Row(row_id, parent, depth, True, cells))
            _rows(rows, node.body, report, row_id, depth + 1, times * layers, kinds)
            continue
        all_reps = call_totals(node, per).total
        label = node.label + (f" × {node.repeat}" if node.repeat > 1 or (node.indexed and not node.scheduled) else "") \
            + (" shared" if node.shared else "")  # a schedule's run by its layers (`layers.3`), not `layers#3`
        cells = {"node": label, "op": node.block, "tensors": "", "params": per.total,
                 "total": all_reps * times, "share": 100 * all_reps * times / total, "category": ""}
        rows.append(Row(row_id, parent, depth, True, cells))
        _rows(rows, node.body, report, row_id, depth + 1, times * (1 if node.shared else node.repeat), args,
              f"{prefix}{name}.")


# -- HTML ------------------------------------------------------------------------------
def page_data(data: ReportData) -> dict[str, Any]:
    """What the page's scripts read: each model's tree and the colours the figures share."""
    categories = sorted({n for s in data.sections for n in _categories(s.tree["graph"])})
    return {"models": [s.tree for s in data.sections], "diffs": data.diffs,
            "palette": {"bins": [list(b) for b in SHARE_BINS], "other": CATEGORY_COLORS["other"],
                        "categories": {c: category_color(c) for c in categories}, "hidden": sorted(HIDDEN_HPARAMS)}}


def _categories(graph: dict) -> set[str]:
    out = set()
    for node in graph["nodes"]:
        out.add(node["category"])
        if node["kind"] == "block" and node["body"]:
            out |= _categories(node["body"])
    return out


def report_html(data: ReportData) -> str:
    """The page: inline CSS, the vendored scripts, the data as JSON and the report's own script,
    under a Content-Security-Policy that runs only these (render/page.py)."""
    asset = resources.files(__package__)
    css = "\n" + asset.joinpath("report.css").read_text("utf-8")
    scripts = [asset.joinpath("vendor", name).read_text("utf-8") for name in VENDORED]
    scripts += [asset.joinpath(name).read_text("utf-8") for name in OWN_SCRIPTS]
    scripts = [f"\n{_script(script)}\n" for script in scripts]
    styles = Styles()
    body = []
    if len(data.sections) > 1:
        links = " · ".join(f"<a href=\"#m{i}\">{escape(s.name)}</a>" for i, s in enumerate(data.sections))
        body.append(f"<nav class=\"index\">{links}</nav>\n")
        body.append(comparison_html([s.summary for s in data.sections], [s.layers for s in data.sections], styles,
                                    changes=data.changes))
    for i, section in enumerate(data.sections):
        body.append(_section(data, section, i, styles))
    body += data.extra
    body.append(f"<script type=\"application/json\" id=\"archgraph-data\">{script_json(page_data(data))}</script>\n")
    body += [f"<script>{script}</script>\n" for script in scripts]
    looks = "\n" + styles.css()
    policy = content_security_policy(scripts, [css, looks])
    head = (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<link rel=\"icon\" href=\"data:,\">\n<title>{escape(data.title)}</title>\n"
            f"<style>{css}</style>\n<style>{looks}</style>\n</head>\n<body>\n<h1>{escape(data.title)}</h1>\n")
    return head + "".join(body) + "</body>\n</html>\n"


def _script(text: str) -> str:
    """Script text as the body of a <script> element (a `</script` inside would end it)."""
    return text.replace("</script", "<\\/script")


def _section(data: ReportData, s: Section, index: int, styles: Styles) -> str:
    t = s.totals
    facts = [("Total parameters", f"{t['total']:,} ({counted(t['total'])})"), ("Trainable", f"{t['trainable']:,}"),
             ("Non-trainable", f"{t['non_trainable']:,}")]
    if t["active"] != t["total"]:
        facts.append(("Active params (one token)", f"{t['active']:,}"))
    if t["tied"]:
        facts.append((SHARED, "; ".join(shared_text(x) for x in t["shared"][:SHARED_SHOWN])
                       + (f"; {len(t['shared']) - SHARED_SHOWN} more" if len(t["shared"]) > SHARED_SHOWN else "")))
        facts.append((REUSES, f"{t['tied']:,}"))
    if t["buffers"]:
        facts.append(("Buffers (not parameters)", f"{t['buffers']:,} ({binary(t['buffer_bytes'])} at their dtypes)"))
    sizes = ", ".join(f"{k}={v}" for k, v in s.tree["sizes"].items())
    dl = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return (f"<section class=\"model\" id=\"m{index}\">\n<h2>{escape(s.name)}</h2>\n"
            f"<p class=\"description\">{escape(s.description)}</p>\n<dl class=\"totals\">{dl}</dl>\n"
            f"<h3>Parameters by category</h3>\n{category_bars([s.summary], styles)}"
            f"<h3>Structure</h3>\n<p class=\"note\">Shapes, FLOPs and bytes at {escape(sizes)}.</p>\n"
            f"<div class=\"explorer\" data-model=\"{index}\"></div>\n"
            f"<h3>Parameters</h3>\n<div class=\"tools\"><button type=\"button\" data-action=\"expand\">"
            f"expand all</button> <button type=\"button\" data-action=\"collapse\">collapse all</button></div>\n"
            f"<div class=\"scroll\">{table(data.columns, [(r, r.cells) for r in s.rows], 'params', styles)}</div>\n"
            f"</section>\n")


def table(columns: list[Column], rows: list[tuple[Row | None, dict[str, Any]]], kind: str,
          styles: Styles | None = None) -> str:
    """A sortable table; `styles` takes the rows' looks (a block's depth, a category's swatch),
    needed only when rows have them."""
    head = "".join(f"<th class=\"{c.kind}\" data-kind=\"{c.kind}\" title=\"sort by {escape(c.title)}\">"
                   f"{escape(c.title)}</th>" for c in columns)
    body = []
    for row, cells in rows:
        attrs = ""
        if row is not None:
            attrs = (f" data-id=\"{escape(row.id)}\" data-parent=\"{escape(row.parent)}\""
                     f" class=\"{'block' if row.block else 'op'} {styles(f'--depth:{row.depth}')}\"")
        tds = [_cell(c, cells.get(c.key), row, i == 0, styles) for i, c in enumerate(columns)]
        body.append(f"<tr{attrs}>{''.join(tds)}</tr>")
    return (f"<table class=\"{kind}\"><thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) +
            "\n</tbody></table>\n")


def _cell(column: Column, value: Any, row: Row | None, first: bool, styles: Styles) -> str:
    if column.kind == "number":
        number = value if isinstance(value, (int, float)) else 0
        text = f"{number:.2f}" if isinstance(number, float) else f"{number:,}"
        return f"<td class=\"number\" data-value=\"{number}\">{text}</td>"
    text = escape("" if value is None else str(value))
    if column.key == "node":  # a path breaks after a dot between names, never inside one or before its '× 12'
        text = breakable(str(value or "")).replace(" × ", "\u00a0×\u00a0")
    if column.key == "category" and text:
        text = f"<span class=\"swatch {styles(f'background:{category_color(str(value))}')}\"></span>{text}"
    if first and row is not None and row.block:
        text = f"<button type=\"button\" class=\"toggle\" aria-expanded=\"true\">▾</button>{text}"
    return f"<td class=\"{column.key}\" data-value=\"{escape('' if value is None else str(value))}\">{text}</td>"
