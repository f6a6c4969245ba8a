"""Colours shared by the diagram, the charts and the HTML report.

`share_bin(fraction)` puts a node's share of the model's parameters into one of
a few bins (log-spaced, so a 0.1% norm and a 40% MLP are told apart);
`category_color(name)` is the colour of a parameter category.
"""
from __future__ import annotations

# (lower bound of the share, label, fill, text colour); a ColorBrewer "Blues" ramp.
SHARE_BINS: tuple[tuple[float, str, str, str], ...] = (
    (0.5, "≥ 50%", "#08519c", "#ffffff"),
    (0.2, "20–50%", "#3182bd", "#ffffff"),
    (0.05, "5–20%", "#6baed6", "#000000"),
    (0.01, "1–5%", "#9ecae1", "#000000"),
    (0.001, "0.1–1%", "#c6dbef", "#000000"),
    (0.0, "< 0.1%", "#eff3ff", "#000000"),
)
NO_PARAMS = ("no parameters", "#ffffff", "#000000")

# Categories the built-in ops and specs use, then a fallback cycle for others.
CATEGORY_COLORS = {
    "embedding": "#8dd3c7",
    "attention": "#fb8072",
    "mlp": "#80b1d3",
    "norm": "#fdb462",
    "head": "#b3de69",
    "conv": "#bebada",
    "linear": "#fccde5",
    "other": "#d9d9d9",
}
# matplotlib's settings for every chart: deterministic SVG, text as text, and names drawn as written
# (mathtext off: '$\\frac{$' in a name crashed the chart, '$x^2$' turned into a formula)
CHART_RC = {"svg.hashsalt": "archgraph", "svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
            "axes.spines.right": False, "text.parse_math": False}
CHART_LABEL = 40  # characters of a name on a chart: a longer one keeps its two ends
_FALLBACK = ("#ffffb3", "#bc80bd", "#ccebc5", "#ffed6f", "#e5c494", "#b3b3b3")


def share_bin(fraction: float, has_params: bool = True) -> tuple[str, str, str]:
    """(label, fill, text colour) of a share of the parameters (0..1)."""
    if not has_params:
        return NO_PARAMS
    for low, label, fill, ink in SHARE_BINS:
        if fraction >= low:
            return label, fill, ink
    return SHARE_BINS[-1][1:]


def category_color(name: str) -> str:
    """Fill colour of a category; unknown names get a stable colour from a fixed cycle."""
    if name in CATEGORY_COLORS:
        return CATEGORY_COLORS[name]
    return _FALLBACK[sum(map(ord, name)) % len(_FALLBACK)]


def human(n: int | float) -> str:
    """`124.44 M`, `1.54 K`, `768`: a count for a figure (`1.00e+60` past a thousand T)."""
    if abs(n) >= 10 ** 15:
        from decimal import Decimal
        return f"{Decimal(n) if isinstance(n, int) else n:.2e}"
    for unit, size in (("T", 10 ** 12), ("B", 10 ** 9), ("M", 10 ** 6), ("K", 10 ** 3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:,}" if isinstance(n, int) else f"{n:.3g}"


def counted(n: int | float) -> str:
    """A parameter count for a figure, with its unit as FLOPs and bytes have theirs: `124.44 M params`."""
    return f"{human(n)} params"
