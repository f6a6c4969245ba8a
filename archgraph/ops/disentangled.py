"""DeBERTa's disentangled attention: `disentangled_attention` (content and relative position
scores from one table of relative position embeddings)."""
from __future__ import annotations

import math

from .attention import check_dropout, core_kept, expect_key_mask
from .base import Op, Tensor, expect_dim, expect_rank, invalid, keeps_inputs, keeps_own, op, positive, quotient


@op("disentangled_attention", category="attention",
    aliases=("DisentangledSelfAttention", "deberta_attention"), example={"hidden": 768, "heads": 12, "span": 256})
class DisentangledAttention(Op):
    """DeBERTa (v2, v3) attention: x [B, S, hidden], rel [2·span, hidden] -> [B, S, heads·head_dim]
    (the output projection is the model's own linear).

    Content-to-content scores q·kᵀ, plus with `relative` the content-to-position (`c2p`: q against
    the keys of the relative embeddings) and position-to-content (`p2c`: k against their queries)
    scores, each read at the bucket of the distance i - j: within ±buckets/2 the distance itself,
    beyond it logarithmic up to `max_position` (`buckets` 0: the distance, clamped to ±span).  All
    scores are divided by sqrt(head_dim · (1 + c2p + p2c)).  The positions' keys and queries come
    from pos_key_proj and pos_query_proj, or with `share_att_key` from key_proj and query_proj.
    Tensors: query_proj, key_proj, value_proj (biased) and the pos_ projections not shared.
    An optional input `mask` [B, S] (1: a token, 0: padding), by keyword (`in: {x: .., rel: ..,
    mask: ..}`), hides the padding from every query and every score of a padding query, as
    DeBERTa's query-by-key attention mask.  `dropout` zeroes attention probabilities in training
    only (config.attention_probs_dropout_prob)."""

    hidden: int  # width of the input x
    heads: int  # number of heads
    span: int                      # rows of rel / 2: position_buckets, else max_relative_positions
    head_dim: int | None = None  # width of each head (default hidden / heads)
    buckets: int = 0               # position_buckets (0: no log buckets)
    max_position: int = 512        # max_relative_positions (the log buckets' end)
    relative: bool = True          # relative_attention: the position scores (and their projections)
    c2p: bool = True  # add the content-to-position scores
    p2c: bool = True  # add the position-to-content scores
    share_att_key: bool = False  # the relative embeddings use the content projections instead of pos_key_proj and
    #   pos_query_proj
    dropout: float = 0.0  # probability of zeroing each attention probability, in training only

    def __post_init__(self):
        check_dropout(self)
        positive(self, "hidden", "heads", "span", "head_dim", "max_position")
        if self.buckets < 0:
            raise invalid(self, f"buckets must be 0 (none) or more; received {self.buckets}")
        if self.head_dim is None and self.hidden % self.heads:
            raise invalid(self, f"hidden={self.hidden} is not divisible by heads={self.heads}; give head_dim")

    @property
    def d(self) -> int:
        return self.head_dim if self.head_dim is not None else quotient(self.hidden, self.heads)

    def _projections(self) -> list[str]:
        names = ["query_proj", "key_proj", "value_proj"]
        if self.relative and not self.share_att_key:
            names += ["pos_key_proj"] * self.c2p + ["pos_query_proj"] * self.p2c
        return names

    def infer_shape(self, x, rel=None, mask=None):
        expect_rank(x, 3, "input")
        expect_dim(x[-1], self.hidden, "last dimension of the input (hidden)")
        if mask is not None:
            expect_key_mask(mask, x[0], x[1])
        if self.relative:
            if rel is None:
                raise invalid(self, "relative attention reads the relative embeddings: in: [x, rel]")
            expect_rank(rel, 2, "relative embeddings")
            expect_dim(rel[0], 2 * self.span, "rows of the relative embeddings (2·span)")
            expect_dim(rel[1], self.hidden, "width of the relative embeddings (hidden)")
        return (x[0], x[1], self.heads * self.d)

    def params(self):
        for name in self._projections():
            yield Tensor(f"{name}.weight", (self.heads * self.d, self.hidden))
            yield Tensor(f"{name}.bias", (self.heads * self.d,))

    def flops(self, inputs, outputs):
        b, s = inputs[0][0], inputs[0][1]
        width = self.heads * self.d
        content = 3 * 2 * b * s * self.hidden * width + 2 * 2 * b * self.heads * s * s * self.d
        if not self.relative:
            return content
        terms = self.c2p + self.p2c
        return content + terms * (2 * 2 * self.span * self.hidden * width + 2 * b * self.heads * s * 2 * self.span * self.d)

    def saved(self, inputs, outputs, eager):
        """x and the relative embeddings, q, k and v, the relative terms' score matrices (computed
        eagerly, as DeBERTa does) and the core's."""
        b, s = inputs[0][0], inputs[0][1]
        width = b * s * self.heads * self.d
        terms = (self.c2p + self.p2c) if self.relative else 0
        kept = keeps_inputs(inputs, 0, 1) + [keeps_own(width, heads=True) for _ in range(3)]
        return kept + core_kept(b, self.heads, s, s, self.d, self.d, True, self.dropout, 1 + terms)

    def forward(self, run, x, rel=None, mask=None):
        torch = run.torch
        b, s, h, d = x.shape[0], x.shape[1], self.heads, self.d

        def heads_of(name, t):  # [.., n, hidden] -> [B|1, heads, n, d]
            out = run.linear(name, t, bias=True)
            return out.view(-1, t.shape[-2], h, d).transpose(1, 2)

        q, k, v = heads_of("query_proj", x), heads_of("key_proj", x), heads_of("value_proj", x)
        factor = 1 + self.c2p + self.p2c
        scale = math.sqrt(d * factor)
        scores = torch.matmul(q, k.transpose(-1, -2) / scale)
        if self.relative:
            rel = rel[None]
            where = torch.arange(s, device=x.device)
            distance = self._bucket(torch, where[:, None] - where[None, :])   # [S, S]: i - j
            if self.c2p:
                pos_k = heads_of("key_proj" if self.share_att_key else "pos_key_proj", rel)  # [1, h, 2·span, d]
                index = torch.clamp(distance + self.span, 0, 2 * self.span - 1).expand(b, h, s, s)
                scores = scores + torch.gather(torch.matmul(q, pos_k.transpose(-1, -2)), -1, index) / scale
            if self.p2c:
                pos_q = heads_of("query_proj" if self.share_att_key else "pos_query_proj", rel)
                index = torch.clamp(-distance + self.span, 0, 2 * self.span - 1).expand(b, h, s, s)
                p2c = torch.gather(torch.matmul(k, pos_q.transpose(-1, -2)), -1, index).transpose(-1, -2)
                scores = scores + p2c / scale
        if mask is not None:  # query and key both tokens: [B, 1, S, 1] x [B, 1, 1, S]
            padding = mask == 0
            hidden = padding[:, None, None, :] | padding[:, None, :, None]
            scores = scores.masked_fill(hidden, torch.finfo(scores.dtype).min)
        probs = run.F.dropout(torch.softmax(scores, dim=-1), run.dropout(self.dropout))
        return torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h * d)

    def _bucket(self, torch, relative):
        """DeBERTa's make_log_bucket_position: exact within ±buckets/2, logarithmic beyond."""
        if self.buckets <= 0:
            return relative
        mid = self.buckets // 2
        sign = torch.sign(relative)
        inside = (relative < mid) & (relative > -mid)
        absolute = torch.where(inside, torch.tensor(mid - 1).type_as(relative), torch.abs(relative))
        log_pos = torch.ceil(torch.log(absolute / mid) / torch.log(torch.tensor((self.max_position - 1) / mid))
                             * (mid - 1)) + mid
        return torch.where(absolute <= mid, relative.type_as(log_pos), log_pos * sign).long()
