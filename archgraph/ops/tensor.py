"""Tensor plumbing without parameters: `matmul`, `reshape`, `transpose`, `permute`,
`concat`, `split`, `flatten`, `select`, `expand`, `pad`, `pixel_unshuffle`."""
from __future__ import annotations

from typing import Literal

from ..dims import equal, exact_div, fmt, fmt_shape, norm, prod
from ..errors import ShapeError
from .base import Op, Size, axis, check, expect_dim, expect_rank, invalid, op
from .elementwise import broadcast


@op("matmul", aliases=("torch.matmul", "bmm"))
class MatMul(Op):
    """[..., n, k] @ [..., k, m] -> [..., n, m], batch dims broadcast; 1-D operands as torch.matmul."""

    def infer_shape(self, a, b):
        expect_rank(a, tuple(range(1, 9)), "first input")
        expect_rank(b, tuple(range(1, 9)), "second input")
        a2 = (1, *a) if len(a) == 1 else a   # a vector is a row, dropped again after
        b2 = (*b, 1) if len(b) == 1 else b   # a vector is a column, dropped again after
        expect_dim(b2[-2], a2[-1], f"inner dimension of {fmt_shape(a)} @ {fmt_shape(b)}")
        out = (*broadcast(a2[:-2], b2[:-2]), a2[-2], b2[-1])
        if len(b) == 1:
            out = out[:-1]
        if len(a) == 1:
            out = out[:-2] + out[-1:] if len(b) > 1 else out[:-1]
        return out

    def flops(self, inputs, outputs):
        return 2 * prod(outputs[0]) * inputs[0][-1]

    def forward(self, run, a, b):
        return run.torch.matmul(a, b)


@op("reshape", aliases=("torch.reshape", "view"), example={"shape": [0, 0, 12, 64]})
class Reshape(Op):
    """New shape with the same number of elements; 0 copies the input dim, -1 is inferred; sizes may
    name the inputs' symbolic sizes ([B, S * 2, H / 2])."""

    shape: tuple[Size, ...]  # the new shape: 0 copies the input's dim, -1 is inferred, sizes may be symbolic

    keeps = ""

    def __post_init__(self):
        concrete = [d for d in self.shape if isinstance(d, int)]
        if sum(1 for d in concrete if d == -1) > 1:
            raise invalid(self, f"at most one -1 in shape; received {list(map(fmt, self.shape))}")
        if any(d < -1 for d in concrete):
            raise invalid(self, f"dims must be positive, 0 (copy) or -1 (infer); received "
                                f"{list(map(fmt, self.shape))}")

    def infer_shape(self, x):
        out = []
        for i, d in enumerate(self.shape):
            if isinstance(d, int) and d == 0:
                check(i < len(x), f"0 at position {i} copies a dim the input {fmt_shape(x)} lacks")
                out.append(x[i])
            else:
                out.append(d)
        total = prod(x)
        if any(isinstance(d, int) and d == -1 for d in self.shape):
            known = prod(d for d in out if not (isinstance(d, int) and d == -1))
            missing = exact_div(total, known, f"reshape {fmt_shape(x)} to {list(self.shape)}")
            out = [missing if (isinstance(d, int) and d == -1) else d for d in out]
        elif not equal(prod(out), total):
            raise ShapeError(f"cannot reshape {fmt_shape(x)} ({fmt(total)} elements) "
                             f"to {fmt_shape(tuple(out))} ({fmt(prod(out))} elements)",
                             hint='give a shape of as many elements as the input (-1 infers one dimension)')
        return tuple(norm(d) for d in out)

    def forward(self, run, x):
        shape = [x.shape[i] if isinstance(d, int) and d == 0 else int(d) for i, d in enumerate(self.shape)]
        return x.reshape(shape)


