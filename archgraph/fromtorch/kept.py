"""A module's state kept across the runs an import makes of it."""
from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def state_kept(module: torch.nn.Module):
    """Inside, running `module` may set its modules' attributes and buffers (a table cached by
    sequence length: CLVP's rotary `cached_rotary_positional_embedding`); after, each has the value
    it had before.  The runs an import makes (counting an image's features, the eager run whose
    numbers a trace replays, the run telling why an export failed, the export itself) so leave no
    cached tensor, of the meta device or of a trace's fake values, for the next to read as a constant."""
    saved = [(m, dict(m.__dict__), dict(m._buffers)) for m in module.modules()]
    try:
        yield
    finally:
        for m, attributes, buffers in saved:
            for name in [k for k in m.__dict__ if k not in attributes]:
                del m.__dict__[name]
            m.__dict__.update(attributes)
            m._buffers.clear()
            m._buffers.update(buffers)
