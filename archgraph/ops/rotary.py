"""Rotary positions: `rotary_embedding` (RoPE tables and every rope_type transformers scales them
by) and the position ids it may read along several axes, `grid_positions` and
`multimodal_positions`."""
from __future__ import annotations

import itertools
import math
from typing import Literal

from ..dims import ceil_div, prod
from ..errors import ShapeError
from .base import Op, Tensor, check, expect_dim, expect_padding_mask, expect_rank, invalid, op, positive
from .embedding import _fits, _seq_len


@op("rotary_embedding", category="embedding", aliases=("rope", "RotaryEmbedding"), example={"head_dim": 128})
class RotaryEmbedding(Op):
    """Rotary position tables (RoPE): [B, S, ..] -> cos, sin each [1, S, width]; buffer inv_freq.

    The frequencies are base^(-2k / rotary_dim) for 2k < rotary_dim and the tables repeat them
    twice, so an odd rotary_dim gives tables of rotary_dim + 1 columns, as transformers
    computes them (GPT-NeoX with int(head_dim * rotary_pct) odd).  With `positions: N` the op
    keeps the values of N positions instead, one buffer [N, width] = [sin | cos] named by the
    node, not saved by state_dict (GPT-J's and CodeGen's per-layer `attn.embed_positions`).

    `scaling` is transformers' rope_type (its ROPE_INIT_FUNCTIONS and dynamic_rope_update),
    computed as transformers computes it:
      - `none`: the frequencies above ('default').
      - `linear`: every frequency divided by `factor` (positions interpolated: Gemma 3).
      - `llama3`: wavelengths 2π/f longer than original_max / low_freq_factor are divided by
        `factor`, those shorter than original_max / high_freq_factor kept, and the ones between
        blended by (original_max / wavelength - low_freq_factor) / (high_freq_factor -
        low_freq_factor) (Llama 3.1-3.3; equal factors blend none: Llama 4 Scout).
      - `dynamic` (NTK): in forward, at L = the largest position + 1 (S without position_ids)
        beyond `max_positions`, the base becomes base·(factor·L/max_positions - factor + 1)^(d/(d-2))
        (d = rotary_dim) and inv_freq is rewritten; back at fewer than max_positions it is
        reset, and between, the last one stays (transformers' cached length, kept per module).
      - `yarn`: dims that turn fewer than `beta_slow` times over `original_max` positions are
        divided by factor, those that turn more than `beta_fast` times are kept, and a linear
        ramp (its ends rounded out with `truncate`) blends the ones between.
      - `longrope`: frequencies divided by `short_factor` (one per frequency), or in forward by
        `long_factor` when L exceeds `original_max` (inv_freq is rewritten with the set in use).
      - `proportional` (Gemma 4's full layers): the tables span head_dim; the first rotary_dim / 2
        frequencies are base^(-2k / head_dim) and the rest 0 (those dims do not turn), all divided
        by `factor` (default 1): dim i pairs with i + head_dim/2, not a partial rotary's i + rotary_dim/2.
    `factor` is required by linear, dynamic and llama3; yarn and longrope default it to
    max_positions / original_max, and original_max defaults to max_positions (as transformers'
    config standardisation fills it).  The tables are multiplied by `attention_factor`; without
    one, 1, except yarn's 0.1·ln(factor) + 1 (or the ratio of that with `mscale` to that with
    `mscale_all_dim`, when both are non-zero) and longrope's √(1 + ln(factor) / ln(original_max))
    (1 when factor <= 1); longrope's `long_attention_factor`, when given, is the scale beyond
    original_max instead (PhiMoE's long_mscale).  `max_positions` is the config's max_position_embeddings.

    Without `positions` the buffer is named `{prefix}inv_freq`; `original: true` adds the copy
    transformers 5 keeps for dynamic rope updates, `{prefix}original_inv_freq` (ModernBERT's
    rotary_emb holds full_attention_inv_freq, full_attention_original_inv_freq and the same for
    sliding_attention).

    A second input gives the positions instead of 0..S-1: position_ids [B, S] -> tables
    [B, S, width].  With `axes: n` the positions have n axes, [n, B, S] (a `grid_positions` or
    `multimodal_positions` table), and each frequency takes its angle from one axis: with
    `sections` (M-RoPE, Qwen2-VL's mrope_section) the ceil(rotary_dim/2) frequencies are cut into
    runs of those lengths and run i reads axis i mod n (with `section_layout: interleaved`, frequency j
    reads axis a >= 1 when j mod n = a and j < n·sections[a], else axis 0: Qwen3-VL's interleaved
    M-RoPE, time, row, column, time, ...); without, the rotation is axial (a 2-D
    ViT's): each axis has its own copy of the frequencies of rotary_dim // n dims, laid side by
    side (inv_freq holds one copy)."""

    head_dim: int  # width of each attention head
    rotary_dim: int | None = None  # dims that are rotated (default head_dim; fewer is partial rotary)
    base: float = 10000.0  # the base of the frequencies (rope_theta)
    positions: int | None = None  # a table of this many positions ([sin | cos]) instead of inv_freq
    scaling: Literal["none", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional"] = "none"  # how the
    #   frequencies are stretched for longer contexts (rope_type): none, linear, dynamic, yarn, longrope, llama3,
    #   proportional
    factor: float | None = None  # the context scaling factor of linear, dynamic, yarn and llama3 scaling
    original_max: int | None = None    # yarn, longrope, llama3: the positions the model was trained on
    max_positions: int | None = None   # dynamic (and yarn's, longrope's default factor): max_position_embeddings
    beta_fast: float = 32.0  # yarn: the fast rotation boundary of the ramp
    beta_slow: float = 1.0  # yarn: the slow rotation boundary of the ramp
    truncate: bool = True  # yarn: round the ramp's boundaries down and up to whole dims, as transformers does
    mscale: float | None = None  # yarn: the scale of the attention factor (DeepSeek's mscale)
    mscale_all_dim: float | None = None  # yarn: the scale divided out of the attention factor (DeepSeek's
    #   mscale_all_dim)
    low_freq_factor: float | None = None  # llama3: wavelengths above original / low_freq_factor are scaled by factor
    high_freq_factor: float | None = None  # llama3: wavelengths below original / high_freq_factor are kept
    short_factor: tuple[float, ...] | None = None  # longrope: per-dim rescale factors for sequences up to the
    #   original length
    long_factor: tuple[float, ...] | None = None  # longrope: per-dim rescale factors for longer sequences
    attention_factor: float | None = None  # multiplies the cos and sin tables (default: the scaling type's own)
    long_attention_factor: float | None = None  # longrope: multiplies them instead when L exceeds original_max
    prefix: str = ""  # a prefix for the inv_freq buffer's name
    original: bool = False  # keep an original_inv_freq buffer too, as transformers' dynamic scaling does
    axes: int = 1  # the position_ids input's axes: [axes, B, S] when more than 1
    sections: tuple[int, ...] | None = None  # M-RoPE: frequencies per run, run i from axis i mod axes
    section_layout: Literal["runs", "interleaved"] = "runs"  # M-RoPE: each axis' frequencies in one run, or
    #   dealt out in turn (interleaved: Qwen3-VL's)
    axis_frequencies: Literal["copy", "strided"] = "copy"  # axial: each axis a copy of the frequencies of
    #   rotary_dim // axes dims (copy), or every axes-th frequency of the whole rotary_dim (strided)

    keeps = ""

    def __post_init__(self):
        positive(self, "head_dim", "positions", "axes", "original_max", "max_positions")
        if self.sections is not None:
            if self.axes < 2 or any(not isinstance(n, int) or n < 0 for n in self.sections):
                raise invalid(self, f"sections are counts of frequencies (0 or more) taken from each of "
                                    f"axes >= 2 position axes; received sections={list(self.sections)}, "
                                    f"axes={self.axes}")
            if sum(self.sections) != self.frequencies:
                raise invalid(self, f"sections {list(self.sections)} add up to {sum(self.sections)}; the "
                                    f"{self.dim} rotary dims have {self.frequencies} frequencies")
        if self.section_layout != "runs" and self.sections is None:
            raise invalid(self, f"section_layout: {self.section_layout} lays out M-RoPE's sections: give sections")
        if self.axis_frequencies == "strided" and (not self.axial or self.frequencies % self.axes):
            raise invalid(self, f"axis_frequencies: strided deals the {self.frequencies} frequencies of "
                                f"rotary_dim={self.dim} out to axes={self.axes} axial axes (no sections): they "
                                f"must divide evenly")
        if self.axes > 1 and (self.positions is not None or self.scaling != "none"):
            raise invalid(self, "positions along several axes come as an input; they take no `positions` "
                                "table and no `scaling`")
        if self.rotary_dim is not None and (isinstance(self.rotary_dim, int) and self.rotary_dim < 0):
            raise invalid(self, f"rotary_dim must be 0 or more (0: nothing rotates, as transformers builds "
                                f"int(head_dim * factor) = 0); received {self.rotary_dim}")
        if self.width > self.head_dim:
            raise invalid(self, f"the tables ({self.width} columns for rotary_dim={self.dim}) must fit in "
                                f"head_dim={self.head_dim}")
        if self.prefix and not self.prefix.replace("_", "a").isalnum():
            raise invalid(self, f"prefix must be letters, digits and _ (it starts the buffer's name); "
                                f"received {self.prefix!r}")
        self._check_scaling()

    def _check_scaling(self) -> None:
        kind = self.scaling
        if kind == "none":
            return
        needs = {"linear": ("factor",), "dynamic": ("factor", "max_positions"),
                 "llama3": ("factor", "low_freq_factor", "high_freq_factor"),
                 "yarn": (), "longrope": ("short_factor", "long_factor"), "proportional": ()}.get(kind)
        if needs is None:
            raise invalid(self, f"scaling must be none, linear, dynamic, yarn, longrope, llama3 or proportional; "
                                f"received {kind!r}")
        if kind == "proportional":
            if self.head_dim % 2 or self.dim % 2 or self.axes > 1:
                raise invalid(self, f"scaling 'proportional' turns pairs i, i + head_dim/2 of one axis: head_dim "
                                    f"and rotary_dim must be even; received head_dim={self.head_dim}, "
                                    f"rotary_dim={self.dim}")
            if not self.scale_factor > 0:
                raise invalid(self, f"scaling 'proportional' needs a positive factor; received {self.factor}")
            return
        missing = [name for name in needs if getattr(self, name) is None]
        if kind in ("llama3", "yarn", "longrope") and self.context is None:
            missing.append("original_max (or max_positions)")
        if missing:
            raise invalid(self, f"scaling '{kind}' needs {', '.join(missing)}; received "
                                + ", ".join(f"{n}={getattr(self, n)}" for n in (*needs, "original_max")))
        if not self.scale_factor > 0:
            raise invalid(self, f"scaling '{kind}' needs a positive factor; received factor={self.scale_factor}")
        if self.positions is not None and kind in ("dynamic", "longrope"):
            raise invalid(self, f"scaling '{kind}' changes the frequencies with the sequence length; a "
                                f"table of `positions` cannot")
        if kind == "dynamic" and self.dim <= 2:
            raise invalid(self, f"scaling 'dynamic' raises the base to d/(d-2) for d = rotary_dim; "
                                f"received rotary_dim={self.dim}")
        if kind == "llama3" and not self.high_freq_factor >= self.low_freq_factor:
            raise invalid(self, f"scaling 'llama3' needs high_freq_factor >= low_freq_factor; received "
                                f"low_freq_factor={self.low_freq_factor}, high_freq_factor={self.high_freq_factor}")
        if self.long_attention_factor is not None and kind != "longrope":
            raise invalid(self, f"long_attention_factor is longrope's scale beyond original_max; received it with "
                                f"scaling '{kind}'")
        if kind == "longrope":
            for name in ("short_factor", "long_factor"):
                values = getattr(self, name)
                if len(values) != self.frequencies or not all(v > 0 for v in values):
                    raise invalid(self, f"scaling 'longrope' needs {name} to list {self.frequencies} positive "
                                        f"numbers (one per frequency of rotary_dim={self.dim}); received "
                                        f"{len(values)}: {list(values)[:8]}")

    @property
    def context(self) -> int | None:
        """original_max, or max_positions (transformers' config fills the one from the other)."""
        return self.original_max if self.original_max is not None else self.max_positions

    @property
    def scale_factor(self) -> float:
        """`factor`, or yarn's and longrope's default, max_positions / original_max."""
        if self.factor is not None:
            return self.factor
        if self.scaling in ("yarn", "longrope") and self.max_positions and self.context:
            return self.max_positions / self.context
        return 1.0

    @property
    def table_scale(self) -> float:
        """What the tables are multiplied by: attention_factor, or transformers' default for the scaling."""
        if self.attention_factor is not None:
            return self.attention_factor
        factor = self.scale_factor
        if self.scaling == "yarn":
            def get_mscale(scale: float, m: float = 1.0) -> float:
                return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
            if self.mscale and self.mscale_all_dim:
                return float(get_mscale(factor, self.mscale) / get_mscale(factor, self.mscale_all_dim))
            return get_mscale(factor)
        if self.scaling == "longrope" and factor > 1.0:
            return math.sqrt(1 + math.log(factor) / math.log(self.context))
        return 1.0

    @property
    def dim(self) -> int:
        return self.rotary_dim if self.rotary_dim is not None else self.head_dim

    @property
    def axial(self) -> bool:
        return self.axes > 1 and self.sections is None

    @property
    def ladder(self) -> int:
        """The dims one copy of the frequencies is computed over (an axis' share when axial;
        proportional: all of head_dim, the dims past rotary_dim at frequency 0)."""
        if self.scaling == "proportional":
            return self.head_dim
        return self.dim // self.axes if self.axial and self.axis_frequencies == "copy" else self.dim

    @property
    def frequencies(self) -> int:
        return ceil_div(self.ladder, 2)

    @property
    def width(self):
        return 2 * self.frequencies * (self.axes if self.axial and self.axis_frequencies == "copy" else 1)

    def infer_shape(self, x, position_ids=None):
        seq = _seq_len(x)
        if position_ids is None:
            check(self.axes == 1, f"rotary positions along {self.axes} axes need their position_ids "
                                  f"[{self.axes}, B, S] as a second input")
            if self.positions is not None:
                _fits(seq, self.positions, "the rotary table")
            return [(1, seq, self.width), (1, seq, self.width)]
        check(self.positions is None, "a rotary table of `positions` takes no position_ids input")
        if self.axes == 1:
            expect_rank(position_ids, 2, "position_ids")
            batch = position_ids[0]
        else:
            expect_rank(position_ids, 3, "position_ids")
            expect_dim(position_ids[0], self.axes, "position_ids' first dim (its axes)")
            batch = position_ids[1]
        expect_dim(position_ids[-1], seq, "position_ids' length")
        return [(batch, seq, self.width), (batch, seq, self.width)]

    def buffers(self):
        if self.positions is not None:
            yield Tensor("", (self.positions, self.width), persistent=False)
        else:
            yield Tensor(f"{self.prefix}inv_freq", (self.frequencies,), persistent=False)
            if self.original:
                yield Tensor(f"{self.prefix}original_inv_freq", (self.frequencies,), persistent=False)

    def forward(self, run, x, position_ids=None):
        torch = run.torch
        if self.positions is not None:  # rows 0..S-1 of the [sin | cos] table
            sin, cos = run.tensor("")[: x.shape[1]].float().chunk(2, dim=-1)
            cos, sin = torch.cat([cos, cos], dim=-1)[None], torch.cat([sin, sin], dim=-1)[None]
        else:
            if self.scaling in ("dynamic", "longrope"):
                self._update(run, x, position_ids)
            if position_ids is None:
                position_ids = torch.arange(x.shape[1], dtype=torch.float32, device=x.device)[None]
            freqs = position_ids.float()[..., None] * run.tensor(f"{self.prefix}inv_freq").float()
            if self.sections is not None and self.section_layout == "interleaved":
                out = freqs[0].clone()   # axis 0 but where an axis a >= 1 takes its turn
                for a in range(1, self.axes):
                    turn = slice(a, self.sections[a] * self.axes, self.axes)
                    out[..., turn] = freqs[a, ..., turn]
                freqs = out
            elif self.sections is not None:  # run i of the frequencies turns with axis i mod axes
                runs = freqs.split(list(self.sections), dim=-1)
                freqs = torch.cat([part[i % self.axes] for i, part in enumerate(runs)], dim=-1)
            elif self.axis_frequencies == "strided":  # axis a turns by its share of the frequencies
                freqs = torch.cat([part[a] for a, part in enumerate(freqs.chunk(self.axes, dim=-1))], dim=-1)
            elif self.axes > 1:  # each axis its own copy of the frequencies, side by side
                freqs = torch.cat(list(freqs), dim=-1)
            emb = torch.cat([freqs, freqs], dim=-1)
            cos, sin = emb.cos(), emb.sin()
        scale = self.table_scale
        if self.scaling == "longrope" and self.long_attention_factor is not None:  # by this call's length L
            length = position_ids.max() + 1 if position_ids is not None else torch.tensor(x.shape[1])
            scale = torch.where(length > self.context, self.long_attention_factor, scale).to(cos.device)
        return (cos * scale, sin * scale) if torch.is_tensor(scale) or scale != 1 else (cos, sin)

    def _update(self, run, x, position_ids) -> None:
        """transformers' dynamic_rope_update: rewrite inv_freq for this call's length L."""
        torch = run.torch
        seq_len = position_ids.max() + 1 if position_ids is not None else \
            torch.tensor(x.shape[1], device=x.device)
        inv_freq = run.tensor(f"{self.prefix}inv_freq")
        original = (run.tensor(f"{self.prefix}original_inv_freq") if self.original
                    else self.inv_freq(torch, device=x.device))
        if self.scaling == "longrope":  # the long factors beyond original_max, else the short ones
            long = self.inv_freq(torch, device=x.device, long=True)
            inv_freq.copy_(torch.where(seq_len > self.context, long, original.to(x.device)))
            return
        state = run.state()  # the longest length since the last reset, as transformers caches it
        cached = state.get(f"{self.prefix}max_seq_len_cached", self.max_positions)
        if seq_len > cached:
            inv_freq.copy_(self.inv_freq(torch, device=x.device, seq_len=seq_len))
            state[f"{self.prefix}max_seq_len_cached"] = int(seq_len)
        if seq_len < self.max_positions and cached > self.max_positions:
            inv_freq.copy_(original)
            state[f"{self.prefix}max_seq_len_cached"] = self.max_positions

    def inv_freq(self, torch, device=None, seq_len=None, long: bool = False):
        """The frequencies as transformers' rope init function for `scaling` computes them, op for op
        (float32): at construction, or for dynamic at length `seq_len` (a tensor), or longrope's long set."""
        dim, base, factor = self.ladder, self.base, self.scale_factor
        if self.scaling == "proportional":  # rotary_dim / 2 frequencies over head_dim, then zeros
            turned = 1.0 / (base ** (torch.arange(0, self.dim, 2, dtype=torch.int64, device=device).float() / dim))
            zeros = torch.zeros(self.frequencies - self.dim // 2, dtype=torch.float32, device=device)
            return torch.cat([turned, zeros]) / factor
        exponents = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
        if self.scaling == "dynamic":
            if seq_len is None:  # at construction: max_positions, the plain base
                base = base * ((factor * self.max_positions / self.max_positions) - (factor - 1)) ** (dim / (dim - 2))
            else:
                seq_len = torch.maximum(seq_len, torch.tensor(self.max_positions, dtype=seq_len.dtype,
                                                              device=seq_len.device))
                base = base * ((factor * seq_len / self.max_positions) - (factor - 1)) ** (dim / (dim - 2))
            return 1.0 / (base ** exponents)
        if self.scaling == "longrope":
            ext = torch.tensor(self.long_factor if long else self.short_factor, dtype=torch.float32, device=device)
            return 1.0 / (ext * base ** exponents)
        if self.scaling == "yarn":
            return self._yarn(torch, dim, base ** exponents)
        inv_freq = 1.0 / (base ** exponents)
        if self.axis_frequencies == "strided":  # dealt out to the axes, each axis' together
            return torch.cat([inv_freq[a::self.axes] for a in range(self.axes)])
        if self.scaling == "linear":
            return inv_freq / factor
        if self.scaling == "llama3":
            return self._llama3(torch, inv_freq)
        return inv_freq

    def _yarn(self, torch, dim: int, pos_freqs):
        def turns(rotations):  # the dim that turns `rotations` times over original_max positions
            return dim * math.log(self.context / (rotations * 2 * math.pi)) / (2 * math.log(self.base))
        low, high = turns(self.beta_fast), turns(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001  # transformers' guard against a zero-width ramp
        ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
        extrapolation = 1 - ramp.to(pos_freqs.device)
        return (1.0 / (self.scale_factor * pos_freqs) * (1 - extrapolation)
                + 1.0 / pos_freqs * extrapolation)

    def _llama3(self, torch, inv_freq):
        factor, low, high, context = self.factor, self.low_freq_factor, self.high_freq_factor, self.context
        low_wavelen, high_wavelen = context / low, context / high
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        if high == low:  # no band between (Llama 4 Scout's 1.0 and 1.0): transformers blends nothing
            return scaled
        smooth = (context / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, scaled)

    def init(self, tensor, value, init):
        torch = init.torch
        inv_freq = self.inv_freq(torch)
        if self.positions is None:
            value.copy_(inv_freq)
            return
        angles = torch.arange(self.positions, dtype=torch.int64).float()[:, None] * inv_freq
        value.copy_(torch.cat([angles.sin(), angles.cos()], dim=1))


@op("grid_positions", category="embedding", example={"grid": [16, 16], "tile": [2, 2]})
class GridPositions(Op):
    """The coordinates of a grid's cells in the order a patch sequence lists them: no input ->
    [n, 1, N] for an n-dim `grid` of N cells (row, column, ...), row by row; with `tile` the
    cells of each tile together, tiles row by row (Qwen2-VL's patches, each 2x2 tile side by
    side for its merger).  The position_ids of an axial `rotary_embedding` (`axes: n`).

    `centers: true` gives each cell's centre on a [-1, 1] scale instead of its index, 2·(i + 0.5)/n - 1
    along an axis of n cells (float32), times `scale` (DINOv3: 2π, its patch coordinates).  `prefix: p`
    puts p cells at coordinate 0 before the grid, [n, 1, p + N]: tokens ahead of the patches (a class
    token, register tokens) whose rotation is the identity (angle 0: cos 1, sin 0), as DINOv3 leaves
    them unrotated."""

    grid: tuple[int, ...]  # the grid's size per axis (rows, columns, ...)
    tile: tuple[int, ...] | None = None  # the size per axis of the tiles whose cells are listed together; none: plain
    #   row order
    centers: bool = False  # the cells' centres scaled to [-1, 1] (float) instead of their indices
    scale: float = 1.0  # multiplies the centres' coordinates (DINOv3: 2π)
    prefix: int = 0  # cells at coordinate 0 before the grid (tokens that are not patches: their rotation is none)

    keeps = ""

    def __post_init__(self):
        if not self.grid or any(not isinstance(n, int) or n <= 0 for n in self.grid):
            raise invalid(self, f"grid must list positive sizes; received {list(self.grid)}")
        tile = self.tile or (1,) * len(self.grid)
        if len(tile) != len(self.grid) or any(not isinstance(b, int) or b <= 0 for b in tile):
            raise invalid(self, f"tile must list a positive size for each of the grid's {len(self.grid)} "
                                f"dims; received {list(tile)}")
        if any(n % b for n, b in zip(self.grid, tile)):
            raise invalid(self, f"the grid {list(self.grid)} is not made of whole {list(tile)} tiles")
        if not isinstance(self.prefix, int) or self.prefix < 0:
            raise invalid(self, f"prefix counts cells before the grid (0 or more); received {self.prefix}")
        if self.scale != 1.0 and not self.centers:
            raise invalid(self, f"scale multiplies the centres' coordinates: give centers: true "
                                f"(received scale={self.scale})")

    def infer_shape(self):
        return (len(self.grid), 1, self.prefix + prod(self.grid))

    def forward(self, run):
        torch, n = run.torch, len(self.grid)
        tile = self.tile or (1,) * n
        if self.centers:  # as DINOv3's get_patches_center_coordinates, float32
            axes = [2.0 * (torch.arange(0.5, g, dtype=torch.float32, device=run.device) / g) - 1.0
                    for g in self.grid]
        else:
            axes = [torch.arange(g, device=run.device) for g in self.grid]
        coords = torch.stack(torch.meshgrid(*axes, indexing="ij"))
        # [n, g0/b0, b0, g1/b1, b1, ...] -> [n, g0/b0, g1/b1, ..., b0, b1, ...]
        coords = coords.reshape(n, *[d for g, b in zip(self.grid, tile) for d in (g // b, b)])
        coords = coords.permute(0, *range(1, 2 * n + 1, 2), *range(2, 2 * n + 1, 2)).reshape(n, 1, -1)
        if self.centers and self.scale != 1.0:
            coords = self.scale * coords
        if self.prefix:
            coords = torch.cat([coords.new_zeros(n, 1, self.prefix), coords], dim=-1)
        return coords


@op("multimodal_positions", category="embedding", aliases=("mrope_positions",),
    example={"token": 151655, "grid": [1, 8, 8]})
class MultimodalPositions(Op):
    """M-RoPE position ids (Qwen2-VL): input_ids [B, S] -> [3, B, S] (time, row, column).

    Text tokens count up by one on all three axes.  The input's `token`s are image features,
    t·h·w per image (`grid: [t, h, w]`, in the language model's tokens): each image's token at
    frame f, row r, column c is at (p + f, p + r, p + c), where p is the position after the text
    before it, and the text after the image continues from p + max(h, w).  The rotary_embedding
    (`axes: 3`, `sections`) that reads them turns each run of frequencies by one axis.  An
    optional second input `mask` [B, S] (0: padding) leaves padding out: the positions count the
    tokens that are not padding, and padding takes 0 on every axis (transformers' get_rope_index
    with an attention_mask)."""

    token: int  # the id of the image placeholder tokens
    grid: tuple[int, int, int]  # [t, h, w]: each image's frames, rows and columns in language-model tokens

    keeps = ""

    def __post_init__(self):
        if len(self.grid) != 3 or any(not isinstance(n, int) or n <= 0 for n in self.grid):
            raise invalid(self, f"grid must be three positive sizes [t, h, w]; received {list(self.grid)}")

    def infer_shape(self, ids, mask=None):
        expect_rank(ids, 2, "input_ids")
        expect_padding_mask(mask, ids)
        return (3, *ids)

    def forward(self, run, ids, mask=None):
        torch = run.torch
        if ids.is_meta:  # no token to look for on the meta device: the positions' shape alone
            return torch.zeros(3, *ids.shape, dtype=torch.int64, device=ids.device)
        t, h, w = self.grid
        item = torch.stack(torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij"))
        item = item.reshape(3, t * h * w).to(ids.device)
        out = torch.zeros(3, *ids.shape, dtype=torch.int64, device=ids.device)
        for row, tokens in enumerate((ids == self.token).tolist()):
            if mask is None:
                out[:, row] = self._row(torch, tokens, item, row, ids.device)
            else:
                keep = mask[row].to(torch.bool)
                out[:, row, keep] = self._row(torch, [x for x, k in zip(tokens, keep.tolist()) if k], item, row,
                                              ids.device)
        return out

    def _row(self, torch, tokens: list[bool], item, row: int, device):
        """The [3, len(tokens)] positions of one row's tokens (True: an image token)."""
        t, h, w = self.grid
        size = t * h * w
        out = torch.zeros(3, len(tokens), dtype=torch.int64, device=device)
        position, i = 0, 0
        for is_image, run in itertools.groupby(tokens):  # runs of text tokens and of image tokens
            length = len(list(run))
            if not is_image:
                out[:, i:i + length] = torch.arange(position, position + length, device=device)
                position += length
            elif length % size:
                raise ShapeError(f"input_ids row {row}: the image tokens from position "
                                 f"{i + length - length % size} are fewer than "
                                 f"an image's {t}x{h}x{w} = {size}",
                                 hint='give each image all of its tokens in input_ids')
            else:  # one image after another
                for start in range(i, i + length, size):
                    out[:, start:start + size] = item + position
                    position += max(h, w)
            i += length
        return out
