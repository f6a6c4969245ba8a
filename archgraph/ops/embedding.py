"""Lookup tables and position encodings: `embedding`, `position_embedding`,
`sinusoidal_position`, `rotary_embedding`, `relative_position_bias`."""
from __future__ import annotations

from typing import Literal

import math

from ..dims import Shape, ceil_div, prod
from .base import Op, Tensor, check, expect_rank, invalid, op, positive


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
    """Learned absolute positions; [B, S, ..] -> [1, S, embedding_dim] (offset: rows reserved before position 0, OPT/BART use 2)."""

    num_positions: int
    embedding_dim: int
    offset: int = 0

    def __post_init__(self):
        positive(self, "num_positions", "embedding_dim")

    def infer_shape(self, x):
        seq = _seq_len(x)
        _fits(seq, self.num_positions - self.offset, "the position table")
        return (1, seq, self.embedding_dim)

    def params(self):
        yield Tensor("weight", (self.num_positions, self.embedding_dim))

    def forward(self, run, x):
        positions = run.torch.arange(x.shape[1], device=x.device) + self.offset
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

    `scaling: yarn` stretches the context by `factor` (YaRN, as transformers computes it): the
    frequencies of dims that turn fewer than `beta_slow` times over `original_max` positions are
    divided by factor, those that turn more than `beta_fast` times are kept, and a linear ramp
    (its ends rounded out with `truncate`) blends the ones between.  The tables are multiplied by
    `attention_factor` (YaRN's mscale ratio; 1 for plain RoPE).

    Without `positions` the buffer is named `{prefix}inv_freq`; `original: true` adds the copy
    transformers 5 keeps for dynamic rope updates, `{prefix}original_inv_freq` (ModernBERT's
    rotary_emb holds full_attention_inv_freq, full_attention_original_inv_freq and the same for
    sliding_attention).  `scaling: linear` divides every frequency by `factor` (positions
    interpolated: Gemma 3's full-attention layers)."""

    head_dim: int
    rotary_dim: int | None = None
    base: float = 10000.0
    positions: int | None = None  # a table of this many positions ([sin | cos]) instead of inv_freq
    scaling: Literal["none", "linear", "yarn"] = "none"
    factor: float = 1.0
    original_max: int | None = None
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    truncate: bool = True
    attention_factor: float = 1.0
    prefix: str = ""
    original: bool = False

    def __post_init__(self):
        positive(self, "head_dim", "positions")
        if self.rotary_dim is not None and (isinstance(self.rotary_dim, int) and self.rotary_dim < 0):
            raise invalid(self, f"rotary_dim must be 0 or more (0: nothing rotates, as transformers builds "
                                f"int(head_dim * factor) = 0); received {self.rotary_dim}")
        if self.scaling == "linear" and not self.factor > 0:
            raise invalid(self, f"scaling 'linear' needs a positive factor; received factor={self.factor}")
        if self.width > self.head_dim:
            raise invalid(self, f"the tables ({self.width} columns for rotary_dim={self.dim}) must fit in "
                                f"head_dim={self.head_dim}")
        if self.scaling == "yarn" and (self.original_max is None or self.original_max <= 0 or self.factor <= 0):
            raise invalid(self, f"scaling 'yarn' needs a positive factor and original_max (the positions it was "
                                f"trained on); received factor={self.factor}, original_max={self.original_max}")
        if self.prefix and not self.prefix.replace("_", "a").isalnum():
            raise invalid(self, f"prefix must be letters, digits and _ (it starts the buffer's name); "
                                f"received {self.prefix!r}")

    @property
    def dim(self) -> int:
        return self.rotary_dim if self.rotary_dim is not None else self.head_dim

    @property
    def width(self):
        return 2 * ceil_div(self.dim, 2)

    def infer_shape(self, x):
        seq = _seq_len(x)
        if self.positions is not None:
            _fits(seq, self.positions, "the rotary table")
        return [(1, seq, self.width), (1, seq, self.width)]

    def buffers(self):
        if self.positions is not None:
            yield Tensor("", (self.positions, self.width), persistent=False)
        else:
            yield Tensor(f"{self.prefix}inv_freq", (ceil_div(self.dim, 2),), persistent=False)
            if self.original:
                yield Tensor(f"{self.prefix}original_inv_freq", (ceil_div(self.dim, 2),), persistent=False)

    def forward(self, run, x):
        torch = run.torch
        if self.positions is not None:  # rows 0..S-1 of the [sin | cos] table
            sin, cos = run.tensor("")[: x.shape[1]].float().chunk(2, dim=-1)
            cos, sin = torch.cat([cos, cos], dim=-1)[None], torch.cat([sin, sin], dim=-1)[None]
        else:
            positions = torch.arange(x.shape[1], dtype=torch.float32, device=x.device)
            freqs = positions[:, None] * run.tensor(f"{self.prefix}inv_freq").float()[None, :]
            emb = torch.cat([freqs, freqs], dim=-1)[None]
            cos, sin = emb.cos(), emb.sin()
        if self.attention_factor != 1:
            return cos * self.attention_factor, sin * self.attention_factor
        return cos, sin

    def init(self, tensor, value, init):
        torch, dim = init.torch, self.dim
        inv_freq = 1.0 / (self.base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        if self.scaling == "yarn":
            def turns(rotations):  # the dim that turns `rotations` times over original_max positions
                return dim * math.log(self.original_max / (rotations * 2 * math.pi)) / (2 * math.log(self.base))
            low, high = turns(self.beta_fast), turns(self.beta_slow)
            if self.truncate:
                low, high = math.floor(low), math.ceil(high)
            low, high = max(low, 0), min(high, dim - 1)
            ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low or 0.001)).clamp(0, 1)
            inv_freq = inv_freq / self.factor * ramp + inv_freq * (1 - ramp)
        elif self.scaling == "linear":
            inv_freq = inv_freq / self.factor
        if self.positions is None:
            value.copy_(inv_freq)
            return
        angles = torch.arange(self.positions, dtype=torch.int64).float()[:, None] * inv_freq
        value.copy_(torch.cat([angles.sin(), angles.cos()], dim=1))


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
