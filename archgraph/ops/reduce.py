"""Reductions over dimensions, as torch names them (dim: one, a list, or all when absent; keepdim):
`mean`, `sum`, `prod`, `amax`, `amin`, `argmax`, `argmin`, `max` and `min` (values and indices),
`any`, `all`, `var`, `std`, `logsumexp`, `vector_norm`; and `normalize` (x over its norm along a
dim, F.normalize).  FLOPs: one per input element (three for var and std, four for logsumexp)."""
from __future__ import annotations

from ..dims import prod
from .base import Op, Saved, axis, check, invalid, keeps_own, op


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


@op("amax", aliases=("torch.amax", "max_over"), example={"dim": 1})
class AMax(_Reduce):
    """Maximum over `dim` (torch.amax: the values, no indices); all dims when `dim` is absent."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) reduced; none: all
    keepdim: bool = False  # keep the reduced dims with size 1

    def forward(self, run, x):
        return x.amax() if self.dim is None else x.amax(dim=self.dim, keepdim=self.keepdim)


@op("argmax", aliases=("torch.argmax", "Tensor.argmax"), example={"dim": -1})
class ArgMax(_Reduce):
    """The index of the largest value: along `dim` (torch.argmax), the dim dropped or (`keepdim`) kept
    with size 1; with dim none, the index into the flattened input.  A mask counts as 0 and 1 (torch
    wants the `.int()` first), so the argmax of `input_ids == eos` is the first end-of-text token:
    CLIP's text pooling."""

    dim: int | None = -1  # the dimension searched (none: the flattened input)
    keepdim: bool = False  # keep that dim with size 1

    keeps = ""
    differentiable = False

    def infer_shape(self, x):
        check(len(x) > 0 or self.dim is None, f"{self.op_name} needs a dim to search; received a single value")
        return super().infer_shape(x)

    def forward(self, run, x):
        if x.dtype == run.torch.bool:
            x = x.int()
        return x.argmax(dim=self.dim, keepdim=self.keepdim)


@op("argmin", aliases=("torch.argmin", "Tensor.argmin"), example={"dim": -1})
class ArgMin(ArgMax):
    """The index of the smallest value along `dim` (the first where several tie).

    As torch.argmin: with dim none, the index into the flattened input."""

    dim: int | None = -1  # the dimension searched (none: the flattened input)
    keepdim: bool = False  # keep that dim with size 1

    def forward(self, run, x):
        if x.dtype == run.torch.bool:
            x = x.int()
        return x.argmin(dim=self.dim, keepdim=self.keepdim)


@op("amin", aliases=("torch.amin", "min_over"), example={"dim": 1})
class AMin(_Reduce):
    """Minimum over `dim` (torch.amin: the values, no indices); all dims when `dim` is absent."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) reduced; none: all
    keepdim: bool = False  # keep the reduced dims with size 1

    def forward(self, run, x):
        return x.amin() if self.dim is None else x.amin(dim=self.dim, keepdim=self.keepdim)


@op("max", aliases=("torch.max", "Tensor.max"), example={"dim": -1})
class Max(_Reduce):
    """The largest value along `dim` and (output 1) its index, as torch.max(x, dim).

    The dim is dropped, or (`keepdim`) kept with size 1."""

    dim: int  # the dimension searched
    keepdim: bool = False  # keep that dim with size 1

    def saved(self, inputs, outputs, eager):
        return [Saved(output=1, width="index")]  # where each maximum came from

    def infer_shape(self, x):
        out = super().infer_shape(x)
        return [out, out]

    def forward(self, run, x):
        found = run.torch.max(x, dim=self.dim, keepdim=self.keepdim)
        return found.values, found.indices


@op("min", aliases=("torch.min", "Tensor.min"), example={"dim": -1})
class Min(Max):
    """The smallest value along `dim` and (output 1) its index, as torch.min(x, dim)."""

    dim: int  # the dimension searched
    keepdim: bool = False  # keep that dim with size 1

    def forward(self, run, x):
        found = run.torch.min(x, dim=self.dim, keepdim=self.keepdim)
        return found.values, found.indices


@op("prod", aliases=("torch.prod", "product"), example={"dim": -1})
class Prod(_Reduce):
    """Product over `dim` (one dim, as torch.prod takes); all elements when `dim` is absent."""

    dim: int | None = None  # the dimension multiplied along; none: all
    keepdim: bool = False  # keep the reduced dim with size 1

    def saved(self, inputs, outputs, eager):
        return [Saved(input=0), Saved(output=0)]

    def forward(self, run, x):
        return x.prod() if self.dim is None else x.prod(dim=self.dim, keepdim=self.keepdim)


@op("any", aliases=("torch.any", "Tensor.any"), example={"dim": -1})
class Any_(_Reduce):
    """True where any value along `dim` is non-zero (a mask); over all dims when `dim` is absent."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) reduced; none: all
    keepdim: bool = False  # keep the reduced dims with size 1
    keeps, differentiable = "", False

    def forward(self, run, x):
        return x.any() if self.dim is None else run.torch.any(x, dim=self.dim, keepdim=self.keepdim)


