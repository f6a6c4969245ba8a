"""Memory and FLOPs reports as tables and JSON (binary units for bytes: MiB = 2^20, GiB = 2^30)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is made: --json never needs it
    from rich.console import Group

    from .sheet import Sheet

from ..dims import to_json
from ..machine import binary
from ..passes.memory import MemoryReport
from .pattern import indices_text


def decimal(n: int | None) -> str:
    """Bytes in decimal gigabytes (seed 004's rule of thumb: 4 GB per billion fp32 parameters)."""
    return "—" if n is None else f"{n / 1e9:,.2f} GB"


def memory_json(m: MemoryReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": m.model, "params": m.params, "trainable": m.trainable,
        "weights_bytes": m.weights_bytes, "buffers_bytes": m.buffers_bytes, "buffers_by_dtype": m.buffers_by_dtype,
        "dtype": m.dtype,
        "weights_params_by_dtype": m.weights_params_by_dtype,
        "weights_with_overrides_bytes": m.weights_with_overrides,
        "optimizer": m.optimizer, "precision": m.precision,
        "training_bytes": m.training_bytes, "training": m.training,
        "training_bytes_per_param": m.bytes_per_param,
        "bindings": {k: to_json(v) for k, v in m.bindings.items()},
        "activation_bytes": m.activation_bytes,
        "attention_probs_bytes": m.attention_probs_bytes,
    }
    if m.stored is not None:
        out["stored_bytes"] = m.stored_bytes
        out["stored_by_type"] = {k: {"tensors": t, "elements": e, "bytes": b} for k, (t, e, b) in m.stored.items()}
    if m.activation_bytes is not None:
        out["training_with_activations_bytes"] = m.training_bytes + m.activation_bytes
    out["kv_cache_bytes"] = m.kv_cache_bytes  # 0 for a model that keeps none: no cache is 0 bytes
    out["state_cache_bytes"] = m.state_cache_bytes
    if m.kv_cache:
        out["kv_cache"] = [{"path": e.path, "op": e.op, "layers": e.layers, "rule": e.rule,
                            "context": to_json(e.context), "values_per_token": to_json(e.width),
                            "state_values": to_json(e.state), "bytes": e.bytes} for e in m.kv_cache]
    if m.activation_note:
        out["note"] = m.activation_note
    out["assumptions"] = m.assumptions
    return out


def _bytes_table(title: str) -> Sheet:
    from .sheet import Col, Sheet

    return Sheet(title, [Col("", "text", wrap=36), Col("Bytes", "number"), Col("Binary (2^20, 2^30)", "number"),
                         Col("Decimal (10^9)", "number")], shrink=["Decimal (10^9)", "Binary (2^20, 2^30)"])


def _row(table: Sheet, label: str, n: int | None, bold: bool = False) -> None:
    from rich.text import Text

    cells = [label, "—" if n is None else f"{n:,}", binary(n), decimal(n)]
    table.add_row(*[Text(c, style="bold") if bold else c for c in cells])


def _n(value) -> str:
    """A count with thousands separators (a symbolic one as written)."""
    return f"{value:,}" if isinstance(value, int) else str(value)


def cache_rows(entries) -> list[tuple[str, int | None]]:
    """One row per rule and size: the runs of layers that cache alike (Gemma 3's five sliding
    layers between full ones, 10 times over) are summed into one line that counts them."""
    groups: dict[tuple, list] = {}
    for e in entries:
        groups.setdefault((e.rule, e.op, str(e.width), str(e.context), str(e.state)), []).append(e)
    rows = []
    for runs in groups.values():
        e = runs[0]
        what = f"{_n(e.width)} values/token, {_n(e.context)} tokens" if e.width else f"{_n(e.state)} values per sequence"
        sizes = [r.bytes for r in runs]
        total = None if None in sizes else sum(sizes)
        if len(runs) == 1:
            rows.append((f"cache, {e.rule}: {e.path} × {e.layers} ({what})", total))
        else:
            layers = sum(r.layers for r in runs)
            rows.append((f"cache, {e.rule}: {_layers_of(runs) or f'{layers} layers from {e.path}'} ({what})",
                         total))
    return rows


def _layers_of(runs) -> str | None:
    """The layers of a stack that `runs` (cache entries of one rule) cover, named by their indices
    in the stack: '12 of transformer.h (0, 2, 4, ..., 22), attn.attention' for GPT-Neo's every other
    layer; None when the runs' paths differ in more than one layer index."""
    parts = [r.path.split(".") for r in runs]
    differ = [i for i in range(len(parts[0])) if len({len(p) for p in parts}) == 1
              and len({p[i] for p in parts}) > 1]
    if len(differ) != 1 or not all(p[differ[0]].isdigit() for p in parts):
        return None
    at = differ[0]
    indices = [int(p[at]) + k for p, r in zip(parts, runs) for k in range(r.layers)]
    stack, inner = ".".join(parts[0][:at]), ".".join(parts[0][at + 1:])
    return f"{len(indices)} of {stack} ({indices_text(indices)})" + (f", {inner}" if inner else "")


def memory_table(m: MemoryReport) -> Group:
    from rich.console import Group
    from rich.text import Text

    weights = _bytes_table(f"{m.model}: weights ({m.params:,} parameters)")
    for dtype, n in m.weights_bytes.items():
        _row(weights, dtype, n)
    if m.buffers_bytes:
        _row(weights, f"buffers ({', '.join(sorted(m.buffers_by_dtype))}; not parameters)", m.buffers_bytes)
    if m.stored is not None:
        for kind, (tensors, _elements, n) in m.stored.items():
            _row(weights, f"  as stored: {kind} ({tensors:,} tensors)", n)
        _row(weights, "as stored in the GGUF file", m.stored_bytes, True)
    overridden = {k: v for k, v in m.weights_params_by_dtype.items() if k != m.dtype}
    if overridden:
        parts = ", ".join(f"{v:,} at {k}" for k, v in m.weights_params_by_dtype.items())
        _row(weights, f"{m.dtype} with the spec's per-node dtype ({parts})", m.weights_with_overrides, True)
    train = _bytes_table(f"training state: {m.optimizer}, {m.precision} precision "
                         f"({m.bytes_per_param:g} bytes/param)")
    for part, n in m.training.items():
        _row(train, part.replace("_", " "), n)
    _row(train, "total (no activations)", m.training_bytes, True)
    sizes = ", ".join(f"{k}={v}" for k, v in m.bindings.items())
    run = _bytes_table(f"at {sizes} ({m.dtype})" + (f"; {m.activation_note}" if m.activation_note else ""))
    _row(run, "activations stored for backward", m.activation_bytes)
    _row(run, "  of which attention probabilities", m.attention_probs_bytes)
    if m.activation_bytes is not None:
        _row(run, "training state + activations", m.training_bytes + m.activation_bytes, True)
    for label, n in cache_rows(m.kv_cache):
        _row(run, label, n)
    if any(e.width for e in m.kv_cache):
        _row(run, "KV cache total", m.kv_cache_bytes, True)
        if m.stored is not None:
            _row(run, "stored weights + KV cache", m.stored_bytes + m.kv_cache_bytes, True)
    if any(e.state for e in m.kv_cache):
        _row(run, "state cache total (state-space and recurrent layers)", m.state_cache_bytes, True)
    notes = Text("\n".join(f"* {v}" for v in m.assumptions.values()), style="dim")
    return Group(weights, train, run, Text("assumptions", style="bold"), notes)
