"""Attention in windows (Swin): `roll` (torch.roll, the cyclic shift of shifted windows),
`window_mask` (the additive mask that keeps a shifted window's regions apart) and
`window_position_bias` (a learned bias per head for each relative position inside a window).
Cutting a [B, H, W, C] map into windows and back is plain reshape and permute.  A patch sequence
kept in its order: `grid_window_mask` (the additive mask that keeps each patch to its window)."""
from __future__ import annotations

from ..dims import exact_div, fmt_shape, prod
from .base import Op, Tensor, check, expect_dim, expect_rank, invalid, op, positive
from .rotary import GridPositions


@op("roll", aliases=("torch.roll", "cyclic_shift"), example={"shifts": [-3, -3], "dims": [1, 2]})
class Roll(Op):
    """A cyclic shift (torch.roll): shift the input by `shifts[k]` along `dims[k]`, the elements that leave at one
    end entering at the other; the shape is unchanged (Swin's cyclic shift: shifts [-s, -s] on
    the H and W dims of [B, H, W, C], and [s, s] to undo it)."""

    shifts: tuple[int, ...]  # how far each dim is shifted (negative: towards the start)
    dims: tuple[int, ...]  # the dims shifted, one per shift

    keeps = ""

    def __post_init__(self):
        if not self.shifts or len(self.shifts) != len(self.dims):
            raise invalid(self, f"shifts and dims must pair up, one shift per dim; received "
                                f"shifts={list(self.shifts)}, dims={list(self.dims)}")

    def infer_shape(self, x):
        for d in self.dims:
            check(-len(x) <= d < len(x), f"dim {d} is not a dim of the input {fmt_shape(x)}")
        return tuple(x)

    def forward(self, run, x):
        return run.torch.roll(x, shifts=tuple(self.shifts), dims=tuple(self.dims))


@op("window_mask", category="attention", aliases=("SwinLayer.get_attn_mask", "shifted_window_mask"),
    example={"window": 7, "shift": 3})
