"""Reading and writing a tensor by index tensors or positions, with torch's semantics: `index`
(x[i, :, j], NumPy's advanced indexing), `index_put` (x[i] = v, or += v), `scatter` and
`scatter_reduce` (x.scatter(dim, index, src)), `select_scatter` and `slice_scatter` (x with one
index or a slice along a dim replaced), `copy` (x's shape and element type with src's values,
broadcast: Tensor.copy_), and `one_hot`.  The functional forms PyTorch lowers in-place writes to
(x[:, 0] = y becomes select_scatter).  FLOPs: one per element written (or combined)."""
from __future__ import annotations

from typing import Literal

from ..dims import equal, fmt, fmt_shape, prod, provably_le
from ..errors import InconclusiveDimError
from .base import Op, Saved, Size, axis, check, expect_dim, invalid, keeps_inputs, op
from .elementwise import broadcast
from .indexing import Slice


def _at_most(a, b, what: str) -> None:
    """a <= b, as torch wants of an index's dims against its input's (equal is the common case)."""
    if equal(a, b):
        return
    order = provably_le(a, b)
    if order is None:
        raise InconclusiveDimError(f"cannot decide whether {what} ({fmt(a)}) is at most {fmt(b)}",
                                   hint="give the symbolic sizes values with --set")
    check(order, f"{what} is {fmt(a)}, more than {fmt(b)}")


def indexed_shape(x, dims: tuple[int, ...], indices: list) -> tuple:
    """The shape of x indexed by index tensors at `dims` (NumPy's advanced indexing, as torch): the
    indices' broadcast shape takes the place of the indexed dims where these are adjacent, and leads
    where they are not."""
    check(len(dims) == len(indices), f"{len(indices)} index inputs for the {len(dims)} dims {list(dims)}")
    check(len(x) >= len(dims), f"{len(dims)} indexed dims for an input {fmt_shape(x)}")
    found = broadcast(*indices)
    if list(dims) == list(range(dims[0], dims[-1] + 1)):
        return (*x[:dims[0]], *found, *x[dims[-1] + 1:])
    return (*found, *(d for i, d in enumerate(x) if i not in dims))


class _Indexed(Op):
    def __post_init__(self):
        if not self.dims or list(self.dims) != sorted(set(self.dims)) or self.dims[0] < 0:
            raise invalid(self, f"dims must list the indexed dims in increasing order, from 0; received "
                                f"{list(self.dims)}")

    def key(self, indices) -> list:
        """The aten op's list of indices: the index tensors at their dims, None (all) elsewhere."""
        out: list = [None] * (self.dims[-1] + 1)
        for d, index in zip(self.dims, indices):
            out[d] = index
        return out


@op("index", aliases=("torch.Tensor.__getitem__", "advanced_indexing", "x[i, j]"), example={"dims": [0, 2]})
class Index(_Indexed):
    """x indexed by integer tensors along `dims`: x[i, :, j] (NumPy's advanced indexing, as torch).

    The index inputs broadcast together; their shape replaces the indexed dims where these are
    adjacent and leads the output where they are not."""

    dims: tuple[int, ...]  # the dims of x the index inputs index, in increasing order

    def saved(self, inputs, outputs, eager):
        return [Saved(input=i, width="index") for i in range(1, len(inputs))]  # the indices

    def infer_shape(self, x, *indices):
        for d in self.dims:
            axis(d, len(x))
        return indexed_shape(x, self.dims, list(indices))

    def forward(self, run, x, *indices):
        return run.torch.ops.aten.index.Tensor(x, self.key(indices))


