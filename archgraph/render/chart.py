"""Parameter-distribution charts with matplotlib: by category, by block, and a sunburst.

`param_distribution(report)` gathers the figures (plain data); `chart_image`
draws them as PNG or SVG.  Only matplotlib's Agg canvas is used (no pyplot, no
display), and SVG output is deterministic (fixed hash salt, no date).

>>> from archgraph import load
>>> d = param_distribution(load("gpt2").params())
>>> [(p.label, p.total) for p in d.parts][:3]
[('transformer.wte', 38597376), ('transformer.wpe', 786432), ('transformer.h × 12', 85054464)]
"""
from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass

from ..graph import BlockNode, Graph, join
from ..passes.params import ParamReport, call_totals, graph_totals, op_totals
from ..errors import shortened
from .palette import CHART_LABEL, CHART_RC, category_color, counted
from .pattern import call_name

CHART_FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class Part:
    """A top-level node or block and its parameters by category (tied tensors not counted)."""

    label: str              # `transformer.h × 12`
    path: str
    total: int
    by_category: dict[str, int]


@dataclass(frozen=True)
class Distribution:
    model: str
    total: int
    categories: list[tuple[str, int]]  # largest first, zero-count categories left out
    parts: list[Part]                  # in graph order, parts without parameters left out


def param_distribution(report: ParamReport, max_parts: int = 12) -> Distribution:
    """The model's parameters by category and by top-level part.

    A single block holding every parameter is opened, so the parts say something;
    beyond `max_parts` parts the smallest are summed as one "other" part.
    """
    graph, prefix = report.model.graph, ""
    parts = _parts(graph, prefix, report.cache)
    while len(parts) == 1:
        node = _only_block(graph, parts[0].path, prefix)
        if node is None or node.repeat != 1:
            break
        graph, prefix = node.body, parts[0].path
        parts = _parts(graph, prefix, report.cache)
    if len(parts) > max_parts:
        keep = sorted(sorted(parts, key=lambda p: -p.total)[:max_parts - 1], key=parts.index)
        rest = [p for p in parts if p not in keep]
        merged: Counter = Counter()
        for p in rest:
            merged.update(p.by_category)
        parts = keep + [Part(f"{len(rest)} others", "", sum(p.total for p in rest), dict(merged.most_common()))]
    categories = sorted(((c, n) for c, n in report.totals.by_category.items() if n), key=lambda kv: (-kv[1], kv[0]))
    return Distribution(report.model.name, report.total, categories, parts)


def _parts(graph: Graph, prefix: str, cache: dict) -> list[Part]:
    parts = []
    for name, node in graph.nodes.items():
        if isinstance(node, BlockNode):
            totals = call_totals(node, graph_totals(node.body, cache))
            times = f" × {node.repeat}" if node.repeat > 1 else ""
            label = f"{shortened(call_name(node, name), CHART_LABEL)}{times}{' shared' if node.shared else ''}"
        else:
            totals, label = op_totals(node), shortened(name, CHART_LABEL)
        if totals.total:
            by_cat = {c: n for c, n in sorted(totals.by_category.items(), key=lambda kv: (-kv[1], kv[0])) if n}
            parts.append(Part(label, join(prefix, name), totals.total, by_cat))
    return parts


def _only_block(graph: Graph, path: str, prefix: str) -> BlockNode | None:
    node = graph.nodes.get(path[len(prefix) + 1:] if prefix else path)
    return node if isinstance(node, BlockNode) else None


def chart_figure(dist: Distribution):
    """The three panels (call it inside `matplotlib.rc_context(CHART_RC)`); a count shortened carries
    its unit (`56.67 M params`), and every bar's label stays inside its panel."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 5.2), dpi=120, layout="constrained")
    left, middle, right = fig.subplots(1, 3, width_ratios=[1, 1.25, 1.1])
    _category_bars(left, dist)
    _part_bars(middle, dist)
    _sunburst(right, dist)
    fig.suptitle(f"{shortened(dist.model, CHART_LABEL)}: {counted(dist.total)} ({dist.total:,})", fontsize=13,
                 fontweight="bold")
    _room_for_labels(fig, [left, middle])
    return fig


def _room_for_labels(fig, axes) -> None:
    """Each bar panel's x range widened until the labels after its bars end inside it (measured as
    tests/test_chart.py measures them: matplotlib's window extents)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig)
    for _ in range(3):  # a wider range moves the bars' ends, and with them the labels
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        grown = False
        for ax in axes:
            right = max((t.get_window_extent(renderer).x1 for t in ax.texts), default=0)
            room = ax.get_window_extent(renderer)
            if right > room.x1:
                low, high = ax.get_xlim()
                ax.set_xlim(low, low + (high - low) * (right - room.x0) / (room.x1 - room.x0) * 1.03)
                grown = True
        if not grown:
            return


