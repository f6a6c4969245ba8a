"""Lookup tables and position encodings: `embedding`, `position_embedding`,
`sinusoidal_position`, `rotary_embedding`, `grid_positions`, `multimodal_positions`,
`relative_position_bias`."""
from __future__ import annotations

from typing import Literal

import itertools
import math

from ..dims import Shape, ceil_div, prod
from ..errors import ShapeError
from .base import Op, Tensor, check, expect_dim, expect_rank, invalid, op, positive


def _seq_len(x: Shape, what: str = "input") -> object:
    expect_rank(x, tuple(range(2, 9)), what)
    return x[1]


def _fits(seq, limit: int, owner: str) -> None:
    if isinstance(seq, int):
        check(seq <= limit, f"sequence length {seq} exceeds the {limit} positions of {owner}")


@op("embedding", category="embedding",
     aliases=("nn.Embedding", "token_embedding"), example={"num_embeddings": 50257, "embedding_dim": 768})
class Embedding(Op):
    """Table of num_embeddings vectors of size embedding_dim; ids [..] -> [.., embedding_dim].

    `scale` multiplies the vectors by a constant kept as a scalar buffer `embed_scale` that
    state_dict() does not save (Gemma's scaled word embedding: scale √hidden)."""

    num_embeddings: int
    embedding_dim: int
    scale: float | None = None

    def __post_init__(self):
        positive(self, "num_embeddings", "embedding_dim")

    def infer_shape(self, ids):
        return (*ids, self.embedding_dim)

    def params(self):
        yield Tensor("weight", (self.num_embeddings, self.embedding_dim))

    def buffers(self):
        if self.scale is not None:
            yield Tensor("embed_scale", (), persistent=False)

    def flops(self, inputs, outputs):
        return prod(outputs[0]) if self.scale is not None else 0

    def forward(self, run, ids):
        weight = run.tensor("weight")
        out = run.F.embedding(ids, weight)
        return out if self.scale is None else out * run.tensor("embed_scale").to(weight.dtype)

    def init(self, tensor, value, init):
        if tensor.name == "embed_scale":
            value.fill_(self.scale)
        else:
            init.normal(value)


@op("position_embedding", category="embedding",
     aliases=("learned_position", "wpe"), example={"num_positions": 1024, "embedding_dim": 768})
class PositionEmbedding(Op):
    """Learned absolute positions; [B, S, ..] -> [1, S, embedding_dim] (offset: rows reserved before position 0, OPT/BART use 2).

    `pad`: the input is token ids [B, S] and positions count only the tokens that are not `pad`:
    a row's k-th such token takes row offset + k - 1 and a padding token row offset - 1 (fairseq's
    make_positions, RoBERTa's and MPNet's create_position_ids_from_input_ids with offset = pad + 1),
    so a row padded on the left starts at position 0 as one without padding -> [B, S, embedding_dim]."""

    num_positions: int
    embedding_dim: int
    offset: int = 0
    pad: int | None = None

    def __post_init__(self):
        positive(self, "num_positions", "embedding_dim")
        if self.pad is not None and self.offset < 1:
            raise invalid(self, f"pad={self.pad} puts padding tokens at row offset - 1: offset must be at least 1; "
                                f"received offset={self.offset}")

    def infer_shape(self, x):
        seq = _seq_len(x)
        _fits(seq, self.num_positions - self.offset, "the position table")
        if self.pad is not None:
            expect_rank(x, 2, "token ids [B, S] (positions that skip padding)")
            return (x[0], seq, self.embedding_dim)
        return (1, seq, self.embedding_dim)

    def params(self):
        yield Tensor("weight", (self.num_positions, self.embedding_dim))

    def forward(self, run, x):
        torch = run.torch
        if self.pad is not None:
            keep = (x != self.pad).to(torch.int64)
            positions = torch.cumsum(keep, dim=1) * keep + (self.offset - 1)
            return run.F.embedding(positions, run.tensor("weight"))
        positions = torch.arange(x.shape[1], device=x.device) + self.offset
        return run.F.embedding(positions, run.tensor("weight")).unsqueeze(0)

    def init(self, tensor, value, init):
        init.normal(value)


@op("sinusoidal_position", category="embedding",
     aliases=("sinusoidal_positional_encoding", "positional_encoding"), example={"embedding_dim": 512})
