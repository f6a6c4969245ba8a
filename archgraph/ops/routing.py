"""Picking and placing tokens by index, with torch's semantics: `topk`, `sort`, `median`, `gather`, `index_select`,
`scatter_add`, `index_add`, and `bucketize` (the index of each value among sorted boundaries).
Mixture-of-Depths, expert capacity and token dropping are these ops around a block call: score,
take the top k, gather them, run the block, scatter-add back.
"""
from __future__ import annotations

from ..dims import fmt_shape, prod
from .base import Op, Saved, Size, axis, check, expect_dim, expect_rank, invalid, keeps_inputs, op


@op("topk", aliases=("torch.topk", "top_k"), example={"k": 8, "dim": -1})
class TopK(Op):
    """The k largest (or smallest) along `dim`: values and (output 1) their indices, each with
    that dim of size k; k may be a symbolic size (capacity S // 8)."""

    k: Size  # how many to keep (may be a symbolic size)
    dim: int = -1  # the dimension searched
    largest: bool = True  # the largest k (false: the smallest)
    sorted: bool = True  # the k values in order

    def __post_init__(self):
        if isinstance(self.k, int) and self.k <= 0:
            raise invalid(self, f"k must be positive; received {self.k}")

    def infer_shape(self, x):
        d = axis(self.dim, len(x))
        if isinstance(x[d], int) and isinstance(self.k, int):
            check(self.k <= x[d], f"k={self.k} is more than the {x[d]} entries of dim {self.dim}")
        out = (*x[:d], self.k, *x[d + 1:])
        return [out, out]

    def flops(self, inputs, outputs):
        return prod(inputs[0])

    def saved(self, inputs, outputs, eager):
        return [Saved(output=1, width="index")]  # where each value came from

    def forward(self, run, x):
        found = run.torch.topk(x, int(self.k), dim=self.dim, largest=self.largest, sorted=self.sorted)
        return found.values, found.indices


@op("gather", aliases=("torch.gather", "take_along_dim"), example={"dim": 1})
class Gather(Op):
    """torch.gather(x, dim, index): out[i][j][k] = x[i][index[i][j][k]][k] for dim 1; the output
    has the index's shape, which matches x's in every other dim (or is smaller)."""

    dim: int  # the dimension the index picks along

    def infer_shape(self, x, index):
        check(len(index) == len(x), f"the index {fmt_shape(index)} must have the rank of the input {fmt_shape(x)}")
        d = axis(self.dim, len(x))
        for i, (a, b) in enumerate(zip(index, x)):
            if i != d:
                expect_dim(a, b, f"dim {i} of the index (torch also allows smaller; archgraph wants equal)")
        return tuple(index)

    def saved(self, inputs, outputs, eager):
        return keeps_inputs(inputs, 1, width="index")

    def forward(self, run, x, index):
        return run.torch.gather(x, self.dim, index)


@op("index_select", aliases=("torch.index_select",), example={"dim": 1})
class IndexSelect(Op):
    """torch.index_select(x, dim, index): the entries of a 1-D index along `dim`; or, with `indices`
    and no index input, the entries at those constant positions, in that order and repeated as they
    repeat (x[:, [2, 0, 0]]: LLaVA's feature layers put side by side in the config's order)."""

    dim: int  # the dimension the index picks along
    indices: tuple[int, ...] | None = None  # constant positions to pick, in order, instead of an index input

    def infer_shape(self, x, index=None):
        d = axis(self.dim, len(x))
        if self.indices is None:
            check(index is not None, "index_select needs an index input, or constant `indices`")
            expect_rank(index, 1, "index")
            return (*x[:d], index[0], *x[d + 1:])
        check(index is None, "index_select takes an index input or constant `indices`, not both")
        check(len(self.indices) > 0, "`indices` must name at least one position")
        if isinstance(x[d], int):
            bad = [k for k in self.indices if not -x[d] <= k < x[d]]
            check(not bad, f"indices {bad} are outside dim {self.dim} of size {x[d]}")
        return (*x[:d], len(self.indices), *x[d + 1:])

    def saved(self, inputs, outputs, eager):
        return keeps_inputs(inputs, 1, width="index")

    def forward(self, run, x, index=None):
        if index is None:
            index = run.torch.tensor(self.indices, dtype=run.torch.long, device=x.device) % x.shape[self.dim]
        return run.torch.index_select(x, self.dim, index)


