"""Slices and singleton dims with torch's semantics: `slice` (x[:, 1:], x[..., :L]), `unsqueeze`,
`squeeze`.  Symbolic sizes stay exact where the answer is decidable (x[:, 1:] of S is S - 1)."""
from __future__ import annotations

from ..dims import ceil_div, equal, fmt, provably_le
from ..errors import InconclusiveDimError
from .base import Op, Size, axis, check, invalid, op


def _smaller(a, b):
    """min(a, b) of sizes, or an inconclusive error."""
    return a if _le(a, b) else b


def _larger(a, b):
    """max(a, b) of sizes, or an inconclusive error."""
    return a if _le(b, a) else b


def _le(a, b) -> bool:
    order = provably_le(a, b)
    if order is None:
        raise InconclusiveDimError(f"cannot decide whether {fmt(a)} or {fmt(b)} is smaller",
                                   hint="give the symbolic sizes values with --set")
    return order


def _clamped(index, size):
    """A slice bound as Python clamps it: negative counts from the end; the result lies in [0, size]."""
    if isinstance(index, int) and index < 0:
        return _larger(size + index, 0)
    return _smaller(index, size)


@op("slice", aliases=("narrow", "x[:, 1:]", "getitem"), example={"dim": 1, "start": 1})
class Slice(Op):
    """A slice along one dimension: x[start:end:step] along `dim` (Python's rules: negative bounds count from the end, bounds
    are clamped, end absent = to the end); bounds may be symbolic sizes (x[..., :L])."""

    dim: int  # the dimension sliced
    start: Size | None = None  # first index kept (default 0; negative counts from the end)
    end: Size | None = None  # index after the last kept (default: the end; negative counts from the end)
    step: int = 1  # keep every step-th index

    keeps = ""

    def __post_init__(self):
        if self.step <= 0:
            raise invalid(self, f"step must be positive (torch does not slice backwards); received {self.step}")

    def infer_shape(self, x):
        d = axis(self.dim, len(x))
        size = x[d]
        start = 0 if self.start is None else _clamped(self.start, size)
        end = size if self.end is None else _clamped(self.end, size)
        length = end - start
        if isinstance(length, int):
            check(length > 0, f"x[{self.start}:{self.end}] of a dim of size {fmt(size)} is empty")
        elif provably_le(length, 0):
            raise InconclusiveDimError(f"x[{self.start}:{self.end}] of a dim of size {fmt(size)} may be empty",
                                       hint='give the sizes values with --set, or a constraint that keeps the '
                                            'slice non-empty')
        if self.step != 1:
            length = ceil_div(length, self.step)   # ceil(T/2), as a stride-2 convolution of T gives
        return (*x[:d], length, *x[d + 1:])

    def forward(self, run, x):
        index = [slice(None)] * x.dim()
        start = None if self.start is None else int(self.start)
        end = None if self.end is None else int(self.end)
        index[self.dim] = slice(start, end, self.step)
        return x[tuple(index)]


@op("unsqueeze", aliases=("torch.unsqueeze", "expand_dims", "x[:, None]"), example={"dim": -1})
class Unsqueeze(Op):
    """A new dim of size 1 at `dim` (torch.unsqueeze)."""

    dim: int  # where the new dimension goes (negative counts from the end)

    keeps = ""

    def infer_shape(self, x):
        d = axis(self.dim, len(x) + 1)
        return (*x[:d], 1, *x[d:])

    def forward(self, run, x):
        return x.unsqueeze(self.dim)


@op("squeeze", aliases=("torch.squeeze",), example={"dim": -1})
class Squeeze(Op):
    """Drop a dimension of size 1: `dim` goes when its size is 1 (torch.squeeze(x, dim) leaves other sizes as they are)."""

    dim: int  # the dimension dropped when its size is 1

    keeps = ""

    def infer_shape(self, x):
        d = axis(self.dim, len(x))
        return (*x[:d], *x[d + 1:]) if equal(x[d], 1) else tuple(x)

    def forward(self, run, x):
        return x.squeeze(self.dim)
