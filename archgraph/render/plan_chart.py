"""A search's plans drawn: tokens per second against memory per GPU, one point per layout that
was planned (those that fit coloured by recomputation, those that do not in grey), the GPU's
memory as a line, the fastest plan marked.  matplotlib's Agg canvas; SVG is deterministic."""
from __future__ import annotations

import io
from pathlib import Path

from ..errors import SpecError, shortened
from .palette import CHART_LABEL, CHART_RC

FORMATS = ("png", "svg", "pdf")
COLOURS = {"none": "#4c72b0", "selective": "#dd8452", "full": "#55a868"}
GIB = 2 ** 30
TITLE = 60  # characters of the title on one line (the figure holds about 75)


def search_chart(model: str, found: list, gpu, path: str) -> bytes:
    """The chart as bytes in the format `path`'s suffix names."""
    import matplotlib
    from matplotlib.figure import Figure

    fmt = Path(path).suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise SpecError(f"--chart {path}: draws .png, .svg or .pdf", hint="e.g. --chart plans.png")
    with matplotlib.rc_context(CHART_RC):
        fig = Figure(figsize=(8, 5.6), dpi=120, layout="constrained")
        ax = fig.subplots()
        planned = [c for c in found if c.plan is not None]
        over = [c for c in planned if c.why]
        ax.scatter([c.plan.per_gpu["total"] / GIB for c in over], [c.plan.time["tokens_per_second"] for c in over],
                   s=10, color="#c8c8c8", label=f"does not fit ({len(over):,})", zorder=1)
        for mode, colour in COLOURS.items():
            fit = [c for c in planned if not c.why and c.layout.recompute == mode]
            if fit:
                ax.scatter([c.plan.per_gpu["total"] / GIB for c in fit],
                           [c.plan.time["tokens_per_second"] for c in fit], s=14, color=colour,
                           label=f"fits, recompute {mode} ({len(fit):,})", zorder=2)
        best = next((c for c in planned if not c.why), None)
        if best is not None:
            x, y = best.plan.per_gpu["total"] / GIB, best.plan.time["tokens_per_second"]
            lay = best.layout
            ax.scatter([x], [y], s=90, facecolors="none", edgecolors="black", linewidths=1.2, zorder=3,
                       label=f"fastest: tp {lay.tp} · pp {lay.pp} · dp {lay.dp} · ZeRO {lay.zero}"
                             + (" · sp" if lay.sp else "") + f" · recompute {lay.recompute} · mb {lay.micro_batch}")
        ax.axvline(gpu.memory / GIB, color="#c44e52", linestyle="--", linewidth=1,
                   label=f"the GPU's memory ({gpu.memory / GIB:,.0f} GiB)")
        ax.set_xscale("log")
        from matplotlib.ticker import FuncFormatter
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if str(int(round(v)))[0] in "25" else ""))
        ax.set_xlabel("memory per GPU (GiB, log scale)")
        ax.set_ylabel("tokens per second")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.grid(True, linewidth=0.3, alpha=0.6)
        fig.legend(loc="outside lower center", ncols=2, fontsize=8, frameon=False)   # below: never over a point
        gpus = found[0].layout.gpus if found else 0
        name, what = shortened(model, CHART_LABEL), f"{gpus} × {gpu.name}: {len(found):,} layouts"
        on = " on " if len(name) + len(what) <= TITLE else "\non "  # one line of 80 characters overflows
        ax.set_title(name + on + what, loc="left", fontweight="bold")
        out = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else ({"CreationDate": None} if fmt == "pdf" else {})
        fig.savefig(out, format=fmt, metadata=metadata, facecolor="white")
    return out.getvalue()
