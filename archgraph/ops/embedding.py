"""Lookup tables and position encodings: `embedding`, `position_embedding`,
`sinusoidal_position`, `sine_position_2d`, `learned_position_2d`, `resized_positions`,
`relative_position_bias`, `alibi` (rotary positions are in `rotary`)."""
from __future__ import annotations

from typing import Literal

import math

from ..dims import Shape, prod
from ..errors import PositionLimitError, ShapeError
from .base import Op, Tensor, check, expect_dim, expect_rank, invalid, keeps_inputs, keeps_own, op, positive


def _seq_len(x: Shape, what: str = "input") -> object:
    expect_rank(x, tuple(range(2, 9)), what)
    return x[1]


def _fits(seq, limit: int, owner: str) -> None:
    if isinstance(seq, int):
        if seq > limit:
            raise PositionLimitError(f"sequence length {seq} exceeds the {limit} positions of {owner}", limit=limit,
                                     hint=f"give a sequence length of at most {limit} (--set)")


@op("embedding", category="embedding",
     aliases=("nn.Embedding", "token_embedding"), example={"num_embeddings": 50257, "embedding_dim": 768})
class Embedding(Op):
    """Table of num_embeddings vectors of size embedding_dim; ids [..] -> [.., embedding_dim].

    `scale` multiplies the vectors by a constant kept as a scalar buffer `embed_scale` that
    state_dict() does not save (Gemma's scaled word embedding: scale √hidden)."""

    num_embeddings: int  # number of rows of the table (the vocabulary size)
    embedding_dim: int  # width of each vector
    scale: float | None = None  # a constant the looked-up vectors are multiplied by (Gemma: √hidden); none: no
    #   scaling

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

    def saved(self, inputs, outputs, eager):
        return keeps_inputs(inputs, 0, width="index")  # the ids, for the rows' gradients

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
    a row's k-th such token takes row offset + pad + k and a padding token row offset + pad
    (fairseq's make_positions, RoBERTa's and MPNet's create_position_ids_from_input_ids, offset 0),
    so a row padded on the left starts where one without padding does -> [B, S, embedding_dim].

    An optional second input `positions` [B, S] (integers) gives each token's position instead
    (a module's position_ids, or positions counted from a padding mask as OPT does): the output is
    then [B, S, embedding_dim], row `positions + offset` of the table.  Given with `pad`, the
    positions win (a module's `position_ids` input with `default: none`: counted from the ids when
    a call leaves it out, as RoBERTa's)."""

    num_positions: int  # number of positions the table holds (the longest sequence)
    embedding_dim: int  # width of each position's vector
    offset: int = 0  # rows reserved before position 0 (OPT and BART: 2)
    pad: int | None = None  # the padding id: positions count the other tokens only (RoBERTa's)

    def __post_init__(self):
        positive(self, "num_positions", "embedding_dim")

    def infer_shape(self, x, positions=None):
        seq = _seq_len(x)
        _fits(seq, self.num_positions - self.offset, "the position table")
        if self.pad is not None:
            expect_rank(x, 2, "token ids [B, S] (positions that skip padding)")
            _fits(seq, self.num_positions - self.offset - self.pad - 1, "the position table (after pad)")
        if positions is not None:
            expect_rank(positions, 2, "positions [B, S]")
            expect_dim(positions[1], seq, "length of the positions")
            return (positions[0], seq, self.embedding_dim)
        if self.pad is not None:
            return (x[0], seq, self.embedding_dim)
        return (1, seq, self.embedding_dim)

    def params(self):
        yield Tensor("weight", (self.num_positions, self.embedding_dim))

    def saved(self, inputs, outputs, eager):
        """The positions it looked up, int64 (the rows' gradients go to them)."""
        return [keeps_own(prod(outputs[0][:-1]), "index")]

    def forward(self, run, x, positions=None):
        torch = run.torch
        if positions is not None:
            return run.F.embedding(positions.long() + self.offset, run.tensor("weight"))
        if self.pad is not None:
            keep = (x != self.pad).to(torch.int64)
            positions = torch.cumsum(keep, dim=1) * keep + (self.offset + self.pad)
            return run.F.embedding(positions, run.tensor("weight"))
        positions = torch.arange(x.shape[1], device=x.device) + self.offset
        return run.F.embedding(positions, run.tensor("weight")).unsqueeze(0)

    def init(self, tensor, value, init):
        init.normal(value)


@op("sinusoidal_position", category="embedding",
     aliases=("sinusoidal_positional_encoding", "positional_encoding"), example={"embedding_dim": 512})
class SinusoidalPosition(Op):
    """Fixed sin/cos positions (no parameters); a buffer of num_positions rows when given."""

    embedding_dim: int  # width of each position's vector
    num_positions: int | None = None  # rows of a precomputed table kept as a buffer; none: computed, no buffer

    keeps = ""

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

    num_position_features: int  # F: features per axis (the output has 2·F channels)
    temperature: float = 10000.0  # the base of the frequencies
    normalize: bool = False  # positions scaled to [0, scale] by the map's size
    scale: float = 2 * math.pi  # the range normalized positions span (2π)

    keeps = ""

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

    num_position_features: int  # F: columns of each table (the output has 2·F channels)
    num_positions: int = 50  # rows of each table: the largest height or width

    keeps = ""

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


@op("resized_positions", category="embedding",
    aliases=("resize_positional_embeddings",), example={"num_positions": 256, "embedding_dim": 768})
class ResizedPositions(Op):
    """A learned square grid of positions resampled to each image's patch grid.

    NaFlex (SigLIP 2's): x [B, N, ..] and grid [B, 2] (integers: each image's patch rows and
    columns) -> [B, N, embedding_dim].

    The table `weight` [num_positions, embedding_dim] is a side x side grid (side² =
    num_positions); for each image it is resampled to rows x columns (bilinear, antialiased,
    in float32, as F.interpolate does with align_corners false), read row by row, and the
    rows · columns <= N positions are followed by copies of the first one up to N (the
    padding patches'), as transformers' resize_positional_embeddings does."""

    num_positions: int  # rows of the table: a square number, side x side positions
    embedding_dim: int  # width of each position's vector
    mode: Literal["bilinear", "bicubic"] = "bilinear"  # how the grid is resampled (antialiased)

    keeps = ""

    def __post_init__(self):
        positive(self, "num_positions", "embedding_dim")
        if math.isqrt(self.num_positions) ** 2 != self.num_positions:
            raise invalid(self, f"num_positions must be a square number (a side x side grid); "
                                f"received {self.num_positions}")

    def infer_shape(self, x, grid):
        expect_rank(x, tuple(range(2, 9)), "patches [B, N, ..]")
        expect_rank(grid, 2, "grid [B, 2] (each image's patch rows and columns)")
        expect_dim(grid[0], x[0], "batch dimension of the grid")
        expect_dim(grid[1], 2, "last dimension of the grid (rows, columns)")
        return (x[0], x[1], self.embedding_dim)

    def params(self):
        yield Tensor("weight", (self.num_positions, self.embedding_dim))

    def flops(self, inputs, outputs):
        return 7 * prod(outputs[0])  # a bilinear blend per value (the antialiasing filter's width aside)

    def forward(self, run, x, grid):
        table = run.tensor("weight")
        side = math.isqrt(self.num_positions)
        square = table.reshape(side, side, -1).permute(2, 0, 1).unsqueeze(0).float()  # (1, dim, side, side)
        out = table.new_empty(x.shape[0], x.shape[1], self.embedding_dim)
        if grid.is_meta:  # no grid to read on the meta device: the shape alone
            return out
        for i, (rows, columns) in enumerate(grid.tolist()):
            if rows <= 0 or columns <= 0 or rows * columns > x.shape[1]:
                raise ValueError(f"resized_positions: image {i}'s grid {rows} x {columns} must be positive "
                                 f"and hold at most the input's {x.shape[1]} patches")
            resized = run.F.interpolate(square, size=(rows, columns), mode=self.mode, align_corners=False,
                                        antialias=True)
            resized = resized.reshape(self.embedding_dim, rows * columns).transpose(0, 1).to(table.dtype)
            out[i, :rows * columns] = resized
            out[i, rows * columns:] = resized[0]
        return out

    def init(self, tensor, value, init):
        init.normal(value, std=1.0)


@op("relative_position_bias", category="attention",
     aliases=("t5_relative_attention_bias",), example={"num_buckets": 32, "heads": 8})
class RelativePositionBias(Op):
    """T5 bucketed relative positions: query [B, S, ..] (, key [B, T, ..]) -> bias [1, heads, S, T];
    `bidirectional` (an encoder's) or causal buckets (a decoder's), logarithmic up to `max_distance`.
    The table has `num_buckets` rows; `bucket_space` (default: num_buckets) is the number of buckets
    the distances are sorted into, when a model sorts them into another number than its table has
    (MPNet: 32, whatever its relative_attention_num_buckets)."""

    num_buckets: int  # rows of the table (relative_attention_num_buckets)
    heads: int  # number of attention heads (columns of the table)
    bidirectional: bool = True  # buckets for both directions (an encoder); false: past positions only (a decoder)
    max_distance: int = 128  # distances from here on share the last bucket
    bucket_space: int | None = None  # the number of buckets distances are spread over (default num_buckets)

    keeps = ""

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
    rounds them to bfloat16).  An optional second input `positions` [B, T] gives each key's
    position instead of 0..T-1 (transformers counts them from the padding mask: (cumsum(mask) - 1)
    · mask); the bias is then [B, heads, 1, T]."""

    heads: int  # number of attention heads: one slope each
    dtype: Literal["float32", "bfloat16"] = "float32"  # the precision the biases are computed in (float32, or
    #   bfloat16 as Falcon does)

    keeps = ""

    def __post_init__(self):
        positive(self, "heads")

    def infer_shape(self, x, positions=None):
        if positions is not None:
            expect_rank(positions, 2, "key positions [B, T]")
            expect_dim(positions[1], _seq_len(x), "length of the key positions")
            return (positions[0], self.heads, 1, positions[1])
        return (1, self.heads, 1, _seq_len(x))

    def forward(self, run, x, positions=None):
        torch = run.torch
        dtype = getattr(torch, self.dtype)
        slopes = torch.tensor(_alibi_slopes(self.heads), dtype=torch.float32, device=x.device).to(dtype)
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)[None, :]
        return (slopes[None, :, None, None] * positions[:, None, None, :]).float()


def _alibi_slopes(heads: int) -> list[float]:
    closest = 2 ** math.floor(math.log2(heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, closest + 1)]
    if closest != heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** p for p in range(1, 1 + 2 * min(closest, heads - closest), 2)]
    return slopes
