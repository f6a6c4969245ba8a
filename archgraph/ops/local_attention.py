"""`local_attention`: attention over a window of neighbours computed in blocks, with relative
position logits (the conformer's of the Universal Speech Model: Gemma 3n's and Gemma 4's audio
encoders).  No parameters: the projections, scales and position table are nodes of the block."""
from __future__ import annotations

from ..dims import prod
from .attention import core_kept, expect_key_mask
from .base import Op, check, expect_dim, expect_rank, invalid, keeps_inputs, op, positive


@op("local_attention", category="attention", aliases=("chunked_local_attention", "Gemma4AudioAttention"),
    example={"heads": 8, "chunk": 12, "past": 12, "future": 0})
class LocalAttention(Op):
    """Attention of each query to its neighbours, in blocks: q, k, v [B, S, heads·d], pos [F, heads·d],
    mask [B, S] -> [B, S, heads·d].

    The queries are cut into blocks of `chunk`; a block's queries score the keys of its context, the
    `past` keys before the block, its own and the `future` keys after it (W = chunk + past + future,
    zeros beyond the sequence).  A score is q·k plus, with the input `pos` (F projected relative
    positions, the first for the farthest distance), the relative term q·pos shifted into place as
    Transformer-XL's rel_shift does (the F columns padded to W + 1, the block's rows read as one run
    and cut W at a time), then capped (softcap·tanh(s / softcap)).  A query sees the keys at distances
    q - k from -`window_future` to `window_past` (default: the whole context) that `mask` (1: a frame,
    0: padding) does not hide; every other score of its context becomes `fill` (none: the dtype's
    lowest), so a query that sees nothing averages its whole context, zeros beyond the sequence
    included.  Softmax in float32, the values weighted, the blocks' padding cut off.  No scaling:
    the block scales q and k first.  FLOPs count each query's context: 2·d·(2W + F) per head.
    """

    heads: int  # number of heads the inputs' last dimension holds
    chunk: int  # queries per block
    past: int = 0  # keys of a block's context before its first query
    future: int = 0  # keys of a block's context after its last query
    window_past: int | None = None  # the farthest key before a query it sees (none: past; -1: not itself)
    window_future: int | None = None  # the farthest key after a query it sees (none: future)
    softcap: float | None = None  # caps the scores: softcap·tanh(s / softcap), before the mask
    fill: float | None = None  # the value of a hidden score (none: the dtype's lowest)

    def __post_init__(self):
        positive(self, "heads", "chunk")
        if self.past < 0 or self.future < 0:
            raise invalid(self, f"past and future count keys; received past={self.past}, future={self.future}")
        if self.window_past is not None and not -1 <= self.window_past <= self.past:
            raise invalid(self, f"window_past={self.window_past} must lie in -1..past={self.past} (the context)")
        if self.window_future is not None and not -1 <= self.window_future <= self.future:
            raise invalid(self, f"window_future={self.window_future} must lie in -1..future={self.future} (the context)")
        if self.softcap is not None and self.softcap <= 0:
            raise invalid(self, f"softcap must be positive; received {self.softcap}")

    @property
    def context(self) -> int:
        return self.chunk + self.past + self.future

    def infer_shape(self, q, k, v, pos=None, mask=None):
        for t, what in ((q, "query"), (k, "key"), (v, "value")):
            expect_rank(t, 3, f"{what} [B, S, heads·d]")
            expect_dim(t[0], q[0], f"batch dimension of the {what}")
            expect_dim(t[1], q[1], f"length of the {what} (the queries')")
            expect_dim(t[2], q[2], f"width of the {what} (the queries')")
        check(isinstance(q[2], int) and q[2] % self.heads == 0,
              f"the width {q[2]} is not a multiple of heads={self.heads}")
        if pos is not None:
            expect_rank(pos, (2, 3), "relative positions [F, heads·d]")
            if len(pos) == 3:
                expect_dim(pos[0], 1, "first dimension of the relative positions [1, F, heads·d]")
            expect_dim(pos[-1], q[2], "width of the relative positions (the queries')")
            check(isinstance(pos[-2], int) and pos[-2] <= self.context + 1,
                  f"{pos[-2]} relative positions: rel_shift reads at most context + 1 = {self.context + 1}")
        if mask is not None:
            expect_key_mask(mask, q[0], q[1])
        return tuple(q)

    def flops(self, inputs, outputs):
        q = inputs[0]
        span = inputs[3][-2] if len(inputs) > 3 and inputs[3] is not None else 0
        return 2 * prod(q) * (2 * self.context + span)

    def saved(self, inputs, outputs, eager):
        """q, k, v and the positions, and each block's scores over its context of `context` keys,
        which it always computes (its output is the op's: the next projection keeps it)."""
        q = inputs[0]
        d = q[2] // self.heads
        s = -(-q[1] // self.chunk) * self.chunk
        return keeps_inputs(inputs, 0, 1, 2, 3) + core_kept(q[0], self.heads, s, self.context, d, d, True, 0.0)[1:]

    def forward(self, run, q, k, v, pos=None, mask=None):
        return local_attention(run.torch, q, k, v, pos, mask, self)


def local_attention(torch, q, k, v, pos, mask, op: LocalAttention):
    """LocalAttention on torch tensors, as transformers' Gemma3nAudioAttention and Gemma4AudioAttention
    compute it (blocks, unfolded contexts, rel_shift), float32 inside, the input's dtype out."""
    F = torch.nn.functional
    b, s, width = q.shape
    n, c, w = op.heads, op.chunk, op.context
    d = width // n
    blocks = -(-s // c)
    dtype = q.dtype
    q, k, v = (t.float().view(b, s, n, d) for t in (q, k, v))
    queries = F.pad(q, (0, 0, 0, 0, 0, blocks * c - s)).view(b, blocks, c, n, d).permute(0, 3, 1, 2, 4)

    def context(t):  # [B, S, ...] -> [B, blocks, W, ...]: each block's keys, zeros beyond the sequence
        pad = [0, 0] * (t.dim() - 2) + [op.past, op.future + c - 1]
        return torch.movedim(F.pad(t, pad).unfold(1, w, c), -1, 2)

    keys, values = context(k).permute(0, 3, 1, 4, 2), context(v).permute(0, 3, 1, 2, 4)  # [B, N, U, d, W], [B, N, U, W, d]
    scores = queries @ keys                                                               # [B, N, U, C, W]
    if pos is not None:
        table = pos.float().reshape(-1, n, d)                                             # [F, N, d]
        span = table.shape[0]
        shifted = (queries.reshape(b, n, blocks * c, d) @ table.permute(1, 2, 0)).view(b, n, blocks, c, span)
        shifted = F.pad(shifted, (0, w + 1 - span)).view(b, n, blocks, c * (w + 1))[..., :c * w]
        scores = scores + shifted.view(b, n, blocks, c, w)
    if op.softcap is not None:
        scores = torch.tanh(scores / op.softcap) * op.softcap
    seen = _seen(torch, op, s, blocks, mask, q.device, b)                                 # [B|1, 1, U, C, W]
    fill = torch.finfo(scores.dtype).min if op.fill is None else op.fill
    scores = scores.masked_fill(~seen, fill)
    probabilities = torch.softmax(scores, dim=-1, dtype=torch.float32)
    out = (probabilities @ values).permute(0, 2, 3, 1, 4).reshape(b, blocks * c, width)
    return out[:, :s].to(dtype)


def _seen(torch, op: LocalAttention, s: int, blocks: int, mask, device, batch):
    """[B|1, 1, U, C, W]: the keys of each block's context a query sees (its window, in the sequence,
    not hidden by the mask)."""
    c, w = op.chunk, op.context
    query = torch.arange(blocks, device=device)[:, None, None] * c + torch.arange(c, device=device)[None, :, None]
    key = torch.arange(blocks, device=device)[:, None, None] * c - op.past + torch.arange(w, device=device)
    distance = query - key                                                                 # [U, C, W]
    back = op.past if op.window_past is None else op.window_past
    ahead = op.future if op.window_future is None else op.window_future
    seen = (distance <= back) & (distance >= -ahead) & (key >= 0) & (key < s)
    if mask is None:
        return seen[None, None]
    valid = torch.nn.functional.pad(mask.bool(), (op.past, op.future + c - 1)).unfold(1, w, c)  # [B, U, W]
    return (seen[None] & valid[:, :, None, :])[:, None]