class SinusoidalPosition(Op):
    """Fixed sin/cos positions (no parameters); a buffer of num_positions rows when given."""

    embedding_dim: int
    num_positions: int | None = None

    def __post_init__(self):
        positive(self, "embedding_dim", "num_positions")

    def infer_shape(self, x):
        seq = _seq_len(x)
        if self.num_positions is not None:
            _fits(seq, self.num_positions, "the sinusoidal table")
        return (1, seq, self.embedding_dim)

    def buffers(self):
        if self.num_positions is not None:
            yield Tensor("weight", (self.num_positions, self.embedding_dim))

    def forward(self, run, x):
        torch = run.torch
        positions = torch.arange(x.shape[1], dtype=torch.float32, device=x.device)[:, None]
        rates = torch.exp(torch.arange(0, self.embedding_dim, 2, dtype=torch.float32, device=x.device)
                          * (-math.log(10000.0) / self.embedding_dim))
        table = torch.zeros(x.shape[1], self.embedding_dim, device=x.device)
        table[:, 0::2] = torch.sin(positions * rates)
        table[:, 1::2] = torch.cos(positions * rates)[:, : self.embedding_dim // 2]
        return table.unsqueeze(0)


@op("sine_position_2d", category="embedding",
    aliases=("DetrSinePositionEmbedding", "PositionEmbeddingSine"), example={"num_position_features": 128})
class SinePosition2d(Op):
    """Fixed sin/cos positions of a feature map (DETR's): x [B, C, H, W] -> [B, 2·F, H, W], no tensors.

    F = num_position_features per axis: the row's F features, then the column's, each the sine of
    (position / temperature^(2·floor(i/2)/F)) at even i and its cosine at odd i, positions 1..H and
    1..W (every pixel valid: the all-ones pixel mask).  `normalize` divides the positions by the
    last one (+ 1e-6) and multiplies by `scale` (2π), as DetrSinePositionEmbedding(normalize=True).
    """

    num_position_features: int
    temperature: float = 10000.0
    normalize: bool = False
    scale: float = 2 * math.pi

    def __post_init__(self):
        positive(self, "num_position_features")
        if self.num_position_features % 2:
            raise invalid(self, f"num_position_features must be even (sine and cosine pairs); "
                                f"received {self.num_position_features}")

    def infer_shape(self, x):
        expect_rank(x, (4,))
        b, _, h, w = x
        return (b, 2 * self.num_position_features, h, w)

    def forward(self, run, x):
        torch = run.torch
        b, _, h, w = x.shape
        y_embed = torch.arange(1, h + 1, dtype=x.dtype, device=x.device)[None, :, None].expand(b, h, w)
        x_embed = torch.arange(1, w + 1, dtype=x.dtype, device=x.device)[None, None, :].expand(b, h, w)
        if self.normalize:
            y_embed = y_embed / (y_embed[:, -1:, :] + 1e-6) * self.scale
            x_embed = x_embed / (x_embed[:, :, -1:] + 1e-6) * self.scale
        f = self.num_position_features
        dim_t = torch.arange(f, dtype=torch.int64, device=x.device).to(x.dtype)
        dim_t = self.temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / f)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


@op("learned_position_2d", category="embedding",
    aliases=("DetrLearnedPositionEmbedding",), example={"num_position_features": 128})
