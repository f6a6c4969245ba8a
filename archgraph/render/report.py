"""The HTML report: one self-contained page (inline SVG, CSS and JS; nothing fetched).

`report_data(models)` assembles everything as data (columns and rows, so other
passes can add columns: FLOPs, memory); `report_html(data)` only formats it.
With several models a comparison table (one column per model) comes first, then the
models' sections, two abreast (one on a narrow screen), so charts keep their width.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from importlib import resources
from typing import Any, Literal

from ..graph import Graph, Model, OpNode
from ..passes.params import ParamReport, call_totals, count_params, graph_totals, node_tensors
from .chart import chart_image, param_distribution
from .diagram import DiagramOptions, diagram_image
from .palette import category_color, human


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
    diagram_svg: str
    chart_svg: str


@dataclass
class ReportData:
    title: str
    columns: list[Column]                 # of every section's parameter table
    sections: list[Section]
    comparison_columns: list[Column] = field(default_factory=list)
    comparison: list[dict[str, Any]] = field(default_factory=list)  # one row per model


TABLE_COLUMNS = [Column("node", "Node"), Column("op", "Op"), Column("tensors", "Tensors"),
                 Column("params", "Params (one)", "number"), Column("total", "Params (all)", "number"),
                 Column("share", "Share %", "number"), Column("category", "Category")]


def report_data(models: list[Model], options: DiagramOptions = DiagramOptions()) -> ReportData:
    """Everything the report shows, as data: diagram and chart SVG, table rows, the comparison."""
    sections, comparison = [], []
    categories: list[str] = []
    for model in models:
        params = count_params(model)
        totals = {"total": params.totals.total, "trainable": params.totals.trainable,
                  "non_trainable": params.totals.non_trainable, "tied": params.totals.tied,
                  "buffers": params.totals.buffers}
        diagram = diagram_image(model, options, "svg", params=params).decode("utf-8")
        chart = chart_image(param_distribution(params), "svg").decode("utf-8")
        sections.append(Section(model.name, model.description, totals, table_rows(params), diagram, chart))
        by_cat = {c: n for c, n in params.totals.by_category.items()}
        categories += [c for c in sorted(by_cat, key=lambda c: -by_cat[c]) if c not in categories]
        comparison.append({"model": model.name, **totals, **{f"cat:{c}": n for c, n in by_cat.items()}})
    columns = [Column("model", "Model"), Column("total", "Total", "number"),
               Column("trainable", "Trainable", "number"), Column("tied", "Tied or shared", "number"),
               Column("buffers", "Buffers", "number")]
    columns += [Column(f"cat:{c}", c, "number") for c in categories]
    for row in comparison:
        for c in categories:
            row.setdefault(f"cat:{c}", 0)
    title = "archgraph report: " + ", ".join(m.name for m in models)
    return ReportData(title, list(TABLE_COLUMNS), sections, columns, comparison)


def table_rows(report: ParamReport) -> list[Row]:
    """The parameter table as rows: blocks once (× N), their nodes nested under them."""
    rows: list[Row] = []
    _rows(rows, report.model.graph, report, "", 0, 1)
    return rows


def _rows(rows: list[Row], graph: Graph, report: ParamReport, parent: str, depth: int, times: int) -> None:
    total = report.total or 1
    for name, node in graph.nodes.items():
        row_id = f"{parent}/{name}" if parent else name
        if isinstance(node, OpNode):
            tensors = node_tensors(node, report.model)
            new = sum(t.count for t in tensors if not t.buffer and t.tied_to is None)
            text = "; ".join((f"{t.name} " if t.name else "") + f"[{', '.join(map(str, t.shape))}]"
                             + (f" = {t.tied_to}" if t.tied_to else "")
                             + (" (buffer)" if t.buffer else "") for t in tensors)
            cells = {"node": name, "op": node.op.op_name, "tensors": text, "params": new,
                     "total": new * times, "share": 100 * new * times / total,
                     "category": node.category if node.op.params() else ""}
            rows.append(Row(row_id, parent, depth, False, cells))
            continue
        per = graph_totals(node.body, report.cache)
        all_reps = call_totals(node, per).total
        label = name + (f" × {node.repeat}" if node.repeat > 1 or node.indexed else "") + \
            (" shared" if node.shared else "")
        cells = {"node": label, "op": node.block, "tensors": "", "params": per.total,
                 "total": all_reps * times, "share": 100 * all_reps * times / total, "category": ""}
        rows.append(Row(row_id, parent, depth, True, cells))
        _rows(rows, node.body, report, row_id, depth + 1, times * (1 if node.shared else node.repeat))


# -- HTML ------------------------------------------------------------------------------
def report_html(data: ReportData) -> str:
    """The page: inline CSS and JS, every figure an inline SVG."""
    asset = resources.files(__package__)
    css = asset.joinpath("report.css").read_text("utf-8")
    js = asset.joinpath("report.js").read_text("utf-8")
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
             f"<link rel=\"icon\" href=\"data:,\">\n<title>{escape(data.title)}</title>\n"
             f"<style>\n{css}</style>\n</head>\n<body>\n<h1>{escape(data.title)}</h1>\n"]
    if len(data.sections) > 1:
        links = " · ".join(f"<a href=\"#m{i}\">{escape(s.name)}</a>" for i, s in enumerate(data.sections))
        parts.append(f"<nav class=\"index\">{links}</nav>\n")
        parts.append("<section class=\"comparison\"><h2>Comparison</h2>\n")
        parts.append(_comparison(data))
        parts.append("</section>\n")
    parts.append(f"<div class=\"models\" style=\"--models: {len(data.sections)}\">\n")
    for i, section in enumerate(data.sections):
        parts.append(_section(data, section, f"m{i}"))
    parts.append(f"</div>\n<script>\n{js}</script>\n</body>\n</html>\n")
    return "".join(parts)


def _section(data: ReportData, s: Section, key: str) -> str:
    t = s.totals
    facts = [("Total parameters", f"{t['total']:,} ({human(t['total'])})"), ("Trainable", f"{t['trainable']:,}"),
             ("Non-trainable", f"{t['non_trainable']:,}")]
    if t["tied"]:
        facts.append(("Tied or shared (counted once)", f"{t['tied']:,}"))
    if t["buffers"]:
        facts.append(("Buffers (not parameters)", f"{t['buffers']:,}"))
    dl = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return (f"<section class=\"model\" id=\"{key}\">\n<h2>{escape(s.name)}</h2>\n"
            f"<p class=\"description\">{escape(s.description)}</p>\n<dl class=\"totals\">{dl}</dl>\n"
            f"<h3>Diagram</h3>\n<div class=\"figure diagram\">{_inline_svg(s.diagram_svg, key + 'd')}</div>\n"
            f"<h3>Parameter distribution</h3>\n<div class=\"figure chart\">{_inline_svg(s.chart_svg, key + 'c')}"
            f"</div>\n<h3>Parameters</h3>\n<div class=\"tools\"><button type=\"button\" data-action=\"expand\">"
            f"expand all</button> <button type=\"button\" data-action=\"collapse\">collapse all</button></div>\n"
            f"<div class=\"scroll\">{_table(data.columns, [(r, r.cells) for r in s.rows], 'params')}</div>\n"
            f"</section>\n")


def _comparison(data: ReportData) -> str:
    """One column per model, one row per figure (totals, then each category with its colour)."""
    models = [Column(f"m{i}", row["model"], "number") for i, row in enumerate(data.comparison)]
    rows = []
    for column in data.comparison_columns[1:]:
        cells = {"figure": column.title, **{m.key: row.get(column.key, 0) for m, row in zip(models, data.comparison)}}
        rows.append((Row(column.key, "", 0, False, cells), cells))
    return _table([Column("figure", "Parameters"), *models], rows, "comparison")


def _table(columns: list[Column], rows: list[tuple[Row | None, dict[str, Any]]], kind: str) -> str:
    head = "".join(f"<th class=\"{c.kind}\" data-kind=\"{c.kind}\" title=\"sort by {escape(c.title)}\">"
                   f"{escape(c.title)}</th>" for c in columns)
    body = []
    for row, cells in rows:
        attrs = ""
        if row is not None:
            attrs = (f" data-id=\"{escape(row.id)}\" data-parent=\"{escape(row.parent)}\""
                     f" class=\"{'block' if row.block else 'op'}\" style=\"--depth: {row.depth}\"")
        tds = [_cell(c, cells.get(c.key), row, i == 0) for i, c in enumerate(columns)]
        body.append(f"<tr{attrs}>{''.join(tds)}</tr>")
    return (f"<table class=\"{kind}\"><thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) +
            "\n</tbody></table>\n")


def _cell(column: Column, value: Any, row: Row | None, first: bool) -> str:
    if column.kind == "number":
        number = value if isinstance(value, (int, float)) else 0
        text = f"{number:.2f}" if isinstance(number, float) else f"{number:,}"
        return f"<td class=\"number\" data-value=\"{number}\">{text}</td>"
    text = escape("" if value is None else str(value))
    if (column.key == "category" or (row is not None and row.id.startswith("cat:") and first)) and text:
        text = f"<span class=\"swatch\" style=\"background:{category_color(str(value))}\"></span>{text}"
    if first and row is not None and row.block:
        text = f"<button type=\"button\" class=\"toggle\" aria-expanded=\"true\">▾</button>{text}"
    return f"<td data-value=\"{escape('' if value is None else str(value))}\">{text}</td>"


_PROLOG = re.compile(r"^.*?(?=<svg[\s>])", re.S)
_ID = re.compile(r"""(\bid=")|(url\(#)|(href="#)""")


def _inline_svg(svg: str, prefix: str) -> str:
    """An SVG document as an element of the page: no XML prolog, ids made unique to this figure."""
    body = _PROLOG.sub("", svg, count=1)
    return _ID.sub(lambda m: m.group(0) + prefix + "-", body)