@op("all", aliases=("torch.all", "Tensor.all"), example={"dim": -1})
class All(_Reduce):
    """True where every value along `dim` is non-zero (a mask); over all dims when `dim` is absent."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) reduced; none: all
    keepdim: bool = False  # keep the reduced dims with size 1
    keeps, differentiable = "", False

    def forward(self, run, x):
        return x.all() if self.dim is None else run.torch.all(x, dim=self.dim, keepdim=self.keepdim)


@op("var", aliases=("torch.var", "variance"), example={"dim": -1, "correction": 0})
class Var(_Reduce):
    """Variance over `dim`: the sum of squared deviations from the mean over (N - correction), N the
    values reduced (correction 1: Bessel's, torch's default; 0: the population's, as norms use)."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) reduced; none: all
    correction: float = 1.0  # subtracted from the count in the divisor
    keepdim: bool = False  # keep the reduced dims with size 1

    def flops(self, inputs, outputs):
        return 3 * prod(inputs[0])

    def forward(self, run, x):
        return run.torch.var(x, dim=self.dim, correction=self.correction, keepdim=self.keepdim)


@op("std", aliases=("torch.std", "standard_deviation"), example={"dim": -1, "correction": 0})
class Std(Var):
    """Standard deviation over `dim`: the square root of `var` (correction 1 by default, as torch.std)."""

    dim: int | tuple[int, ...] | None = None  # the dimension(s) reduced; none: all
    correction: float = 1.0  # subtracted from the count in the divisor
    keepdim: bool = False  # keep the reduced dims with size 1

    def forward(self, run, x):
        return run.torch.std(x, dim=self.dim, correction=self.correction, keepdim=self.keepdim)


@op("logsumexp", aliases=("torch.logsumexp",), example={"dim": -1})
class LogSumExp(_Reduce):
    """log Σ exp(x) over `dim`, without overflow (the maximum taken out first)."""

    dim: int | tuple[int, ...]  # the dimension(s) reduced
    keepdim: bool = False  # keep the reduced dims with size 1

    def saved(self, inputs, outputs, eager):
        return [Saved(input=0), Saved(output=0)]

    def flops(self, inputs, outputs):
        return 4 * prod(inputs[0])

    def forward(self, run, x):
        return run.torch.logsumexp(x, dim=self.dim, keepdim=self.keepdim)


@op("vector_norm", aliases=("torch.linalg.vector_norm", "linalg_vector_norm", "torch.norm", "Tensor.norm"),
    example={"ord": 2.0, "dim": -1, "keepdim": True})
class VectorNorm(_Reduce):
    """The `ord`-norm (Σ |x|^ord)^(1/ord) over `dim`; all dims when `dim` is absent.

    As torch.linalg.vector_norm: ord inf is the largest |x|, -inf the smallest, 0 the count of
    non-zeros."""

    ord: float = 2.0  # the norm's order (2: Euclidean)
    dim: int | tuple[int, ...] | None = None  # the dimension(s) reduced; none: all
    keepdim: bool = False  # keep the reduced dims with size 1

    def saved(self, inputs, outputs, eager):
        return [Saved(input=0), Saved(output=0)]

    def flops(self, inputs, outputs):
        return 2 * prod(inputs[0])

    def forward(self, run, x):
        return run.torch.linalg.vector_norm(x, self.ord, dim=self.dim, keepdim=self.keepdim)


@op("normalize", aliases=("F.normalize", "l2_normalize"), example={"p": 2.0, "dim": -1})
class Normalize(Op):
    """x / max(‖x‖_p, eps) along `dim` (F.normalize): each vector scaled to norm 1 (nGPT's
    hyperspherical features, cosine similarity); the shape is the input's."""

    p: float = 2.0  # the norm's order
    dim: int = 1  # the dimension normalised (F.normalize's default: 1)
    eps: float = 1e-12  # the smallest norm divided by

    def __post_init__(self):
        if not self.eps >= 0:
            raise invalid(self, f"eps must not be negative; received {self.eps}")

    def infer_shape(self, x):
        axis(self.dim, len(x))
        return x

    def flops(self, inputs, outputs):
        return 3 * prod(inputs[0])

    def saved(self, inputs, outputs, eager):
        """The input and the vectors' norms (the norm's, the clamp's and the division's)."""
        d = axis(self.dim, len(inputs[0]))
        norms = prod([n for i, n in enumerate(inputs[0]) if i != d])
        return [Saved(input=0), keeps_own(norms), keeps_own(norms)]

    def forward(self, run, x):
        return run.F.normalize(x, self.p, self.dim, self.eps)
