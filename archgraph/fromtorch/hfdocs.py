"""An input's shape as the model's own documentation writes it: transformers documents each
parameter of a forward as `name (`torch.Tensor` of shape `(batch_size, 1, sequence_length)`)`,
and the example input is made at that shape, each dim read by its name:

| dim | size |
|---|---|
| a number (`3`, `1`) | that number |
| `batch_size`, `num_images`, `num_audios`, `num_videos` ... (a count of examples) | 2 (the batch) |
| a key of the config (`n_mel_bins`, `hidden_size`, `config.n_docs`), or `mel_bins`, `channels` | the config's value |
| a product (`batch_size * config.n_docs`) | the product of its factors' sizes |
| `height`, `width`, `image_size` | the config's image size |
| anything else (`sequence_length`, `time_steps`, `max_num_frames`, `grid_height`) | 16 |

A `LongTensor`'s values (and any `*_ids`) are ids below every vocabulary the config names (`*vocab_size`); a mask
(`*_mask`) is ones; anything else N(0, 1).  Where the docstring gives no shape, nothing is made.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

import torch

from .hflayouts import BATCH, TOKENS
_SHAPE = r"\(\s*`?(?:torch\.)?(?P<kind>\w*)`?\s+of shape\s+`?\((?P<dims>[^)]*)\)"
_EXAMPLES = re.compile(r"^(batch(_size)?|num_(images|audios|videos|samples|sequences|examples))$")
_ALIASES = {"mel_bins": ("num_mel_bins", "n_mel_bins", "mel_bins"), "channels": ("num_channels", "in_channels"),
            "num_channels": ("num_channels", "in_channels")}


def documented(method: Callable, name: str, config, find: Callable) -> torch.Tensor | None:
    """Input `name` of `method` at the shape its docstring writes, or None where it writes none."""
    m = re.search(rf"(?m)^\s*{re.escape(name)}\s*{_SHAPE}", method.__doc__ or "")
    if m is None:
        return None
    shape = tuple(_size(d.strip(), config, find) for d in m["dims"].split(",") if d.strip())
    if not shape or any(s is None for s in shape):
        return None
    generator = torch.Generator().manual_seed(0)
    if name.endswith("_mask"):
        return torch.ones(shape, dtype=torch.int64)
    if m["kind"] in ("LongTensor", "IntTensor") or name.endswith("_ids"):
        return torch.randint(0, _smallest_vocabulary(config), shape, generator=generator)
    return torch.randn(shape, generator=generator)


def _size(dim: str, config, find: Callable) -> int | None:
    """One dim of a documented shape (see the module docstring); None for one no rule reads (`n + 1`)."""
    dim = dim.strip().removeprefix("config.")
    if "*" in dim:  # a product (RAG's `batch_size * config.n_docs`): of its factors' sizes
        factors = [_size(f, config, find) for f in dim.split("*")]
        return None if None in factors else math.prod(factors)
    if dim.isdigit():
        return int(dim)
    if not re.fullmatch(r"[A-Za-z_]\w*", dim):
        return None
    if _EXAMPLES.match(dim):
        return BATCH
    value = find(config, *_ALIASES.get(dim, (dim,)))
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if dim in ("height", "width", "image_size"):
        size = find(config, "image_size")
        return size if isinstance(size, int) and size > 0 else 224
    return TOKENS


def _smallest_vocabulary(config) -> int:
    """The least of the config's vocabularies (`vocab_size`, `mel_vocab_size`, ...), any depth."""
    sizes = [v for k, v in _values(config) if str(k).endswith("vocab_size") and isinstance(v, int) and v > 0]
    return min(sizes) if sizes else 2


def _values(config) -> list[tuple[str, Any]]:
    out = []
    for key, value in (config.to_dict() if hasattr(config, "to_dict") else {}).items():
        out += _nested(key, value)
    return out


def _nested(key: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _nested(k, v)]
    return [(key, value)]