@op("index_put", aliases=("torch.Tensor.index_put", "x[i] = v", "index_put_"), example={"dims": [0]})
class IndexPut(_Indexed):
    """x with `values` written (or added) at index tensors along `dims`: x[i, :, j] = values.

    `accumulate` adds them (repeated indices add up); the output has x's shape.  With `mask`, one
    boolean index over x's leading dims (x[mask] = value) and values of one row."""

    dims: tuple[int, ...]  # the dims of x the index inputs index, in increasing order
    accumulate: bool = False  # add the values (repeated indices add up) instead of writing them
    mask: bool = False  # the one index is a boolean mask over the leading dims

    def saved(self, inputs, outputs, eager):
        return [Saved(input=i, width="mask" if self.mask else "index") for i in range(2, len(inputs))]

    def infer_shape(self, x, values, *indices):
        if self.mask:
            check(len(indices) == 1 and self.dims == (0,), "a mask index is one index at dim 0")
            (m,) = indices
            check(len(m) <= len(x), f"the mask {fmt_shape(m)} has more dims than the input {fmt_shape(x)}")
            for i, (a, b) in enumerate(zip(m, x)):
                expect_dim(a, b, f"dim {i} of the mask")
            rows = tuple(x[len(m):])  # each masked place takes a row; how many there are depends on the data
            lead = values[:max(len(values) - len(rows), 0)]
            tail = tuple(values[len(lead):])
            check(len(lead) <= 1 and all(equal(v, 1) for v in lead) and broadcast(rows, tail) == rows,
                  f"values {fmt_shape(values)} must be one row {fmt_shape(rows)} for every masked place")
            return tuple(x)
        for d in self.dims:
            axis(d, len(x))
        target = indexed_shape(x, self.dims, list(indices))
        check(broadcast(target, values) == tuple(target), f"values {fmt_shape(values)} do not broadcast to the "
                                                          f"indexed {fmt_shape(target)}")
        return tuple(x)

    def flops(self, inputs, outputs):
        return prod(indexed_shape(inputs[0], self.dims, inputs[2:])) if not self.mask else 0

    def forward(self, run, x, values, *indices):
        return run.torch.ops.aten.index_put(x, self.key(indices), values.to(x.dtype), self.accumulate)


def _scatter_shapes(owner, x, index, src=None) -> tuple:
    """torch's rule for scatter: one rank; the index no larger than src in any dim, nor than x but
    along `dim`; the output has x's shape."""
    d = axis(owner.dim, len(x))
    check(len(index) == len(x), f"the index {fmt_shape(index)} must have the rank of the input {fmt_shape(x)}")
    for i in range(len(x)):
        if src is not None:
            check(len(src) == len(x), f"src {fmt_shape(src)} must have the rank of the input {fmt_shape(x)}")
            _at_most(index[i], src[i], f"dim {i} of the index (against src)")
        if i != d:
            _at_most(index[i], x[i], f"dim {i} of the index (against the input)")
    return tuple(x)


@op("scatter", aliases=("torch.scatter", "torch.Tensor.scatter"), example={"dim": 1})
class Scatter(Op):
    """x with src's values (or the number `value`) written at the index along `dim`.

    As x.scatter(dim, index, src): out[i][index[i][j]] = src[i][j] for dim 1; the output has x's
    shape; where two writes meet, the last wins (as torch, unspecified)."""

    dim: int  # the dimension the index places along
    value: float | None = None  # a number written instead of a src input

    def saved(self, inputs, outputs, eager):
        return keeps_inputs(inputs, 1, width="index")

    def infer_shape(self, x, index, src=None):
        check((src is None) != (self.value is None), "scatter takes a src input or a `value`, not both")
        return _scatter_shapes(self, x, index, src)

    def flops(self, inputs, outputs):
        return 0

    def forward(self, run, x, index, src=None):
        if src is None:
            return x.scatter(self.dim, index, self.value)
        return x.scatter(self.dim, index, src.to(x.dtype))


@op("scatter_reduce", aliases=("torch.scatter_reduce", "torch.Tensor.scatter_reduce", "scatter_max"),
    example={"dim": 1, "reduce": "amax"})
