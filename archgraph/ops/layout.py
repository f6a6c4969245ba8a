"""Rearranging a tensor's elements without arithmetic, with torch's names: `flip`, `repeat`
(Tensor.repeat, the tile), `stack` and `unbind` (several tensors along a new dim and back),
`diagonal`, and `as_strided` (a view by sizes and strides over a contiguous input).  No FLOPs;
`unbind`, `diagonal` and `as_strided` are views; none keeps anything for backward."""
from __future__ import annotations

from ..dims import fmt, fmt_shape, maximum, minimum, norm, prod
from .base import Op, Size, axis, check, expect_dim, invalid, op


@op("flip", aliases=("torch.flip", "reverse"), example={"dims": [-1]})
class Flip(Op):
    """The order of the entries along each of `dims` reversed (torch.flip)."""

    dims: tuple[int, ...]  # the dims reversed
    keeps = ""

    def infer_shape(self, x):
        picked = [axis(d, len(x)) for d in self.dims]
        check(len(set(picked)) == len(picked), f"dims {list(self.dims)} names a dim twice")
        return tuple(x)

    def forward(self, run, x):
        return run.torch.flip(x, list(self.dims))


@op("repeat", aliases=("torch.Tensor.repeat", "tile", "torch.tile"), example={"repeats": [1, 2, 1]})
class Repeat(Op):
    """The tensor tiled `repeats[i]` times along each dim i (Tensor.repeat): [2, 3] by [2, 1, 2] is
    [2, 2, 6]; more repeats than dims add leading dims."""

    repeats: tuple[Size, ...]  # copies along each dim (leading extra ones add dims)
    keeps = ""

    def __post_init__(self):
        if any(isinstance(r, int) and r <= 0 for r in self.repeats):
            raise invalid(self, f"repeats must be positive; received {list(map(fmt, self.repeats))}")

    def infer_shape(self, x):
        extra = len(self.repeats) - len(x)
        check(extra >= 0, f"repeats {list(map(fmt, self.repeats))} name fewer dims than the input {fmt_shape(x)}")
        return (*self.repeats[:extra], *(norm(d * r) for d, r in zip(x, self.repeats[extra:])))

    def forward(self, run, x):
        return x.repeat(*[int(r) for r in self.repeats])


@op("stack", aliases=("torch.stack",), example={"dim": 0})
class Stack(Op):
    """Its inputs (of one shape) side by side along a new dim at `dim` (torch.stack): n of [a, b]
    stacked at dim 1 are [a, n, b]."""

    dim: int = 0  # where the new dimension goes
    keeps = ""

    def infer_shape(self, first, *rest):
        for other in rest:
            check(len(other) == len(first), f"cannot stack {fmt_shape(first)} and {fmt_shape(other)}")
            for i, (a, b) in enumerate(zip(first, other)):
                expect_dim(b, a, f"dim {i} of a stacked input")
        d = axis(self.dim, len(first) + 1)
        return (*first[:d], 1 + len(rest), *first[d:])

    def forward(self, run, first, *rest):
        return run.torch.stack([first, *rest], dim=self.dim)


@op("unbind", aliases=("torch.unbind", "unstack"), example={"dim": 0})
class Unbind(Op):
    """One output per entry along `dim`, that dim removed (q, k, v = qkv.unbind(2)).

    As torch.unbind; the dim's size must be a number (it is the number of outputs)."""

    dim: int = 0  # the dimension taken apart
    keeps = ""

    def infer_shape(self, x):
        d = axis(self.dim, len(x))
        check(isinstance(x[d], int), f"unbind along dim {self.dim} of {fmt_shape(x)}: the number of outputs "
                                     "must be a number, not a symbolic size")
        part = (*x[:d], *x[d + 1:])
        return [part] * x[d]

    def forward(self, run, x):
        return run.torch.unbind(x, self.dim)


@op("diagonal", aliases=("torch.diagonal", "torch.diag"), example={"offset": 0, "dim1": -2, "dim2": -1})
class Diagonal(Op):
    """The diagonal of the planes of dims dim1 and dim2 (torch.diagonal).

    `offset` picks a diagonal above the main one (below when negative); the two dims are removed
    and the diagonal's length appended last."""

    offset: int = 0  # which diagonal: 0 the main one, 1 above it, -1 below
    dim1: int = 0  # the first dim of the planes
    dim2: int = 1  # the second dim of the planes
    keeps = ""

    def infer_shape(self, x):
        a, b = axis(self.dim1, len(x), "dim1"), axis(self.dim2, len(x), "dim2")
        check(a != b, f"dim1 and dim2 name one dim ({self.dim1}, {self.dim2})")
        if self.offset >= 0:
            length = maximum(minimum(x[a], x[b] - self.offset), 0)
        else:
            length = maximum(minimum(x[a] + self.offset, x[b]), 0)
        check(not (isinstance(length, int) and length == 0), f"diagonal {self.offset} of {fmt_shape(x)} is empty")
        return (*(d for i, d in enumerate(x) if i not in (a, b)), length)

    def forward(self, run, x):
        return run.torch.diagonal(x, self.offset, self.dim1, self.dim2)


@op("as_strided", aliases=("torch.as_strided", "torch.Tensor.as_strided"),
    example={"size": [2, 3], "stride": [1, 2]})
class AsStrided(Op):
    """A view of `size` by strides over the input's elements in row-major order.

    Element (i, j, ...) is the input's flat element storage_offset + i·stride[0] + j·stride[1] + ...
    (torch.as_strided of a contiguous tensor)."""

    size: tuple[Size, ...]  # the output's shape
    stride: tuple[Size, ...]  # the step in the flat input for each output dim
    storage_offset: Size = 0  # the flat position of the first element
    keeps = ""

    def __post_init__(self):
        if len(self.size) != len(self.stride):
            raise invalid(self, f"size {list(map(fmt, self.size))} and stride {list(map(fmt, self.stride))} "
                                "must have one entry each per dim")

    def infer_shape(self, x):
        check(all(not (isinstance(s, int) and s < 0) for s in self.stride), "strides must not be negative")
        reach = self.storage_offset + sum((n - 1) * s for n, s in zip(self.size, self.stride))
        total = prod(x)
        if isinstance(reach, int) and isinstance(total, int):
            check(reach < total, f"size {list(self.size)} and stride {list(self.stride)} reach element {reach} "
                                 f"of an input of {total}")
        return tuple(self.size)

    def forward(self, run, x):
        return x.contiguous().as_strided([int(s) for s in self.size], [int(s) for s in self.stride],
                                         int(self.storage_offset))

