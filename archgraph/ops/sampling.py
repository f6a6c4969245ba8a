"""Reading a tensor at places another tensor gives, and distances between rows, with torch's names:
`grid_sample` (F.grid_sample: an image read at points of a grid in [-1, 1]), `fold` (F.fold,
nn.Fold: sliding blocks summed back into an image, the inverse of nn.Unfold's layout), `cdist`
(torch.cdist: the p-norm distance of every row of one set to every row of another) and `pdist`
(F.pdist: of every pair of rows of one set, the upper triangle row by row)."""
from __future__ import annotations

from typing import Literal

from ..dims import exact_div, floor_div, norm, prod
from .base import Op, check, expect_dim, expect_rank, invalid, op, pair, quotient
from .conv import window_out

CdistMode = Literal["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"]


@op("grid_sample", aliases=("F.grid_sample", "grid_sampler_2d"), example={"align_corners": False})
class GridSample(Op):
    """An image read at the points of a grid (F.grid_sample).

    x [B, C, H, W] and grid [B, Ho, Wo, 2] -> [B, C, Ho, Wo]. Each grid point is (x, y) in [-1, 1] (-1: the left or top edge; with `align_corners`, the centre
    of the first pixel), interpolated by `mode` from the pixels around it; points outside read
    `padding_mode`: zeros, the border pixel, or the image reflected at its edges."""

    mode: Literal["bilinear", "nearest", "bicubic"] = "bilinear"  # bilinear, nearest or bicubic interpolation
    padding_mode: Literal["zeros", "border", "reflection"] = "zeros"  # what a point outside reads: zeros,
    #   border, reflection
    align_corners: bool = False  # -1 and 1 are the centres of the corner pixels (else their outer edges)

    def infer_shape(self, x, grid):
        expect_rank(x, 4, "input [B, C, H, W]")
        expect_rank(grid, 4, "grid [B, Ho, Wo, 2]")
        expect_dim(grid[0], x[0], "batch dimension of the grid")
        expect_dim(grid[3], 2, "last dimension of the grid (x, y)")
        return (x[0], x[1], grid[1], grid[2])

    def flops(self, inputs, outputs):
        taps = {"nearest": 0, "bilinear": 7, "bicubic": 31}[self.mode]  # as interpolate counts them
        return taps * prod(outputs[0])

    def forward(self, run, x, grid):
        return run.F.grid_sample(x, grid, mode=self.mode, padding_mode=self.padding_mode,
                                 align_corners=self.align_corners)


@op("fold", aliases=("F.fold", "nn.Fold", "col2im"), example={"output_size": [4, 4], "kernel_size": 2, "stride": 2})
class Fold(Op):
    """Sliding blocks summed into an image (F.fold): [B, C·k_h·k_w, L] -> [B, C, *output_size], L the
    number of blocks that fit (nn.Unfold's count for output_size); where blocks overlap their values
    add up."""

    output_size: tuple[int, int]  # the image's height and width
    kernel_size: int | tuple[int, int]  # each block's size
    dilation: int | tuple[int, int] = 1  # the spacing between a block's elements
    padding: int | tuple[int, int] = 0  # the image's padding the blocks cover (cut off after)
    stride: int | tuple[int, int] = 1  # the step between blocks

    keeps = ""

    def __post_init__(self):
        for name in ("kernel_size", "dilation", "stride"):
            if any(v <= 0 for v in pair(getattr(self, name))):
                raise invalid(self, f"{name} must be positive; received {getattr(self, name)}")
        if len(self.output_size) != 2 or any(v <= 0 for v in self.output_size):
            raise invalid(self, f"output_size must be a positive height and width; received {self.output_size}")

    def blocks(self):
        return prod(window_out(n, k, s, p, d) for n, k, s, p, d in zip(
            self.output_size, pair(self.kernel_size), pair(self.stride), pair(self.padding), pair(self.dilation)))

    def infer_shape(self, x):
        expect_rank(x, 3, "input [B, C·k_h·k_w, L]")
        expect_dim(x[2], self.blocks(), "number of blocks (dim 2: those that fit in output_size)")
        block = prod(pair(self.kernel_size))
        channels = exact_div(x[1], block, "dim 1 (channels times the block size k_h·k_w)") if isinstance(x[1], int) \
            else quotient(x[1], block)  # a symbolic C·k_h·k_w: its quotient
        return (x[0], channels, *self.output_size)

    def flops(self, inputs, outputs):
        return prod(inputs[0])  # one addition per block element

    def forward(self, run, x):
        return run.F.fold(x, tuple(self.output_size), self.kernel_size, self.dilation, self.padding, self.stride)


@op("cdist", aliases=("torch.cdist",), example={"p": 2.0})
class CDist(Op):
    """The p-norm distance of each row of one set to each row of another (torch.cdist).

    x1 [..., P, M] and x2 [..., R, M] -> [..., P, R]; p 0 counts the coordinates that differ, inf
    takes the largest difference."""

    p: float = 2.0  # the norm's order (at least 0)
    compute_mode: CdistMode = "use_mm_for_euclid_dist_if_necessary"  # p = 2 by a matrix product (faster, less
    #   exact): where P or R exceeds 25 (torch's default), always, or never

    def __post_init__(self):
        if self.p < 0:
            raise invalid(self, f"p must be at least 0; received {self.p}")

    def infer_shape(self, x1, x2):
        check(len(x1) >= 2 and len(x2) == len(x1), f"cdist needs inputs [..., P, M] and [..., R, M] of one rank; "
                                                   f"received ranks {len(x1)} and {len(x2)}")
        expect_dim(x2[-1], x1[-1], "row width of x2 (that of x1)")
        for i, (a, b) in enumerate(zip(x1[:-2], x2[:-2])):
            expect_dim(b, a, f"batch dim {i} of x2")
        return (*x1[:-2], x1[-2], x2[-2])

    def flops(self, inputs, outputs):
        return 3 * prod(outputs[0]) * inputs[0][-1]  # a difference, its power, a sum per coordinate

    def forward(self, run, x1, x2):
        return run.torch.cdist(x1, x2, self.p, compute_mode=self.compute_mode)


@op("pdist", aliases=("F.pdist", "torch.pdist"), example={"p": 2.0})
class PDist(Op):
    """The p-norm distance of every pair of rows of one set (F.pdist).

    x [N, M] -> [N·(N-1)/2]: the pairs i < j, row 0's first."""

    p: float = 2.0  # the norm's order (at least 0)

    def __post_init__(self):
        if self.p < 0:
            raise invalid(self, f"p must be at least 0; received {self.p}")

    def infer_shape(self, x):
        expect_rank(x, 2, "input [N, M]")
        return (norm(floor_div(x[0] * (x[0] - 1), 2)),)

    def flops(self, inputs, outputs):
        return 3 * prod(outputs[0]) * inputs[0][1]

    def forward(self, run, x):
        return run.F.pdist(x, self.p)
