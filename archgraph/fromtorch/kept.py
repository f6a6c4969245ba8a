"""A module's state kept across the runs an import makes of it."""
from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def state_kept(module: torch.nn.Module):
    """Inside, running `module` may set its modules' attributes and buffers (a table cached by
    sequence length: CLVP's rotary `cached_rotary_positional_embedding`); after, each has the value
    it had before, and a tensor it cached in a new attribute is gone.  The runs an import makes (counting an image's features, the eager run whose
    numbers a trace replays, the run telling why an export failed, the export itself) so leave no
    cached tensor, of the meta device or of a trace's fake values, for the next to read as a constant."""
    saved = [(m, dict(m.__dict__), dict(m._buffers)) for m in module.modules()]
    try:
        yield
    finally:
        for m, attributes, buffers in saved:
            for name in [k for k, v in m.__dict__.items() if k not in attributes and _holds_tensor(v)]:
                del m.__dict__[name]  # a cache made by the run; a flag it set stays (transformers'
            m.__dict__.update(attributes)  # _output_capturing_hooks_installed: its hooks stay too)
            m._buffers.clear()
            m._buffers.update(buffers)


def _holds_tensor(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    return isinstance(value, torch.Tensor)