class WindowMask(Op):
    """The attention mask of shifted windows: x [B, H, W, C] (the map after its cyclic shift, H and W
    multiples of `window`) -> [B·(H/window)·(W/window), 1, window², window²], one mask per window in
    the order windows are cut (batch, window row, window column), `fill` (Swin: -100) where query and
    key come from different regions of the unshifted map and 0 where they share one.  Along each
    axis the regions are [0, n - window), [n - window, n - shift) and [n - shift, n), as Swin
    computes them; the mask is added to the scores with the relative position bias."""

    window: int  # the window's side in positions
    shift: int  # the cyclic shift the map had (0: no mask needed)
    fill: float = -100.0  # the value masked pairs get

    keeps = ""

    def __post_init__(self):
        positive(self, "window", "shift")
        if self.shift >= self.window:
            raise invalid(self, f"shift must be smaller than window; received shift={self.shift}, "
                                f"window={self.window}")

    def infer_shape(self, x):
        expect_rank(x, 4, "map [B, H, W, C]")
        b, h, w, _ = x
        rows = exact_div(h, self.window, f"the map's height {h} into windows of {self.window}")
        cols = exact_div(w, self.window, f"the map's width {w} into windows of {self.window}")
        n = self.window * self.window
        return (b * rows * cols, 1, n, n)

    def forward(self, run, x):
        torch, ws, s = run.torch, self.window, self.shift
        b, h, w = x.shape[0], x.shape[1], x.shape[2]

        def regions(n):
            idx = torch.arange(n, device=x.device)
            return (idx >= n - ws).long() + (idx >= n - s).long()

        img = (regions(h)[:, None] * 3 + regions(w)[None, :]).to(x.dtype)  # [H, W]
        windows = img.view(h // ws, ws, w // ws, ws).transpose(1, 2).reshape(-1, ws * ws)  # [nW, ws²]
        diff = windows.unsqueeze(1) - windows.unsqueeze(2)
        mask = diff.masked_fill(diff != 0, self.fill).masked_fill(diff == 0, 0.0)
        return mask.unsqueeze(0).expand(b, -1, -1, -1).reshape(-1, 1, ws * ws, ws * ws)


@op("window_position_bias", category="attention",
    aliases=("SwinRelativePositionBias", "relative_position_bias_table"), example={"window": 7, "heads": 3})
class WindowPositionBias(Op):
    """A learned bias per head for every pair of positions inside a window (Swin): no input ->
    [1, heads, window², window²].  `relative_position_bias_table` [(2·window - 1)², heads] holds one
    value per relative offset (dy, dx); the buffer `relative_position_index` [window⁴] (not saved
    by state_dict) says which row each pair of positions reads."""

    window: int  # the window's side in positions
    heads: int  # number of attention heads

    keeps = ""

    def __post_init__(self):
        positive(self, "window", "heads")

    def infer_shape(self):
        n = self.window * self.window
        return (1, self.heads, n, n)

    def params(self):
        yield Tensor("relative_position_bias_table", ((2 * self.window - 1) ** 2, self.heads))

    def buffers(self):
        yield Tensor("relative_position_index", (self.window ** 4,), persistent=False, dtype="int64")

    def forward(self, run):
        n = self.window * self.window
        index = run.tensor("relative_position_index").long()
        bias = run.tensor("relative_position_bias_table")[index].view(n, n, -1)
        return bias.permute(2, 0, 1).contiguous().unsqueeze(0)

    def init(self, tensor, value, init):
        if tensor.name == "relative_position_index":
            value.copy_(window_position_index(init.torch, self.window).view(-1))
        else:
            init.normal(value, std=0.02)


def window_position_index(torch, window: int):
    """[window², window²]: the table row of each (query, key) pair, (dy + w - 1)·(2w - 1) + dx + w - 1."""
    coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
    relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
    return relative[:, :, 0] * (2 * window - 1) + relative[:, :, 1]


@op("grid_window_mask", category="attention", aliases=("get_vision_window_index", "vision_window_mask"),
    example={"grid": [16, 16], "window": 8, "tile": [2, 2]})
class GridWindowMask(Op):
    """The attention mask of window attention over a patch sequence kept in its order: x [B, N, C]
    (the N cells of `grid`, listed as `grid_positions` lists them: row by row, or `tile` by tile)
    -> [1, 1, N, N], 0 where query and key lie in the same window and the dtype's lowest value
    where they do not.  Windows are `window` cells a side from the grid's first row and column,
    the last ones partial where the grid is not a whole number of windows.  Qwen2.5-VL's window
    attention (get_vision_window_index: windows of window_size // spatial_merge_size //
    patch_size merged tokens, here in patches) computes the same, the windows' tokens gathered
    into runs and scattered back after the merger; a layer given the mask as its attention's
    `bias` attends within windows, one without it across the image."""

    grid: tuple[int, ...]  # the grid's size per axis (rows, columns, ...)
    window: int  # the side of a window in cells, along every axis
    tile: tuple[int, ...] | None = None  # the cells of each tile are listed together (grid_positions' tile)

    keeps = ""

    def __post_init__(self):
        positive(self, "window")
        GridPositions(grid=tuple(self.grid), tile=self.tile)   # the same checks of grid and tile

    def infer_shape(self, x):
        expect_rank(x, 3, "patch sequence [B, N, C]")
        n = prod(self.grid)
        expect_dim(x[1], n, f"patches of the {'x'.join(map(str, self.grid))} grid")
        return (1, 1, n, n)

    def forward(self, run, x):
        torch = run.torch
        coords = GridPositions(grid=tuple(self.grid), tile=self.tile).forward(run)[:, 0].to(x.device)  # [n, N]
        per_axis = [-(-g // self.window) for g in self.grid]   # windows along each axis
        ids = torch.zeros_like(coords[0])
        for axis, count in zip(coords, per_axis):
            ids = ids * count + axis // self.window
        same = ids[:, None] == ids[None, :]
        mask = torch.zeros(same.shape, dtype=x.dtype, device=x.device).masked_fill(~same, torch.finfo(x.dtype).min)
        return mask[None, None]
