"""Comparison of models: one table (a column per model), JSON, and a matplotlib chart."""
from __future__ import annotations

import io
from dataclasses import asdict
from typing import Any

from rich.table import Table
from rich.text import Text

from ..dims import to_json
from ..passes.compare import ModelSummary
from .flops import flops_text
from .memory import binary
from .palette import category_color


def compare_json(rows: list[ModelSummary]) -> dict[str, Any]:
    models = []
    for r in rows:
        d = asdict(r)
        d["flops_per_token"] = to_json(r.flops_per_token) if not isinstance(r.flops_per_token, float) \
            else r.flops_per_token
        d["forward_flops"] = to_json(r.forward_flops)
        d["bindings"] = {k: to_json(v) for k, v in r.bindings.items()}
        models.append(d)
    return {"models": models}


def _f(n: Any) -> str:
    return f"{int(n):,}" if isinstance(n, (int, float)) else str(n)


def _sizes(rows: list[ModelSummary]) -> str:
    """The sizes the figures are at: one list when every model has them, else each model's own
    (a model whose spec bounds S lower, CLIP's 77 text tokens, is measured at that bound)."""
    each = [", ".join(f"{k}={v}" for k, v in r.bindings.items()) for r in rows]
    if all(r.bindings.get(k, v) == v for r in rows for k, v in rows[0].bindings.items()):
        return each[0] if each else ""  # the sizes they share agree (T5's T besides S is not a difference)
    return "; ".join(f"{r.name}: {text}" for r, text in zip(rows, each))


def compare_table(rows: list[ModelSummary]) -> Table:
    sizes = _sizes(rows)
    table = Table(title=f"comparison (FLOPs and KV cache at {sizes})", title_justify="left")
    table.add_column("")
    for r in rows:
        table.add_column(r.name, justify="right")
    add = lambda label, fn: table.add_row(label, *[fn(r) for r in rows])  # noqa: E731
    add("parameters", lambda r: f"{r.params:,}")
    for cat in sorted({c for r in rows for c in r.by_category}):  # the swatch: the category's colour everywhere
        table.add_row(Text.assemble(("  ■ ", category_color(cat)), cat),
                      *[f"{r.by_category[cat]:,}" if cat in r.by_category else "—" for r in rows])
    add("embedding share", lambda r: f"{100 * r.embedding_share:.1f}%")
    add("layers (blocks)", lambda r: str(r.layers))
    add("params per layer", lambda r: f"{r.per_layer:,}")
    add("width (embedding size)", lambda r: f"{r.width:,}" if r.width else "—")
    for dtype in ("fp32", "bf16", "int8", "int4"):
        add(f"weights {dtype}", lambda r, d=dtype: binary(r.weights_bytes[d]))
    add("training state (Adam, 16 B/param)", lambda r: binary(r.training_bytes))
    add("forward FLOPs per token", lambda r: flops_text(r.flops_per_token))
    add("forward FLOPs (all tokens)", lambda r: flops_text(r.forward_flops))
    add("KV cache (bf16)", lambda r: binary(r.kv_cache_bytes) if r.kv_cache_bytes
        else "— (a fixed state)" if r.state_cache_bytes else "— (no decoder)")
    if any(r.state_cache_bytes for r in rows):  # state-space and recurrent layers: the same at any S
        add("state cache (bf16)", lambda r: binary(r.state_cache_bytes) if r.state_cache_bytes else "—")
    return table


def compare_chart(rows: list[ModelSummary], fmt: str = "png") -> bytes:
    """Three panels: parameters by category (stacked), forward GFLOPs per token, weights per dtype."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.name for r in rows]
    cats = sorted({c for r in rows for c in r.by_category}, key=lambda c: -sum(r.by_category.get(c, 0) for r in rows))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    bottom = [0.0] * len(rows)
    for cat in cats:
        vals = [r.by_category.get(cat, 0) / 1e6 for r in rows]
        axes[0].bar(names, vals, bottom=bottom, label=cat, color=category_color(cat), edgecolor="#555555",
                    linewidth=0.5)
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, r in enumerate(rows):
        axes[0].annotate(f"{r.params / 1e6:.1f} M", (i, bottom[i]), ha="center", va="bottom", fontsize=9)
    axes[0].set_title("parameters by category (millions)")
    axes[0].legend(fontsize=8)
    flops = [float(r.flops_per_token) / 1e9 if isinstance(r.flops_per_token, (int, float)) else 0 for r in rows]
    axes[1].bar(names, flops, color="tab:gray")
    sizes = _sizes(rows)
    axes[1].set_title(f"forward GFLOPs per token ({sizes})")
    width = 0.2
    for j, dtype in enumerate(("fp32", "bf16", "int8", "int4")):
        xs = [i + (j - 1.5) * width for i in range(len(rows))]
        axes[2].bar(xs, [r.weights_bytes[dtype] / 2 ** 20 for r in rows], width, label=dtype)
    axes[2].set_xticks(range(len(rows)), names)
    axes[2].set_title("weights memory (MiB)")
    axes[2].legend(fontsize=8)
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=15)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110)
    plt.close(fig)
    return buf.getvalue()