class ScatterReduce(Op):
    """x with src's values combined in at the index along `dim` by `reduce`.

    As x.scatter_reduce(dim, index, src): reduce is sum, prod, mean, amax or amin, x's own values
    taking part or not (`include_self`)."""

    dim: int  # the dimension the index places along
    reduce: Literal["sum", "prod", "mean", "amax", "amin"]  # how values meeting at one place combine
    include_self: bool = True  # x's own value takes part (false: only the values scattered there)

    def saved(self, inputs, outputs, eager):
        return [*keeps_inputs(inputs), Saved(output=0)]  # which value won or how many met: all of them

    def infer_shape(self, x, index, src):
        return _scatter_shapes(self, x, index, src)

    def flops(self, inputs, outputs):
        return prod(inputs[1])

    def forward(self, run, x, index, src):
        return x.scatter_reduce(self.dim, index, src, self.reduce, include_self=self.include_self)


@op("select_scatter", aliases=("torch.select_scatter", "x[:, i] = src"), example={"dim": 1, "index": 0})
class SelectScatter(Op):
    """x with its entry `index` along `dim` replaced by src (x without that dim): x[:, i] = src."""

    dim: int  # the dimension indexed
    index: int  # the position replaced
    keeps = ""

    def infer_shape(self, x, src):
        d = axis(self.dim, len(x))
        if isinstance(x[d], int):
            check(-x[d] <= self.index < x[d], f"index {self.index} is out of range for size {x[d]}")
        want = (*x[:d], *x[d + 1:])
        check(len(src) == len(want) and all(equal(a, b) for a, b in zip(src, want)),
              f"src {fmt_shape(src)} must be the selected part {fmt_shape(want)}")
        return tuple(x)

    def flops(self, inputs, outputs):
        return 0

    def forward(self, run, x, src):
        return run.torch.select_scatter(x, src.to(x.dtype), self.dim, self.index)


@op("slice_scatter", aliases=("torch.slice_scatter", "x[:, a:b] = src"), example={"dim": 1, "start": 0, "end": 4})
class SliceScatter(Op):
    """x with its slice start:end:step along `dim` replaced by src: x[:, a:b] = src."""

    dim: int  # the dimension sliced
    start: Size | None = None  # first index replaced (default 0; negative counts from the end)
    end: Size | None = None  # index after the last replaced (default: the end)
    step: int = 1  # every step-th index
    keeps = ""

    def infer_shape(self, x, src):
        want = Slice(dim=self.dim, start=self.start, end=self.end, step=self.step).infer_shape(x)
        check(len(src) == len(want) and all(equal(a, b) for a, b in zip(src, want)),
              f"src {fmt_shape(src)} must be the slice's shape {fmt_shape(want)}")
        return tuple(x)

    def flops(self, inputs, outputs):
        return 0

    def forward(self, run, x, src):
        start = None if self.start is None else int(self.start)
        end = None if self.end is None else int(self.end)
        return run.torch.slice_scatter(x, src.to(x.dtype), self.dim, start, end, self.step)


@op("copy", aliases=("torch.Tensor.copy_", "copy_", "expand_as"))
class Copy(Op):
    """src's values in x's shape and element type (as x.copy_(src) leaves x)."""

    keeps = ""

    def infer_shape(self, x, src):
        out = broadcast(x, src)
        check(len(out) == len(x) and all(equal(a, b) for a, b in zip(out, x)),
              f"src {fmt_shape(src)} must broadcast to {fmt_shape(x)}")
        return tuple(x)

    def forward(self, run, x, src):
        return src.to(x.dtype).expand(x.shape).clone()


@op("one_hot", aliases=("F.one_hot", "torch.nn.functional.one_hot"), example={"num_classes": 10})
class OneHot(Op):
    """Integer classes as one-hot rows: [...] -> [..., num_classes] of int64, 1 at each class (F.one_hot)."""

    num_classes: int  # the width of a row (each class below it)
    keeps, differentiable = "", False

    def __post_init__(self):
        if self.num_classes <= 0:
            raise invalid(self, f"num_classes must be positive; received {self.num_classes} (torch's -1, "
                                "the largest class plus one, depends on the data)")

    def infer_shape(self, x):
        return (*x, self.num_classes)

    def flops(self, inputs, outputs):
        return 0

    def forward(self, run, x):
        return run.F.one_hot(x, self.num_classes)