def chart_image(dist: Distribution, fmt: str) -> bytes:
    """The three panels as image bytes (`png`, `svg` or `pdf`)."""
    import matplotlib

    with matplotlib.rc_context(CHART_RC):
        fig = chart_figure(dist)
        out = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else ({"CreationDate": None} if fmt == "pdf" else {})
        fig.savefig(out, format=fmt, metadata=metadata, facecolor="white")
    return out.getvalue()


def _category_bars(ax, dist: Distribution) -> None:
    names = [shortened(c, CHART_LABEL) for c, _ in dist.categories][::-1]
    values = [float(n) for _, n in dist.categories][::-1]  # floats: 10**60 parameters overflow an int64
    colors = [category_color(c) for c, _ in dist.categories][::-1]
    bars = ax.barh(names, values, color=colors, edgecolor="#555555", linewidth=0.5)
    ax.bar_label(bars, labels=[f" {counted(v)}  {_share(v, dist.total)}" for v in values], fontsize=8)
    ax.set_title("by category", loc="left", fontweight="bold")
    ax.set_xlabel("parameters")
    ax.set_xlim(0, max(values, default=1) * 1.45)
    _axis(ax)


def _part_bars(ax, dist: Distribution) -> None:
    parts = dist.parts[::-1]
    labels = [p.label for p in parts]
    left = [0] * len(parts)
    seen: set[str] = set()
    for cat, _ in dist.categories:
        widths = [float(p.by_category.get(cat, 0)) for p in parts]
        ax.barh(labels, widths, left=left, color=category_color(cat), edgecolor="#555555", linewidth=0.5,
                label=shortened(cat, CHART_LABEL) if cat not in seen else None)
        seen.add(cat)
        left = [a + b for a, b in zip(left, widths)]
    for y, p in enumerate(parts):
        ax.text(float(p.total), y, f" {counted(p.total)}  {_share(p.total, dist.total)}", va="center", fontsize=8)
    ax.set_title("by block", loc="left", fontweight="bold")
    ax.set_xlabel("parameters")
    ax.set_xlim(0, float(max((p.total for p in parts), default=1)) * 1.45)
    _axis(ax)
    ax.legend(loc="best", fontsize=8, frameon=False)


def _sunburst(ax, dist: Distribution) -> None:
    """Inner ring: categories; outer ring: the blocks each category's parameters sit in."""
    total = dist.total or 1
    inner = [float(n) for _, n in dist.categories]
    inner_labels = [f"{shortened(c, CHART_LABEL)}\n{100 * n / total:.0f}%" if n / total >= 0.04 else ""
                    for c, n in dist.categories]
    outer, outer_labels, outer_colors = [], [], []
    for cat, _ in dist.categories:
        for part in sorted((p for p in dist.parts if p.by_category.get(cat)),
                           key=lambda p: -p.by_category[cat]):
            n = part.by_category[cat]
            outer.append(float(n))
            outer_labels.append(part.label if n / total >= 0.03 else "")
            outer_colors.append(category_color(cat))
    wedge = {"edgecolor": "white", "linewidth": 1.2}
    ax.pie(outer, radius=1.0, colors=outer_colors, labels=outer_labels, labeldistance=1.06,
           startangle=90, counterclock=False, textprops={"fontsize": 8}, wedgeprops={**wedge, "width": 0.32})
    ax.pie(inner, radius=0.68, colors=[category_color(c) for c, _ in dist.categories], labels=inner_labels,
           labeldistance=0.55, startangle=90, counterclock=False, textprops={"fontsize": 8, "ha": "center"},
           wedgeprops={**wedge, "width": 0.36})
    ax.set_title("categories (inside) and blocks (outside)", loc="left", fontweight="bold")
    ax.set_aspect("equal")


def _axis(ax) -> None:
    """A count axis with a few short ticks: 0, 20M, 40M."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _short(x)))


def _short(x: float) -> str:
    if abs(x) >= 1e15:
        return f"{x:.0e}"
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= size:
            return f"{x / size:g}{unit}"
    return f"{x:g}"


def _share(n: int, total: int) -> str:
    share = 100 * n / (total or 1)
    return f"{share:.1f}%" if share >= 0.1 or not n else "< 0.1%"