@op("scatter_add", aliases=("torch.scatter_add", "torch.Tensor.scatter_add"), example={"dim": 1})
class ScatterAdd(Op):
    """x.scatter_add(dim, index, src): x with src added at the index positions along `dim`
    (index and src of the same shape, as in torch); the output has x's shape."""

    dim: int  # the dimension the index places along

    def infer_shape(self, x, index, src):
        check(len(index) == len(x) == len(src), f"input {fmt_shape(x)}, index {fmt_shape(index)} and src "
                                                f"{fmt_shape(src)} must have the same rank")
        d = axis(self.dim, len(x))
        for i, (a, b) in enumerate(zip(index, src)):
            expect_dim(a, b, f"dim {i} of the index (that of src)")
            if i != d:
                expect_dim(a, x[i], f"dim {i} of the index (that of the input)")
        return tuple(x)

    def flops(self, inputs, outputs):
        return prod(inputs[2])

    def saved(self, inputs, outputs, eager):
        return keeps_inputs(inputs, 1, width="index")

    def forward(self, run, x, index, src):
        return x.scatter_add(self.dim, index, src)


@op("index_add", aliases=("torch.index_add", "torch.Tensor.index_add"), example={"dim": 1})
class IndexAdd(Op):
    """x.index_add(dim, index, source): source's slices added to x at a 1-D index along `dim`."""

    dim: int  # the dimension the index places along

    def infer_shape(self, x, index, source):
        expect_rank(index, 1, "index")
        d = axis(self.dim, len(x))
        check(len(source) == len(x), f"source {fmt_shape(source)} must have the rank of the input {fmt_shape(x)}")
        expect_dim(source[d], index[0], f"dim {d} of the source (the index's length)")
        for i in range(len(x)):
            if i != d:
                expect_dim(source[i], x[i], f"dim {i} of the source")
        return tuple(x)

    def flops(self, inputs, outputs):
        return prod(inputs[2])

    def saved(self, inputs, outputs, eager):
        return keeps_inputs(inputs, 1, width="index")

    def forward(self, run, x, index, source):
        return x.index_add(self.dim, index, source)


@op("sort", aliases=("torch.sort", "argsort"), example={"dim": -1})
class Sort(Op):
    """Sort along a dimension: values sorted along `dim` (descending with `descending`) and (output 1) their indices: both
    the input's shape."""

    dim: int = -1  # the dimension sorted
    descending: bool = False  # largest first
    stable: bool = False  # equal values keep their order

    def infer_shape(self, x):
        axis(self.dim, len(x))
        return [tuple(x), tuple(x)]

    def flops(self, inputs, outputs):
        return prod(inputs[0])

    def saved(self, inputs, outputs, eager):
        return [Saved(output=1, width="index")]  # where each value came from

    def forward(self, run, x):
        found = run.torch.sort(x, dim=self.dim, descending=self.descending, stable=self.stable)
        return found.values, found.indices


@op("median", aliases=("torch.median",), example={"dim": -1})
class Median(Op):
    """The median along `dim` (torch.median): the lower of the two middle values when the count is
    even; values and (output 1) the index of one such value, `dim` removed (kept as 1 with
    `keepdim`); with no `dim`, the median of every value, one 0-d output."""

    dim: int | None = None  # the dimension reduced (null: all of them)
    keepdim: bool = False  # keep the reduced dimension, of size 1

    def infer_shape(self, x):
        if self.dim is None:
            return ()
        d = axis(self.dim, len(x))
        out = (*x[:d], 1, *x[d + 1:]) if self.keepdim else (*x[:d], *x[d + 1:])
        return [out, out]

    def flops(self, inputs, outputs):
        return prod(inputs[0])  # a selection, counted as sort counts

    def saved(self, inputs, outputs, eager):
        return keeps_inputs(inputs, 0) if self.dim is None else [Saved(output=1, width="index")]

    def forward(self, run, x):
        if self.dim is None:
            return run.torch.median(x)
        found = run.torch.median(x, dim=self.dim, keepdim=self.keepdim)
        return found.values, found.indices


@op("bucketize", aliases=("torch.bucketize", "searchsorted", "digitize"))
class Bucketize(Op):
    """The bucket of each value among sorted boundaries (torch.bucketize).

    The index of the first boundary (a 1-D input) at least the value (with `right`, greater than
    it), the input's shape, int64 (int32 with `out_int32`).  NaViT's position buckets:
    bucketize(arange(h) / h, boundaries)."""

    right: bool = False  # a value equal to a boundary goes to the bucket after it
    out_int32: bool = False  # int32 indices instead of int64

    keeps, differentiable = "", False

    def infer_shape(self, x, boundaries):
        expect_rank(boundaries, 1, "boundaries")
        return tuple(x)

    def flops(self, inputs, outputs):
        return prod(outputs[0])  # one search a value, counted as sort counts

    def forward(self, run, x, boundaries):
        return run.torch.bucketize(x, boundaries, right=self.right, out_int32=self.out_int32)
