"""Comparison of models: the stacks table and the figures table (a column per model), JSON, and
a matplotlib chart of where the parameters and FLOPs go, stack by stack.

Labels are short and the cells carry their units (`136.37 GFLOP`, `237.35 MiB`), so three
models fit 80 columns; the others go on in a figures table below, names and numbers whole.
"""
from __future__ import annotations

import io
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..dims import to_json
from ..errors import shortened
from ..passes.compare import ModelSummary
from .flops import flops_text
from .labels import ACTIVE, NEW_TOKEN
from .memory import binary
from .palette import CHART_LABEL, CHART_RC, category_color

ROLE_COLORS = {"encoder": "#4c72b0", "decoder": "#dd8452", "layers": "#55a868"}
NOTES = ("encoder pass: what is computed once per input (an encoder over S tokens, a vision tower; an "
         "encoder-decoder's cross-attention keys and values). decoder prefill: the decoder over its "
         "S tokens (T in an encoder-decoder). forward per new token: one more generated token with "
         f"those tokens cached, per sequence (forward FLOPs; sweep's training FLOPs/token are {ACTIVE}). serving: "
         "bf16 weights plus the caches of S tokens; training: "
         "mixed precision, Adam (16 bytes/param), plus the activations stored for backward.")


def _num(n: Any) -> Any:
    if isinstance(n, float) and n.is_integer():
        return int(n)
    return to_json(n) if n is not None and not isinstance(n, float) else n


def compare_json(rows: list[ModelSummary]) -> dict[str, Any]:
    models = []
    for r in rows:
        f, m = r.flops, r.memory
        models.append({
            "name": r.name, "description": r.description, "kind": r.kind,
            "bindings": {k: to_json(v) for k, v in r.bindings.items()},
            "params": r.params, "active_params": r.active_params, "by_category": r.by_category,
            "embedding_share": r.embedding_share, "width": r.width,
            "stacks": [{"path": s.path, "role": s.role, "layers": s.layers, "params_per_layer": s.per_layer,
                        "active_params_per_layer": s.active_per_layer, "params": s.params,
                        "active_params": s.active, "extra_params": s.extra, "does": list(s.does), "forward_flops": _num(flops)}
                       for s, flops in zip(r.stacks, r.stack_flops)],
            "params_outside_stacks": r.outside,
            "flops": {"forward": _num(f.forward), "encoder_pass": _num(f.encoder), "decoder_prefill": _num(f.prefill),
                      "per_generated_token": _num(f.per_token), "per_image": _num(f.per_image),
                      "decoder_length": f.decoder_length},
            "memory": {"weights_bytes": m.weights_bytes, "training_state_bytes": m.training_state_bytes,
                       "activation_bytes": m.activation_bytes, "training_bytes": m.training_bytes,
                       "kv_cache_bytes": m.kv_cache_bytes, "state_cache_bytes": m.state_cache_bytes,
                       "serving_bytes": m.serving_bytes},
        })
    return {"models": models}


def sizes_text(rows: list[ModelSummary]) -> str:
    """The sizes the figures are at: one list when every model has them, else each model's own
    (a model whose spec bounds S lower, CLIP's 77 text tokens, is measured at that bound)."""
    each = [", ".join(f"{k}={v}" + (" (its positions)" if k in r.lowered else "") for k, v in r.bindings.items())
            for r in rows]
    merged = {k: v for r in sorted(rows, key=lambda r: -len(r.bindings)) for k, v in r.bindings.items()}
    if all(merged[k] == v for r in rows for k, v in r.bindings.items()) and not any(r.lowered for r in rows):
        return ", ".join(f"{k}={v}" for k, v in merged.items())
    return "; ".join(f"{r.name}: {text}" for r, text in zip(rows, each))