class LearnedPosition2d(Op):
    """Learned positions of a feature map (DETR's): x [B, C, H, W] -> [B, 2·F, H, W].

    Two tables of num_positions rows and F = num_position_features columns, row_embeddings and
    column_embeddings: each pixel's vector is its column's row of column_embeddings, then its
    row's row of row_embeddings (DetrLearnedPositionEmbedding; H and W at most num_positions).
    """

    num_position_features: int
    num_positions: int = 50

    def __post_init__(self):
        positive(self, "num_position_features", "num_positions")

    def infer_shape(self, x):
        expect_rank(x, (4,))
        b, _, h, w = x
        _fits(h, self.num_positions, "row_embeddings")
        _fits(w, self.num_positions, "column_embeddings")
        return (b, 2 * self.num_position_features, h, w)

    def params(self):
        yield Tensor("row_embeddings.weight", (self.num_positions, self.num_position_features))
        yield Tensor("column_embeddings.weight", (self.num_positions, self.num_position_features))

    def forward(self, run, x):
        torch = run.torch
        b, _, h, w = x.shape
        x_emb = run.F.embedding(torch.arange(w, device=x.device), run.tensor("column_embeddings.weight"))
        y_emb = run.F.embedding(torch.arange(h, device=x.device), run.tensor("row_embeddings.weight"))
        pos = torch.cat([x_emb.unsqueeze(0).repeat(h, 1, 1), y_emb.unsqueeze(1).repeat(1, w, 1)], dim=-1)
        return pos.permute(2, 0, 1).unsqueeze(0).repeat(b, 1, 1, 1)

    def init(self, tensor, value, init):
        init.uniform(value)


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
        low_freq_factor) (Llama 3.1-3.3).
      - `dynamic` (NTK): in forward, at L = the largest position + 1 (S without position_ids)
        beyond `max_positions`, the base becomes base·(factor·L/max_positions - factor + 1)^(d/(d-2))
        (d = rotary_dim) and inv_freq is rewritten; back at fewer than max_positions it is
        reset, and between, the last one stays (transformers' cached length, kept per module).
      - `yarn`: dims that turn fewer than `beta_slow` times over `original_max` positions are
        divided by factor, those that turn more than `beta_fast` times are kept, and a linear
        ramp (its ends rounded out with `truncate`) blends the ones between.
      - `longrope`: frequencies divided by `short_factor` (one per frequency), or in forward by
        `long_factor` when L exceeds `original_max` (inv_freq is rewritten with the set in use).
    `factor` is required by linear, dynamic and llama3; yarn and longrope default it to
    max_positions / original_max, and original_max defaults to max_positions (as transformers'
    config standardisation fills it).  The tables are multiplied by `attention_factor`; without
    one, 1, except yarn's 0.1·ln(factor) + 1 (or the ratio of that with `mscale` to that with
    `mscale_all_dim`, when both are non-zero) and longrope's √(1 + ln(factor) / ln(original_max))
    (1 when factor <= 1).  `max_positions` is the config's max_position_embeddings.

    Without `positions` the buffer is named `{prefix}inv_freq`; `original: true` adds the copy
    transformers 5 keeps for dynamic rope updates, `{prefix}original_inv_freq` (ModernBERT's
    rotary_emb holds full_attention_inv_freq, full_attention_original_inv_freq and the same for
    sliding_attention).

    A second input gives the positions instead of 0..S-1: position_ids [B, S] -> tables
    [B, S, width].  With `axes: n` the positions have n axes, [n, B, S] (a `grid_positions` or
    `multimodal_positions` table), and each frequency takes its angle from one axis: with
    `sections` (M-RoPE, Qwen2-VL's mrope_section) the ceil(rotary_dim/2) frequencies are cut into
    runs of those lengths and run i reads axis i mod n; without, the rotation is axial (a 2-D
    ViT's): each axis has its own copy of the frequencies of rotary_dim // n dims, laid side by
    side (inv_freq holds one copy)."""

    head_dim: int
    rotary_dim: int | None = None
    base: float = 10000.0
    positions: int | None = None  # a table of this many positions ([sin | cos]) instead of inv_freq
    scaling: Literal["none", "linear", "dynamic", "yarn", "longrope", "llama3"] = "none"
    factor: float | None = None
    original_max: int | None = None    # yarn, longrope, llama3: the positions the model was trained on
    max_positions: int | None = None   # dynamic (and yarn's, longrope's default factor): max_position_embeddings
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    truncate: bool = True
    mscale: float | None = None
    mscale_all_dim: float | None = None
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None
    attention_factor: float | None = None
    prefix: str = ""
    original: bool = False
    axes: int = 1  # the position_ids input's axes: [axes, B, S] when more than 1
    sections: tuple[int, ...] | None = None  # M-RoPE: frequencies per run, run i from axis i mod axes

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
                 "yarn": (), "longrope": ("short_factor", "long_factor")}[kind]
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
        if kind == "llama3" and not self.high_freq_factor > self.low_freq_factor:
            raise invalid(self, f"scaling 'llama3' needs high_freq_factor > low_freq_factor; received "
                                f"low_freq_factor={self.low_freq_factor}, high_freq_factor={self.high_freq_factor}")
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
        """The dims one copy of the frequencies is computed over (an axis' share when axial)."""
        return self.dim // self.axes if self.axial else self.dim

    @property
    def frequencies(self) -> int:
        return ceil_div(self.ladder, 2)

    @property
    def width(self):
        return 2 * self.frequencies * (self.axes if self.axial else 1)

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
            if self.sections is not None:  # run i of the frequencies turns with axis i mod axes
                runs = freqs.split(list(self.sections), dim=-1)
                freqs = torch.cat([part[i % self.axes] for i, part in enumerate(runs)], dim=-1)
            elif self.axes > 1:  # each axis its own copy of the frequencies, side by side
                freqs = torch.cat(list(freqs), dim=-1)
            emb = torch.cat([freqs, freqs], dim=-1)
            cos, sin = emb.cos(), emb.sin()
        scale = self.table_scale
        return (cos * scale, sin * scale) if scale != 1 else (cos, sin)

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
    side for its merger).  The position_ids of an axial `rotary_embedding` (`axes: n`)."""

    grid: tuple[int, ...]
    tile: tuple[int, ...] | None = None

    def __post_init__(self):
        if not self.grid or any(not isinstance(n, int) or n <= 0 for n in self.grid):
            raise invalid(self, f"grid must list positive sizes; received {list(self.grid)}")
        tile = self.tile or (1,) * len(self.grid)
        if len(tile) != len(self.grid) or any(not isinstance(b, int) or b <= 0 for b in tile):
            raise invalid(self, f"tile must list a positive size for each of the grid's {len(self.grid)} "
                                f"dims; received {list(tile)}")
        if any(n % b for n, b in zip(self.grid, tile)):
            raise invalid(self, f"the grid {list(self.grid)} is not made of whole {list(tile)} tiles")

    def infer_shape(self):
        return (len(self.grid), 1, prod(self.grid))

    def forward(self, run):
        torch, n = run.torch, len(self.grid)
        tile = self.tile or (1,) * n
        coords = torch.stack(torch.meshgrid(*[torch.arange(g, device=run.device) for g in self.grid],
                                            indexing="ij"))
        # [n, g0/b0, b0, g1/b1, b1, ...] -> [n, g0/b0, g1/b1, ..., b0, b1, ...]
        coords = coords.reshape(n, *[d for g, b in zip(self.grid, tile) for d in (g // b, b)])
        coords = coords.permute(0, *range(1, 2 * n + 1, 2), *range(2, 2 * n + 1, 2))
        return coords.reshape(n, 1, -1)


@op("multimodal_positions", category="embedding", aliases=("mrope_positions",),
    example={"token": 151655, "grid": [1, 8, 8]})
class MultimodalPositions(Op):
    """M-RoPE position ids (Qwen2-VL): input_ids [B, S] -> [3, B, S] (time, row, column).

    Text tokens count up by one on all three axes.  The input's `token`s are image features,
    t·h·w per image (`grid: [t, h, w]`, in the language model's tokens): each image's token at
    frame f, row r, column c is at (p + f, p + r, p + c), where p is the position after the text
    before it, and the text after the image continues from p + max(h, w).  The rotary_embedding
    (`axes: 3`, `sections`) that reads them turns each run of frequencies by one axis."""

    token: int
    grid: tuple[int, int, int]

    def __post_init__(self):
        if len(self.grid) != 3 or any(not isinstance(n, int) or n <= 0 for n in self.grid):
            raise invalid(self, f"grid must be three positive sizes [t, h, w]; received {list(self.grid)}")

    def infer_shape(self, ids):
        expect_rank(ids, 2, "input_ids")
        return (3, *ids)

    def forward(self, run, ids):
        torch = run.torch
        t, h, w = self.grid
        size = t * h * w
        item = torch.stack(torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij"))
        item = item.reshape(3, size).to(ids.device)
        out = torch.zeros(3, *ids.shape, dtype=torch.int64, device=ids.device)
        for row, tokens in enumerate((ids == self.token).tolist()):
            position, i = 0, 0
            for is_image, run in itertools.groupby(tokens):  # runs of text tokens and of image tokens
                length = len(list(run))
                if not is_image:
                    out[:, row, i:i + length] = torch.arange(position, position + length, device=ids.device)
                    position += length
                elif length % size:
                    raise ShapeError(f"input_ids row {row}: the image tokens from position "
                                     f"{i + length - length % size} are fewer than "
                                     f"an image's {t}x{h}x{w} = {size}")
                else:  # one image after another
                    for start in range(i, i + length, size):
                        out[:, row, start:start + size] = item + position
                        position += max(h, w)
                i += length
        return out


@op("relative_position_bias", category="attention",
     aliases=("t5_relative_attention_bias",), example={"num_buckets": 32, "heads": 8})
class RelativePositionBias(Op):
    """T5 bucketed relative positions: query [B, S, ..] (, key [B, T, ..]) -> bias [1, heads, S, T];
    `bidirectional` (an encoder's) or causal buckets (a decoder's), logarithmic up to `max_distance`.
    The table has `num_buckets` rows; `bucket_space` (default: num_buckets) is the number of buckets
    the distances are sorted into, when a model sorts them into another number than its table has
    (MPNet: 32, whatever its relative_attention_num_buckets)."""

    num_buckets: int
    heads: int
    bidirectional: bool = True
    max_distance: int = 128
    bucket_space: int | None = None

    def __post_init__(self):
        positive(self, "num_buckets", "heads", "bucket_space")

    def infer_shape(self, query, key=None):
        s = _seq_len(query, "query")
        t = _seq_len(key, "key") if key is not None else s
        return (1, self.heads, s, t)

    def params(self):
        yield Tensor("weight", (self.num_buckets, self.heads))

    def forward(self, run, query, key=None):
        torch = run.torch
        s, t = query.shape[1], (key if key is not None else query).shape[1]
        relative = torch.arange(t, device=query.device)[None, :] - torch.arange(s, device=query.device)[:, None]
        space = self.num_buckets if self.bucket_space is None else self.bucket_space
        buckets = _t5_bucket(torch, relative, self.bidirectional, space, self.max_distance)
        return run.F.embedding(buckets, run.tensor("weight")).permute(2, 0, 1).unsqueeze(0)

    def init(self, tensor, value, init):
        init.normal(value)


def _t5_bucket(torch, relative, bidirectional: bool, num_buckets: int, max_distance: int):
    """T5's bucket of each relative position (memory - query): exact near, logarithmic far."""
    buckets = 0
    if bidirectional:
        num_buckets //= 2
        buckets = (relative > 0).long() * num_buckets
        relative = relative.abs()
    else:
        relative = -torch.minimum(relative, torch.zeros_like(relative))
    exact = num_buckets // 2
    large = exact + (torch.log(relative.float() / exact) / math.log(max_distance / exact)
                     * (num_buckets - exact)).long()
    large = torch.minimum(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(relative < exact, relative, large)


@op("alibi", category="attention", aliases=("build_alibi_tensor", "ALiBi", "attention_with_linear_biases"),
    example={"heads": 8})
class ALiBi(Op):
    """Attention with linear biases (BLOOM, Falcon, MPT): [B, T, ..] -> bias [1, heads, 1, T] =
    slope(head) · key position, slopes the geometric series of Press et al. (extended as BLOOM
    extends them for a head count that is not a power of 2); no parameters.  `dtype` is the
    precision the biases are computed in before they become float32 (transformers' Falcon
    rounds them to bfloat16)."""

    heads: int
    dtype: Literal["float32", "bfloat16"] = "float32"

    def __post_init__(self):
        positive(self, "heads")

    def infer_shape(self, x):
        return (1, self.heads, 1, _seq_len(x))

    def forward(self, run, x):
        torch = run.torch
        dtype = getattr(torch, self.dtype)
        slopes = torch.tensor(_alibi_slopes(self.heads), dtype=torch.float32, device=x.device).to(dtype)
        positions = torch.arange(x.shape[1], device=x.device)
        return (slopes[:, None, None] * positions[None, None, :]).unsqueeze(0).float()


def _alibi_slopes(heads: int) -> list[float]:
    closest = 2 ** math.floor(math.log2(heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, closest + 1)]
    if closest != heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** p for p in range(1, 1 + 2 * min(closest, heads - closest), 2)]
    return slopes