@op("transpose", aliases=("torch.transpose",), example={"dim0": 1, "dim1": 2})
class Transpose(Op):
    """Swap two dimensions."""

    dim0: int  # the first dimension swapped
    dim1: int  # the second dimension swapped

    keeps = ""

    def infer_shape(self, x):
        a, b = axis(self.dim0, len(x), "dim0"), axis(self.dim1, len(x), "dim1")
        out = list(x)
        out[a], out[b] = out[b], out[a]
        return tuple(out)

    def forward(self, run, x):
        return x.transpose(self.dim0, self.dim1)


@op("permute", aliases=("torch.permute",), example={"dims": [0, 2, 1, 3]})
class Permute(Op):
    """Reorder all dimensions."""

    dims: tuple[int, ...]  # the input's dimensions in their new order

    keeps = ""

    def infer_shape(self, x):
        ok = len(self.dims) == len(x) and all(-len(x) <= d < len(x) for d in self.dims)
        check(ok and sorted(d % len(x) for d in self.dims) == list(range(len(x))),
              f"dims {list(self.dims)} is not a permutation of the {len(x)} dims of {fmt_shape(x)}")
        return tuple(x[d % len(x)] for d in self.dims)

    def forward(self, run, x):
        return x.permute(*self.dims)


@op("concat", aliases=("torch.cat", "concatenate"), example={"dim": -1})
class Concat(Op):
    """Join inputs along `dim`; the other dims must agree."""

    dim: int = -1  # the dimension the inputs are joined along

    keeps = ""

    def infer_shape(self, first, *rest):
        d = axis(self.dim, len(first))
        total = first[d]
        for other in rest:
            check(len(other) == len(first), f"cannot concatenate {fmt_shape(first)} and {fmt_shape(other)}")
            for i, (p, q) in enumerate(zip(first, other)):
                if i != d:
                    expect_dim(q, p, f"dimension {i} of a concatenated input")
            total = total + other[d]
        return tuple(norm(v) for v in (*first[:d], total, *first[d + 1:]))

    def forward(self, run, first, *rest):
        return run.torch.cat([first, *rest], dim=self.dim)


@op("split", aliases=("torch.split", "torch.chunk", "chunk"), example={"dim": -1, "sections": 3})
class Split(Op):
    """Cut a tensor into parts: along `dim` into `sizes` (a list; one -1 takes the rest: [1, -1] splits off the first)
    or into `sections` equal parts: several outputs."""

    dim: int = -1  # the dimension cut
    sizes: tuple[Size, ...] | None = None  # the size of each part (one -1 takes the rest)
    sections: int | None = None  # the number of equal parts instead

    keeps = ""

    def __post_init__(self):
        if (self.sizes is None) == (self.sections is None):
            raise invalid(self, "give exactly one of sizes (a list) or sections (a count)")
        if self.sizes is not None:
            concrete = [s for s in self.sizes if isinstance(s, int)]
            if concrete.count(-1) > 1 or any(s <= 0 and s != -1 for s in concrete):
                raise invalid(self, f"sizes must be positive, with at most one -1 (the rest); received "
                                    f"{list(map(fmt, self.sizes))}")

    def infer_shape(self, x):
        d = axis(self.dim, len(x))
        if self.sizes is not None:
            rest = [s for s in self.sizes if not (isinstance(s, int) and s == -1)]
            if len(rest) < len(self.sizes):
                left = x[d] - sum(rest)
                check(not isinstance(left, int) or left >= 0, f"sizes {list(map(fmt, self.sizes))} need more than "
                                                             f"the {fmt(x[d])} entries of dimension {d}")
                parts = [left if isinstance(s, int) and s == -1 else s for s in self.sizes]
            else:
                expect_dim(x[d], sum(self.sizes), f"dimension {d} (the sum of sizes {list(map(fmt, self.sizes))})")
                parts = list(self.sizes)
        else:
            parts = [exact_div(x[d], self.sections, f"split of dimension {d}")] * self.sections
        return [(*x[:d], p, *x[d + 1:]) for p in parts]

    def forward(self, run, x):
        if self.sections is not None:
            return run.torch.chunk(x, self.sections, dim=self.dim)
        sizes = [int(s) for s in self.sizes]
        if -1 in sizes:
            sizes[sizes.index(-1)] = x.shape[self.dim] - sum(s for s in sizes if s != -1)
        return run.torch.split(x, sizes, dim=self.dim)


