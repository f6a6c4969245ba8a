"""Running reductions along one dim with torch's names (cumsum is in `math`): `cumprod` (the running
product) and `logcumsumexp` (the log of the running sum of exponentials, computed stably: the
log-space gates of linear-attention and xLSTM layers)."""
from __future__ import annotations

from ..dims import prod
from .base import Op, axis, keeps_output, op


class _Scan(Op):
    dim: int  # the dimension scanned along

    def infer_shape(self, x):
        axis(self.dim, len(x))
        return tuple(x)

    def flops(self, inputs, outputs):
        return self.per_value * prod(outputs[0])

    per_value = 1


@op("cumprod", aliases=("torch.cumprod", "cumulative_product"), example={"dim": -1})
class CumProd(_Scan):
    """Running product along `dim` (torch.cumprod)."""

    dim: int  # the dimension multiplied along

    def forward(self, run, x):
        return run.torch.cumprod(x, dim=self.dim)


@op("logcumsumexp", aliases=("torch.logcumsumexp",), example={"dim": -1})
class LogCumSumExp(_Scan):
    """log(cumsum(exp(x))) along `dim`, without overflow (torch.logcumsumexp)."""

    dim: int  # the dimension summed along
    per_value = 4  # an exponential, a sum, a logarithm and the running maximum that keeps it stable

    def saved(self, inputs, outputs, eager):
        return [*super().saved(inputs, outputs, eager), *keeps_output()]  # the input and the output

    def forward(self, run, x):
        return run.torch.logcumsumexp(x, dim=self.dim)
