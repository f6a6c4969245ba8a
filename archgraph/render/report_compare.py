"""The comparison at the top of the HTML report: the rows `compare` gives (each model's stacks,
then parameters, FLOPs and memory, a column per model), parameters by category, parameters per
layer (a heterogeneous stack shows its shape) and two models' structure side by side.

Everything here formats `passes.compare` summaries and `passes.explore.layer_sizes`; nothing is
computed again.  Tables wrap their text and never get wider than the page.
"""
from __future__ import annotations

import re
from html import escape

from ..passes.compare import ModelSummary
from .compare import NOTES, does_text, figure_rows, sizes_text
from .flops import flops_text
from .page import Styles
from .palette import category_color, counted

# a stack's colour in the per-layer chart, in the order of the model's stacks
STACK_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


DIFF_LEGEND = (("diff-changed", "changed: other values or tensor shapes"), ("diff-only", "only in this model"),
               ("diff-design", "a role the other model computes with other nodes"),
               ("diff-renamed", "the same node under another name"), ("diff-inside", "holds a difference"))


def comparison_html(rows: list[ModelSummary], layers: list[list[dict]], styles: Styles, changes: str = "") -> str:
    """The comparison; `changes` (archgraph diff -o: what changed, as HTML) goes above the two panes,
    whose differing nodes are then marked, with a legend."""
    return (f"<section class=\"comparison\"><h2>Comparison</h2>\n"
            f"<p class=\"note\">At {escape(sizes_text(rows))}. {escape(NOTES)}</p>\n"
            f"<h3>Stacks</h3>\n<div class=\"scroll\">{stacks_table(rows)}</div>\n"
            f"<h3>Parameters, FLOPs and memory</h3>\n<div class=\"scroll\">{figures_table(rows, styles)}</div>\n"
            f"<h3>Parameters by category</h3>\n{category_bars(rows, styles)}"
            f"<h3>Parameters per layer</h3>\n{layer_bars(rows, layers, styles)}"
            f"<h3>Side by side</h3>\n{changes}{_diff_legend() if changes else ''}{side_by_side(rows)}</section>\n")


def _diff_legend() -> str:
    """What the marks on the two panes' nodes mean (`archgraph diff A B -o`)."""
    items = "".join(f"<span class=\"mark\"><span class=\"swatch {look}\"></span>{escape(text)}</span>"
                    for look, text in DIFF_LEGEND)
    return f"<p class=\"legend diff-legend\">Marks, from the left model to the right: {items}</p>\n"


def breakable(path: str) -> str:
    """`path` as HTML that wraps only after a dot between two names (`model.<wbr>layers.<wbr>0,1,2,…,22`),
    never inside the indices (`5,11..29`)."""
    return re.sub(r"(?<!\.)\.(?!\.)", ".<wbr>", escape(path))


def stacks_table(rows: list[ModelSummary]) -> str:
    """A row per stack under its model's name and kind (a model without stacks says so)."""
    head = ("<tr><th>Model / stack</th><th class=\"number\">Layers</th><th class=\"number\">Params per layer</th>"
            "<th class=\"number\">Params</th><th class=\"number\">Forward FLOPs</th><th>What they do</th></tr>")
    body = []
    for r in rows:
        body.append(f"<tr class=\"model-row\"><th colspan=\"5\" scope=\"rowgroup\">{escape(r.name)}</th>"
                    f"<td>{escape(r.kind)}</td></tr>")
        for s, flops in zip(r.stacks, r.stack_flops):
            body.append(f"<tr class=\"stack\" data-model=\"{escape(r.name)}\" data-stack=\"{escape(s.path)}\">"
                        f"<td class=\"path\">{breakable(s.path)}</td><td class=\"number\">{s.layers:,}</td>"
                        f"<td class=\"number\">{s.per_layer:,}</td><td class=\"number\">{s.params:,}</td>"
                        f"<td class=\"number\">{escape(flops_text(flops))}</td><td>{escape(does_text(s))}</td></tr>")
        if not r.stacks:
            body.append("<tr class=\"stack\"><td colspan=\"6\">(no repeated layers)</td></tr>")
    return f"<table class=\"stacks\"><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>\n"


