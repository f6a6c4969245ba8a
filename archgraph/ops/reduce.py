"""Reductions over dimensions, as torch names them: `mean`, `sum`, `amax` (dim, keepdim)."""
from __future__ import annotations

from ..dims import prod
from .base import Op, axis, check, op


class _Reduce(Op):
    """Reduce over `dim` (one, a list, or all when absent); `keepdim` keeps them with size 1."""

    def _dims(self, rank: int) -> set[int]:
        if self.dim is None:
            return set(range(rank))
        dims = (self.dim,) if isinstance(self.dim, int) else self.dim
        out = {axis(d, rank) for d in dims}
        check(len(out) == len(dims), f"dim {list(dims)} names a dimension twice")
        return out

    def infer_shape(self, x):
        dims = self._dims(len(x))
        if self.keepdim:
            return tuple(1 if i in dims else d for i, d in enumerate(x))
        return tuple(d for i, d in enumerate(x) if i not in dims)

    def flops(self, inputs, outputs):
        return prod(inputs[0])


@op("mean", aliases=("torch.mean", "average"), example={"dim": 1})
class Mean(_Reduce):
    """Mean over `dim` (z.mean(1): [B, N, D] -> [B, D]); all dims when `dim` is absent."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) averaged; none: all
    keepdim: bool = False  # keep the reduced dims with size 1

    keeps = ""

    def forward(self, run, x):
        return x.mean() if self.dim is None else x.mean(dim=self.dim, keepdim=self.keepdim)


@op("sum", aliases=("torch.sum",), example={"dim": -1, "keepdim": True})
class Sum(_Reduce):
    """Sum over `dim`; all dims when `dim` is absent."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) summed; none: all
    keepdim: bool = False  # keep the reduced dims with size 1

    keeps = ""

    def forward(self, run, x):
        return x.sum() if self.dim is None else x.sum(dim=self.dim, keepdim=self.keepdim)


@op("amax", aliases=("torch.amax", "torch.max", "max_over"), example={"dim": 1})
class AMax(_Reduce):
    """Maximum over `dim` (torch.amax: the values, no indices); all dims when `dim` is absent."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) reduced; none: all
    keepdim: bool = False  # keep the reduced dims with size 1

    def forward(self, run, x):
        return x.amax() if self.dim is None else x.amax(dim=self.dim, keepdim=self.keepdim)


@op("argmax", aliases=("torch.argmax", "Tensor.argmax"), example={"dim": -1})
class ArgMax(_Reduce):
    """The index of the largest value: along `dim` (torch.argmax), the dim dropped or (`keepdim`) kept
    with size 1.  A mask counts as 0 and 1 (torch wants the `.int()` first), so the argmax of
    `input_ids == eos` is the first end-of-text token: CLIP's text pooling."""

    dim: int = -1  # the dimension searched
    keepdim: bool = False  # keep that dim with size 1

    keeps = ""
    differentiable = False

    def infer_shape(self, x):
        check(len(x) > 0, "argmax needs a dim to search; received a single value")
        return super().infer_shape(x)

    def forward(self, run, x):
        if x.dtype == run.torch.bool:
            x = x.int()
        return x.argmax(dim=self.dim, keepdim=self.keepdim)
