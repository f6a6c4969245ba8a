"""`apply_rotary`: rotary positions applied to queries or keys, the tables a `rotary_embedding` made
(transformers' apply_rotary_pos_emb, one tensor at a time)."""
from __future__ import annotations

from typing import Literal

from ..errors import ShapeError
from .attention import rotate_pair
from .base import Op, expect_dim, expect_rank, op


@op("apply_rotary", category="attention", aliases=("apply_rotary_pos_emb",), example={})
class ApplyRotary(Op):
    """Rotary positions on x [B, heads, S, d], from the tables cos, sin [B|1, S, w].

    The first w dims of each head turn (a partial rotary leaves the rest as they are):
    dim i with dim i + w/2 (`pairs: half`, transformers' rotate_half) or dim 2i with 2i+1
    (`pairs: interleaved`: GPT-J, Helium), as x·cos + rotate(x)·sin.  Its FLOPs and what it keeps
    for backward are none, as the `attention` op counts the rotation it holds: the figures count
    the products of matrices, and the backward needs only the tables, the rotary_embedding's,
    made once for every layer.
    """

    pairs: Literal["half", "interleaved"] = "half"  # how dims pair: halves (rotate_half) or neighbours (2i, 2i+1)

    def infer_shape(self, x, cos, sin):
        expect_rank(x, 4, "input [B, heads, S, d]")
        for table, what in ((cos, "cos"), (sin, "sin")):
            expect_rank(table, 3, f"rotary table {what} [B, S, width]")
            expect_dim(table[1], x[2], f"sequence length of the rotary table {what} (the input's dim 2)")
        expect_dim(sin[2], cos[2], "width of the sin table (the cos table's)")
        if not isinstance(cos[2], int) or cos[2] > x[3]:
            raise ShapeError(f"the rotary table's width {cos[2]} must be a size of at most the head's {x[3]}",
                             hint="make the rotary table's width (its rotary_dim) at most head_dim")
        return tuple(x)

    def saved(self, inputs, outputs, eager):
        return []

    def forward(self, run, x, cos, sin):
        return rotate_pair(run.torch, x, x[:, :0], cos, sin, self.pairs, "apply_rotary")[0]