def figures_table(rows: list[ModelSummary], styles: Styles) -> str:
    """`compare`'s figures: a row per figure, a column per model, the cells as compare prints them."""
    head = "<tr><th>Figure</th>" + "".join(f"<th class=\"number\">{escape(r.name)}</th>" for r in rows) + "</tr>"
    body = []
    for label, cells in figure_rows(rows):
        if label is None:
            body.append(f"<tr class=\"rule\"><td colspan=\"{len(rows) + 1}\"></td></tr>")
            continue
        text = label if isinstance(label, str) else label.plain
        name = text.strip().lstrip("■ ")
        swatch = (f"<span class=\"swatch {styles(f'background:{category_color(name)}')}\"></span>"
                  if "■" in text else "")
        indent = " class=\"sub\"" if text.startswith("  ") else ""
        body.append(f"<tr data-figure=\"{escape(name)}\"><td{indent}>{swatch}{escape(name)}</td>" +
                    "".join(f"<td class=\"number\">{escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table class=\"figures\"><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>\n"


def category_bars(rows: list[ModelSummary], styles: Styles) -> str:
    """A bar per model split by category (each bar is its model's parameters), with a legend."""
    categories: list[str] = []
    out = ["<div class=\"bars categories\">"]
    for r in rows:
        parts = []
        for cat, n in r.by_category.items():
            if cat not in categories:
                categories.append(cat)
            share = 100 * n / r.params if r.params else 0
            parts.append(f"<span class=\"part {styles(f'width:{share:.3f}%;background:{category_color(cat)}')}\" "
                         f"title=\"{escape(cat)}: {n:,} ({share:.1f}%)\">"
                         f"{escape(cat) if share >= 8 else ''}</span>")
        out.append(f"<div class=\"bar-row\" data-model=\"{escape(r.name)}\"><span class=\"name\">{escape(r.name)}"
                   f"</span><span class=\"bar\">{''.join(parts)}</span><span class=\"total\">{counted(r.params)}"
                   f"</span></div>")
    legend = "".join(f"<span class=\"entry\"><span class=\"swatch {styles(f'background:{category_color(c)}')}\">"
                     f"</span>{escape(c)}</span>" for c in categories)
    out.append(f"<div class=\"legend\">{legend} <span class=\"hint\">each bar is its model's parameters; "
               f"hover a part for its count</span></div></div>\n")
    return "\n".join(out)


def layer_bars(rows: list[ModelSummary], layers: list[list[dict]], styles: Styles) -> str:
    """A bar per layer, as tall as its parameters (the model's largest layer: full height), coloured
    by stack; under it each stack's name and layer count."""
    out = ["<div class=\"bars layers\">"]
    for r, model_layers in zip(rows, layers):
        if not model_layers:
            out.append(f"<div class=\"layer-row\" data-model=\"{escape(r.name)}\"><span class=\"name\">"
                       f"{escape(r.name)}</span><span class=\"none\">no repeated layers</span></div>")
            continue
        top = max(layer["size"] for layer in model_layers) or 1
        bars = "".join(_layer(r, layer, top, styles) for layer in model_layers)
        keys = "".join(f"<span class=\"entry\"><span class=\"swatch "
                       f"{styles(f'background:{STACK_COLORS[i % len(STACK_COLORS)]}')}\"></span>{escape(s.path)} × {s.layers} · "
                       f"{counted(s.per_layer)} per layer</span>" for i, s in enumerate(r.stacks))
        out.append(f"<div class=\"layer-row\" data-model=\"{escape(r.name)}\"><span class=\"name\">{escape(r.name)}"
                   f"</span><span class=\"columns\">{bars}</span><span class=\"total\">max {counted(top)}</span>"
                   f"<span class=\"keys\">{keys}</span></div>")
    out.append("</div>\n")
    return "\n".join(out)


def _layer(r: ModelSummary, layer: dict, top: int, styles: Styles) -> str:
    title = f"{r.stacks[layer['stack']].base}.{layer['index']}: {layer['size']:,} params"
    if layer["active"] != layer["size"]:
        title += f", {layer['active']:,} active"
    color = STACK_COLORS[layer["stack"] % len(STACK_COLORS)]
    look = styles(f"height:{max(100 * layer['size'] / top, 2):.2f}%;background:{color}")
    return (f"<span class=\"layer {look}\" "
            f"title=\"{escape(title)}\"></span>")


def side_by_side(rows: list[ModelSummary]) -> str:
    """Two panes, each an explorer of the model its menu picks (the first two at first)."""
    panes = []
    for pick in (0, 1):
        options = "".join(f"<option value=\"{i}\"{' selected' if i == pick else ''}>{escape(r.name)}</option>"
                          for i, r in enumerate(rows))
        panes.append(f"<div class=\"pane\"><label>model <select aria-label=\"model of pane {pick + 1}\">{options}"
                     f"</select></label><div class=\"explorer-pane\"></div></div>")
    return f"<div class=\"side-by-side\">{''.join(panes)}</div>\n"
