"""Every aten rule: importing this module registers the rules of each family into `aten.TABLE`
(the plumbing and arithmetic of `aten` itself, the ops that hold tensors in `layers`, the
elementwise ops and reductions in `pointwise`, indexing, writes and rearranging in `indexing`,
convolutions, pooling, padding, resampling and the native norms in `spatial`, grid sampling,
folding, distances and embedding bags in `sampling`, Fourier transforms in `fft`)."""
from __future__ import annotations

from . import fft, indexing, layers, pointwise, sampling, spatial  # noqa: F401  (importing registers their rules)
from .aten import REFUSED, SKIP, TABLE

__all__ = ["REFUSED", "SKIP", "TABLE"]