@op("flatten", aliases=("torch.flatten", "nn.Flatten"), example={"start_dim": 1})
class Flatten(Op):
    """Merge dims start_dim..end_dim into one (their product)."""

    start_dim: int = 1  # the first dimension merged
    end_dim: int = -1  # the last dimension merged

    keeps = ""

    def infer_shape(self, x):
        a, b = axis(self.start_dim, len(x), "start_dim"), axis(self.end_dim, len(x), "end_dim")
        check(a <= b, f"start_dim {self.start_dim} comes after end_dim {self.end_dim}")
        return (*x[:a], prod(x[a:b + 1]), *x[b + 1:])

    def forward(self, run, x):
        return run.torch.flatten(x, self.start_dim, self.end_dim)


@op("select", aliases=("torch.select", "x[:, i]"), example={"dim": 1, "index": 0})
class Select(Op):
    """Take one index along `dim`, dropping it (BERT's pooler reads token 0)."""

    dim: int = 1  # the dimension indexed (and dropped)
    index: int = 0  # the position taken

    keeps = ""

    def infer_shape(self, x):
        d = axis(self.dim, len(x))
        if isinstance(x[d], int):
            check(-x[d] <= self.index < x[d], f"index {self.index} is out of range for size {x[d]}")
        return (*x[:d], *x[d + 1:])

    def forward(self, run, x):
        return x.select(self.dim, self.index)


@op("expand", aliases=("torch.Tensor.expand", "broadcast_to", "repeat_batch"),
    example={"sizes": ["B", -1, -1]})
class Expand(Op):
    """Broadcast to a larger shape without copying (Tensor.expand): size-1 dims go to `sizes` (-1
    keeps a dim), adding leading dims; no copy, no parameters.  Learned latents [1, N, D] expand to the batch: sizes [B, -1, -1]."""

    sizes: tuple[Size, ...]  # the output's sizes (-1 keeps the input's dim)

    keeps = ""

    def __post_init__(self):
        if not self.sizes:
            raise invalid(self, "sizes must list at least one size")
        for s in self.sizes:
            if isinstance(s, int) and s < -1 or s == 0:
                raise invalid(self, f"sizes must be positive or -1 (keep); received {list(self.sizes)}")

    def infer_shape(self, x):
        new = len(self.sizes) - len(x)
        check(new >= 0, f"cannot expand {fmt_shape(x)} to {len(self.sizes)} dims; expand keeps every dim "
                        "and may add leading ones")
        out = []
        for i, size in enumerate(self.sizes):
            if i < new:
                check(not (isinstance(size, int) and size == -1),
                      f"size -1 (keep) at position {i} is a new leading dim, which has no size to keep")
                out.append(size)
                continue
            have = x[i - new]
            if isinstance(size, int) and size == -1:
                out.append(have)
            elif isinstance(have, int) and have == 1:
                out.append(size)
            else:
                expect_dim(size, have, f"size {i} (only dims of size 1 expand)")
                out.append(have)
        return tuple(out)

    def forward(self, run, x):
        return x.expand(*[int(s) for s in self.sizes])


@op("pad", aliases=("F.pad", "nn.ZeroPad2d", "nn.ConstantPad2d", "nn.ReflectionPad2d"),
    example={"pad": [1, 1, 1, 1]})