def _shorten(text: str, width: int) -> str:
    """`text`, shortened in the middle when it alone is wider than `width`."""
    if len(text) <= width:
        return text
    keep = max(width - 1, 2)
    return text[:(keep + 1) // 2] + "…" + text[len(text) - keep // 2:]


def _fold(path: str, width: int) -> str:
    """`path` indented by two, on lines of at most `width` characters broken after a dot (the next lines
    indented by two more: 'model.language_model.' then 'layers.0,1,2,…,28'), a part wider than a line
    shortened in the middle."""
    lines, line = [], ""
    for part in path.replace(".", ".\0").split("\0"):
        room = width if not lines else width - 2
        if line and len(line) + len(part) > room:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    lines = [_shorten(text, width if not k else width - 2) for k, text in enumerate(lines)]
    return "\n".join(("  " if not k else "    ") + text for k, text in enumerate(lines))


def does_text(stack) -> str:
    """What a stack's layers do, as one cell: the features, the parameters a token touches when fewer,
    and whether its layers share one set of weights."""
    does = ", ".join(stack.does) or "—"
    if stack.active_per_layer != stack.per_layer:
        does += f"; {stack.active_per_layer:,} active per layer (one token)"
    if stack.calls and stack.calls[0].shared:
        does += "; one set of weights"
    return does + (f"; {extra_text(stack)}" if stack.extra else "")


def extra_text(stack) -> str:
    """`+256 params outside the repeated layer (in encoder.block.0)`: why params is not
    layers x params/layer."""
    unlike = stack.unlike()
    where = ", ".join(unlike[:3]) + (f" and {len(unlike) - 3} more" if len(unlike) > 3 else "")
    return f"{stack.extra:+,} params outside the repeated layer" + (f" (in {where})" if where else "")


def stacks_table(rows: list[ModelSummary], width: int = 80) -> Table:
    """One row per stack, under its model's name and kind; a path wider than its share of
    `width` folds after a dot, what the layers do wraps between words."""
    paths = [f"  {s.path}" for r in rows for s in r.stacks] + [r.name for r in rows]
    per_layer = max([len(f"{s.per_layer:,}") for r in rows for s in r.stacks] + [12])
    layers = max([len(f"{s.layers:,}") for r in rows for s in r.stacks] + [6])
    first = min(max(map(len, paths), default=5), max(width - 13 - layers - per_layer - 16, 16))  # 16: what they do
    table = Table(title="stacks", title_justify="left")
    does_width = max(width - 13 - first - layers - per_layer, 16)
    table.add_column("model / stack", width=first, no_wrap=True)
    table.add_column("layers", justify="right", width=layers)
    table.add_column("params/layer", justify="right", width=per_layer)
    table.add_column("what they do", max_width=does_width)
    for r in rows:
        table.add_row(Text(_shorten(r.name, first), style="bold"), "", "", Text(r.kind, style="bold"))
        for s in r.stacks:
            table.add_row(_fold(s.path, first - 2), f"{s.layers:,}", f"{s.per_layer:,}", does_text(s))
        if not r.stacks:
            table.add_row("  (no repeated layers)", "", "", "")
    return table


def figure_rows(rows: list[ModelSummary]) -> list[tuple[Any, list[str]]]:
    """(label, a cell per model) of every figure: parameters, FLOPs, memory (None: a rule)."""
    out: list[tuple[Any, list[str]]] = []

    def add(label: Any, fn, when: bool = True) -> None:
        if when:
            out.append((label, [fn(r) for r in rows]))

    add("parameters", lambda r: f"{r.params:,}")
    add("  active (one token)", lambda r: f"{r.active_params:,}", any(r.active_params != r.params for r in rows))
    for cat in sorted({c for r in rows for c in r.by_category}):  # the category's colour everywhere
        add(Text.assemble(("  ■ ", category_color(cat)), cat),
            lambda r, c=cat: f"{r.by_category[c]:,}" if c in r.by_category else "—")
    add("embedding share", lambda r: f"{100 * r.embedding_share:.1f}%")
    add("width", lambda r: f"{r.width:,}" if r.width else "—")
    out.append((None, []))
    optional = lambda n: flops_text(n) if n is not None else "—"  # noqa: E731
    add("encoder pass", lambda r: optional(r.flops.encoder), any(r.flops.encoder is not None for r in rows))
    add("decoder prefill", lambda r: optional(r.flops.prefill), any(r.flops.prefill is not None for r in rows))
    add(NEW_TOKEN, lambda r: optional(r.flops.per_token), any(r.flops.per_token is not None for r in rows))
    add("forward per image", lambda r: optional(r.flops.per_image), any(r.flops.per_image is not None for r in rows))
    out.append((None, []))
    add("serving", lambda r: binary(r.memory.serving_bytes))
    add("  weights (bf16)", lambda r: binary(r.memory.weights_bytes["bf16"]))
    add("  KV cache", lambda r: binary(r.memory.kv_cache_bytes))
    add("  state cache", lambda r: binary(r.memory.state_cache_bytes), any(r.memory.state_cache_bytes for r in rows))
    add("training", lambda r: binary(r.memory.training_bytes) if r.memory.activation_bytes is not None else "—")
    add("  Adam state", lambda r: binary(r.memory.training_state_bytes))
    add("  activations", lambda r: binary(r.memory.activation_bytes))
    return out


def figures_tables(rows: list[ModelSummary], width: int = 80) -> list[Table]:
    """Parameters, FLOPs and memory: a column per model, a row per figure (units in the cells);
    as many models side by side as fit `width`, the others in further tables below."""
    figures = figure_rows(rows)
    label_width = max(Text(label).cell_len if isinstance(label, str) else label.cell_len
                      for label, _ in figures if label is not None)
    room = width - label_width - 4  # the label column with its padding and both outer borders
    widths = []
    for i, r in enumerate(rows):
        cells = max(len(cells[i]) for label, cells in figures if label is not None)
        widths.append(max(cells, min(len(r.name), max(room - 3, cells))))
    groups: list[list[int]] = []
    used = room + 1
    for i, w in enumerate(widths):
        if groups and used + w + 3 <= room:
            groups[-1].append(i)
            used += w + 3
        else:
            groups.append([i])
            used = w + 3
    tables = []
    for n, group in enumerate(groups):
        which = f"model {group[0] + 1}" if len(group) == 1 else f"models {group[0] + 1}..{group[-1] + 1}"
        title = f"at {sizes_text(rows)}" + (f" ({which} of {len(rows)})" if n else "")
        table = Table(title=title, title_justify="left")
        table.add_column("", no_wrap=True)
        for i in group:
            table.add_column(_shorten(rows[i].name, widths[i]), justify="right")
        for label, cells in figures:
            if label is None:
                table.add_section()
            elif any(cells[i] != "—" for i in group):  # a row no model of the group has: left out
                table.add_row(label, *[cells[i] for i in group])
        tables.append(table)
    return tables


def compare_table(rows: list[ModelSummary], width: int = 80) -> Group:
    """The stacks, the figures (in groups of models that fit `width`) and what the rows mean."""
    return Group(stacks_table(rows, width), *figures_tables(rows, width), Text(NOTES, style="dim"))


def compare_chart(rows: list[ModelSummary], fmt: str = "png") -> bytes:
    """The figure of `compare_figure`, as `fmt` bytes (no date in SVG or PDF: the same models give the
    same file)."""
    import matplotlib
    with matplotlib.rc_context(CHART_RC):
        fig = compare_figure(rows)
        out = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else ({"CreationDate": None} if fmt == "pdf" else {})
        fig.savefig(out, format=fmt, metadata=metadata, facecolor="white")
    return out.getvalue()


def compare_figure(rows: list[ModelSummary]):
    """Four panels, a bar per model: parameters and forward FLOPs by stack (coloured by role:
    encoder, decoder, other layers; the rest by category), the forward FLOPs of one generated token,
    and memory for training and for serving; no two texts overlap (`untangle`). Call it inside
    `matplotlib.rc_context(CHART_RC)`."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(16, 5.2), dpi=110, layout="constrained")
    axes = fig.subplots(1, 4, width_ratios=[1.2, 1.2, 0.9, 1])
    names = [shortened(r.name, CHART_LABEL) for r in rows]  # a 200-character name collapsed the axes
    _stacked(axes[0], rows, names, [_param_parts(r) for r in rows], 1e6, "M params",
             "parameters by stack (millions)")
    _stacked(axes[1], rows, names, [_flop_parts(r) for r in rows], 1e9, "GFLOP",
             f"forward GFLOPs by stack ({sizes_text(rows)})")
    _per_token(axes[2], rows, names)
    _memory(axes[3], rows, names)
    fig.suptitle("where the parameters, FLOPs and bytes go", fontsize=12, fontweight="bold")
    untangle(fig)
    return fig


def untangle(fig) -> None:
    """No two texts of `fig` overlap and none leaves it: a title wider than its panel goes on more
    lines, and a panel's model names that collide go on two rows (every other one lower), else
    upright; the layout is redone after each change (tests/test_labels.py measures every box)."""
    import textwrap

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        title = next(c for c in ax.get_children() if isinstance(c, Text) and c.get_text() == ax.get_title("left"))
        width, room = title.get_window_extent(renderer).width, ax.get_window_extent(renderer).width
        if width > room:
            text = title.get_text()
            title.set_text(textwrap.fill(text, max(int(len(text) * room / width), 12)))
    fig.canvas.draw()
    for ax in fig.axes:
        labels = ax.get_xticklabels()
        if _collide(labels, renderer):
            ax.set_xticks(ax.get_xticks(), [("\n" if i % 2 else "") + t.get_text() for i, t in enumerate(labels)])
            fig.canvas.draw()
            if _collide(ax.get_xticklabels(), renderer):
                ax.set_xticks(ax.get_xticks(), [t.get_text().lstrip("\n") for t in labels], rotation=90)
    for _ in range(3):  # each change redoes the layout, which may bring two texts together again
        fig.canvas.draw()
        for ax in fig.axes:
            _upright_values(ax, renderer)


def _upright_values(ax, renderer) -> None:
    """A panel's texts over its bars when two collide: a name inside a bar narrower than it goes,
    the values stand upright on one line, and the panel grows to hold them."""
    bars = [p.get_window_extent(renderer).width for p in ax.patches]
    narrowest = min(bars, default=0)
    for t in list(ax.texts):
        if t.get_color() == "white" and t.get_window_extent(renderer).width > narrowest:
            t.remove()  # the legend names the stack's role
    values = [t for t in ax.texts if t.get_color() != "white"]
    upright = any(t.get_rotation() == 90 for t in values)
    if not upright and not _collide(values, renderer):
        return
    for t in values:
        t.set_text(" ".join(t.get_text().split()))
        t.set_rotation(90)
        t.set_verticalalignment("bottom")
    ax.figure.canvas.draw()
    top = max(ax.transData.inverted().transform(t.get_window_extent(renderer))[1][1] for t in values)
    low, high = ax.get_ylim()
    if top > low + (high - low) / 1.25:  # the top fifth holds the legend
        ax.set_ylim(low, low + (top - low) * 1.3)


def _collide(labels, renderer) -> bool:
    boxes = [t.get_window_extent(renderer) for t in labels if t.get_text().strip()]
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def _param_parts(r: ModelSummary) -> list[tuple[str, str, float]]:
    """(label, colour, parameters) of each stack, then what lies outside the stacks by category."""
    parts = [(f"{s.path} × {s.layers}", ROLE_COLORS[s.role], s.params) for s in r.stacks]
    return parts + [(c, category_color(c), n) for c, n in sorted(r.outside.items(), key=lambda kv: -kv[1])]


def _flop_parts(r: ModelSummary) -> list[tuple[str, str, float]]:
    parts = [(f"{s.path} × {s.layers}", ROLE_COLORS[s.role], float(f)) for s, f in zip(r.stacks, r.stack_flops)]
    rest = float(r.flops.forward) - sum(p[2] for p in parts)
    if rest > 0:
        parts.append(("outside the stacks (embeddings, heads)", category_color("other"), rest))
    return parts


def _stacked(ax, rows, names, parts, scale: float, unit: str, title: str) -> None:
    seen: set[str] = set()
    for i, model_parts in enumerate(parts):
        bottom = 0.0
        for label, color, value in model_parts:
            role = shortened(next((k for k, v in ROLE_COLORS.items() if v == color), label), CHART_LABEL)
            ax.bar(i, value / scale, bottom=bottom, color=color, edgecolor="white", linewidth=0.8,
                   label=role if role not in seen else None)
            seen.add(role)
            if value / scale > 0.06 * max(sum(p[2] for p in m) for m in parts) / scale and label.count("×"):
                ax.text(i, bottom + value / scale / 2, label.replace(" × ", "\n× ") if len(parts) > 3 else label,
                        ha="center", va="center", fontsize=7 if len(parts) <= 3 else 5.5, color="white")
            bottom += value / scale
        ax.annotate(f"{bottom:.1f} {unit}", (i, bottom), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names)
    ax.set_title(title, loc="left", fontweight="bold")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # room for the legend above the bars
    ax.legend(fontsize=7, frameon=False, loc="upper left", ncols=2)


def _per_token(ax, rows, names) -> None:
    values = [float(r.flops.per_token) / 1e6 if r.flops.per_token is not None else 0.0 for r in rows]
    bars = ax.bar(range(len(rows)), values, color=ROLE_COLORS["decoder"])
    ax.bar_label(bars, labels=[f"{v:.1f} MFLOP" if r.flops.per_token is not None else "generates\nno tokens"
                               for v, r in zip(values, rows)], fontsize=8)
    ax.set_xticks(range(len(names)), names)
    ax.set_title(f"{NEW_TOKEN} (MFLOPs, cached)", loc="left", fontweight="bold")


def _memory(ax, rows, names) -> None:
    width = 0.38
    training = [r.memory.training_bytes / 2 ** 30 for r in rows]
    serving = [r.memory.serving_bytes / 2 ** 30 for r in rows]
    for offset, values, label, color in ((-width / 2, training, "training (Adam + activations)", "#8172b3"),
                                         (width / 2, serving, "serving (bf16 weights + caches)", "#64b5cd")):
        bars = ax.bar([i + offset for i in range(len(rows))], values, width, label=label, color=color)
        ax.bar_label(bars, labels=[f"{v:.2f} GiB" for v in values], fontsize=7)
    ax.set_xticks(range(len(names)), names)
    ax.set_title("memory (GiB)", loc="left", fontweight="bold")
    ax.set_ylim(0, max(training + serving + [1e-9]) * 1.3)
    ax.legend(fontsize=7, frameon=False, loc="upper left")
