"""Checkpoint headers and spec-versus-checkpoint comparisons as tables and JSON documents."""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..checkpoint import Checkpoint
from ..passes.checkpoint import Comparison
from .text import human, num

MAX_ROWS = 20  # per kind of difference in the table; --json lists all


def _shape(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _size(n: int) -> str:
    for unit, size in (("TB", 10 ** 12), ("GB", 10 ** 9), ("MB", 10 ** 6), ("kB", 10 ** 3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


def checkpoint_table(ckpt: Checkpoint) -> Group:
    files = f"{len(ckpt.files)} file{'s' if len(ckpt.files) != 1 else ''}"
    title = Text(f"{ckpt.path}: {num(len(ckpt.tensors))} tensors in {files}, by dtype", style="italic")
    table = Table()
    table.add_column("Dtype")
    table.add_column("Tensors", justify="right")
    table.add_column("Elements", justify="right")
    table.add_column("Bytes", justify="right")
    for dtype, c in ckpt.by_dtype.items():
        table.add_row(dtype, num(c.tensors), num(c.elements), num(c.bytes))
    totals = Table(show_header=False, box=None, padding=(0, 2))
    totals.add_column()
    totals.add_column(justify="right")
    totals.add_column()
    totals.add_row("Total elements", num(ckpt.total_elements), human(ckpt.total_elements))
    totals.add_row("Total bytes", num(ckpt.total_bytes), _size(ckpt.total_bytes))
    parts: list = [title, table, totals,
                   Text("  from the headers: tensors as stored (a tied tensor saved once counts once; "
                        "buffers included)", style="dim")]
    parts += [Text(f"  note: {note}", style="yellow") for note in ckpt.notes]
    return Group(*parts)


def checkpoint_json(ckpt: Checkpoint) -> dict[str, Any]:
    tensors = []
    for name, t in ckpt.tensors.items():
        entry: dict[str, Any] = {"name": name, "dtype": t.dtype, "shape": list(t.shape),
                                 "elements": t.elements, "bytes": t.nbytes}
        if name in ckpt.shard_of:
            entry["file"] = ckpt.shard_of[name]
        tensors.append(entry)
    return {"checkpoint": str(ckpt.path), "files": [str(f) for f in ckpt.files],
            "tensor_count": len(ckpt.tensors), "total_elements": ckpt.total_elements,
            "total_bytes": ckpt.total_bytes,
            "by_dtype": {d: {"tensors": c.tensors, "elements": c.elements, "bytes": c.bytes}
                         for d, c in ckpt.by_dtype.items()},
            "metadata": ckpt.metadata, "notes": ckpt.notes, "tensors": tensors}


def check_table(r: Comparison) -> Group:
    parts: list = []
    if r.differences:
        parts.append(Text(f"{r.model} against {r.checkpoint.path}: {_count(r.differences, 'difference')}",
                          style="italic"))
        table = Table()
        for col in ("Tensor", "Problem", "Spec", "Checkpoint"):
            table.add_column(col, no_wrap=col == "Tensor")
        rows = [[(n, "missing from the checkpoint", _shape(s), "—") for n, s in r.missing],
                [(n, "not in the spec", "—", f"{t.dtype} {_shape(t.shape)}") for n, t in r.extra],
                [(n, "wrong shape", _shape(s), f"{t.dtype} {_shape(t.shape)}") for n, s, t in r.wrong_shape]]
        for kind in rows:
            for row in kind[:MAX_ROWS]:
                table.add_row(*row)
            if len(kind) > MAX_ROWS:
                table.add_row(Text(f"... {len(kind) - MAX_ROWS} more {kind[0][1]} (--json lists all)",
                                   style="dim"), "", "", "")
        parts.append(table)
    parts.append(_summary(r))
    return Group(*parts)


def _count(n: int, word: str) -> str:
    return f"{num(n)} {word}{'' if n == 1 else 's'}"


def _summary(r: Comparison) -> Table:
    t = Table(show_header=False, box=None, padding=(0, 2))
    t.add_column()
    t.add_column()
    spec = f"{_count(r.spec_tensors, 'tensor')}, {num(r.spec_params)} params"
    if r.stored_once:
        spec += f" ({_count(len(r.stored_once), 'tied tensor')} stored once in the checkpoint: " + \
                ", ".join(f"{a} = {b}" for a, b in r.stored_once[:3]) + (", ..." if len(r.stored_once) > 3
                                                                        else "") + ")"
    ckpt = f"{_count(len(r.checkpoint.tensors), 'tensor')}, {num(r.checkpoint_params)} elements"
    if r.buffers:
        ckpt += f" + {num(r.checkpoint_buffers)} in {_count(len(r.buffers), 'buffer')}"
    t.add_row(f"spec {r.model}", spec)
    t.add_row(f"checkpoint {r.checkpoint.path}", ckpt)
    if r.renamed:
        t.add_row("renamed", f"{_count(len(r.renamed), 'checkpoint name')} by the prefix options")
    if r.buffers_absent:
        names = ", ".join(n for n, _ in r.buffers_absent[:3]) + (", ..." if len(r.buffers_absent) > 3 else "")
        t.add_row("not saved", f"{_count(len(r.buffers_absent), 'spec buffer')} ({names}); "
                  "fine for buffers that are not persistent")
    if r.agree:
        t.add_row(Text("result", style="bold"), Text("agree: every tensor is in both, with the same shape",
                                                     style="bold green"))
    else:
        kinds = [(len(r.missing), "missing"), (len(r.extra), "not in the spec"),
                 (len(r.wrong_shape), "wrong shape")]
        t.add_row(Text("result", style="bold"),
                  Text("differ: " + ", ".join(f"{num(n)} {k}" for n, k in kinds if n), style="bold red"))
    h = r.prefix_hint
    if h is not None:
        gone = "every difference goes away" if h.after == 0 else \
            f"{num(h.before - h.after)} of the {num(h.before)} differences go away"
        how = "lack" if h.option == "--add-prefix" else "carry"
        t.add_row(Text("hint", style="bold yellow"),
                  f"the checkpoint's names {how} the prefix '{h.prefix}': with {h.option} {h.prefix} {gone}")
    return t


def check_json(r: Comparison) -> dict[str, Any]:
    h = r.prefix_hint
    return {
        "model": r.model, "checkpoint": str(r.checkpoint.path), "agree": r.agree,
        "spec": {"tensors": r.spec_tensors, "params": r.spec_params},
        "checkpoint_totals": {"tensors": len(r.checkpoint.tensors), "params": r.checkpoint_params,
                              "buffers": r.checkpoint_buffers},
        "missing": [{"name": n, "shape": list(s)} for n, s in r.missing],
        "extra": [{"name": n, "dtype": t.dtype, "shape": list(t.shape)} for n, t in r.extra],
        "wrong_shape": [{"name": n, "spec": list(s), "checkpoint": list(t.shape), "dtype": t.dtype}
                        for n, s, t in r.wrong_shape],
        "stored_once": [{"name": a, "stored_as": b} for a, b in r.stored_once],
        "buffers": r.buffers,
        "buffers_not_saved": [{"name": n, "shape": list(s)} for n, s in r.buffers_absent],
        "renamed": r.renamed,
        "prefix_hint": None if h is None else {"option": h.option, "prefix": h.prefix,
                                                "differences": h.before, "with_option": h.after},
    }