class Pad(Op):
    """Pad the trailing dimensions (F.pad): `pad` lists (before, after) pairs from the last dim backwards ([left, right, top,
    bottom] for [.., H, W]); mode constant (with `value`), reflect, replicate or circular."""

    pad: tuple[Size, ...]  # (before, after) pairs from the last dim backwards (sizes: a length made a multiple)
    mode: Literal["constant", "reflect", "replicate", "circular"] = "constant"  # constant, reflect, replicate or
    #   circular
    value: float = 0.0  # the fill of constant padding

    keeps = ""

    def __post_init__(self):
        if not self.pad or len(self.pad) % 2:
            raise invalid(self, f"pad must list pairs (before, after); received {list(self.pad)}")
        if self.mode != "constant" and any(isinstance(p, int) and p < 0 for p in self.pad):
            raise invalid(self, f"mode '{self.mode}' cannot crop (negative pad); received {list(self.pad)}")

    def infer_shape(self, x):
        pairs = len(self.pad) // 2
        check(pairs <= len(x), f"pad {list(self.pad)} pads {pairs} dims; the input {fmt_shape(x)} has {len(x)}")
        out = list(x)
        for i in range(pairs):
            d = len(x) - 1 - i
            before, after = self.pad[2 * i], self.pad[2 * i + 1]
            if self.mode == "reflect" and isinstance(x[d], int) and isinstance(before, int) and isinstance(after, int):
                check(max(before, after) < x[d], f"reflect padding {max(before, after)} must be smaller than "
                                                 f"the dim it pads ({x[d]})")
            out[d] = x[d] + before + after
            if isinstance(out[d], int) and out[d] <= 0:
                raise ShapeError(f"pad {list(self.pad)} leaves dim {d} of {fmt_shape(x)} with size {out[d]}",
                                 hint='pad by less (a negative pad cuts)')
        return tuple(out)

    def forward(self, run, x):
        return run.F.pad(x, [int(p) for p in self.pad], mode=self.mode, value=self.value if self.mode == "constant" else None)


@op("pixel_unshuffle", aliases=("space_to_depth", "F.pixel_unshuffle"), example={"grid": [32, 32], "factor": 2})
class PixelUnshuffle(Op):
    """Merge each factor x factor block of a token grid into one token: [B, h·w, C] ->
    [B, (h/f)·(w/f), C·f²], the tokens listed row by row on the `grid` [h, w] and the blocks
    too.  `order` lays out a block's values: `channels_first` (c, row, column), as
    F.pixel_unshuffle and F.unfold give them (Mistral 3's patch merger); `patches_first`
    (row, column, c): each patch's C values side by side (Idefics3's and InternVL's pixel
    shuffle)."""

    grid: tuple[int, int]  # the tokens' grid [rows, columns]
    factor: int = 2  # the block's side: factor x factor tokens become one
    order: Literal["channels_first", "patches_first"] = "channels_first"  # a merged token's values: (c, i, j)
    #   or (i, j, c)

    keeps = ""

    def __post_init__(self):
        if len(self.grid) != 2 or any(not isinstance(n, int) or n <= 0 for n in self.grid):
            raise invalid(self, f"grid must be two positive sizes [rows, columns]; received {list(self.grid)}")
        if not isinstance(self.factor, int) or self.factor <= 0:
            raise invalid(self, f"factor must be a positive whole number; received {self.factor}")
        if any(n % self.factor for n in self.grid):
            raise invalid(self, f"the grid {list(self.grid)} is not made of whole {self.factor}x{self.factor} "
                                f"blocks")

    def infer_shape(self, x):
        expect_rank(x, 3, "tokens [B, N, C]")
        rows, columns = self.grid
        expect_dim(x[1], rows * columns, f"tokens of the {rows}x{columns} grid")
        f = self.factor
        return (x[0], (rows // f) * (columns // f), norm(x[2] * f * f))

    def forward(self, run, x):
        (rows, columns), f = self.grid, self.factor
        blocks = x.reshape(x.shape[0], rows // f, f, columns // f, f, x.shape[2])   # [B, I, i, J, j, C]
        inner = (5, 2, 4) if self.order == "channels_first" else (2, 4, 5)
        return blocks.permute(0, 1, 3, *inner).reshape(x.shape[0], (rows // f) * (columns // f), -1)
