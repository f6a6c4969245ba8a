"""`embedding_bag` (nn.EmbeddingBag): the rows of a table summed, averaged or maxed per bag, a bag
being a run of ids (recommendation models' sparse features, fastText's bag of words)."""
from __future__ import annotations

from typing import Literal

from ..dims import norm, prod
from .base import Op, Tensor, expect_dim, expect_rank, keeps_inputs, op, positive


@op("embedding_bag", category="embedding", aliases=("nn.EmbeddingBag", "F.embedding_bag"),
    example={"num_embeddings": 1000, "embedding_dim": 64, "mode": "mean"})
class EmbeddingBag(Op):
    """Each bag's rows of the table summed, averaged or maxed (nn.EmbeddingBag).

    ids [N] and offsets [n] (where each bag starts in ids) -> [n, embedding_dim] (n - 1 with
    `include_last_offset`, the last offset then the end of the last bag): each bag's rows of the
    table reduced by `mode`; an empty bag gives zeros.  An optional third input, per_sample_weights
    [N], scales each row first (mode sum only).  Ids equal to `padding_idx` are left out."""

    num_embeddings: int  # number of rows of the table
    embedding_dim: int  # width of each row
    mode: Literal["sum", "mean", "max"] = "mean"  # how a bag's rows combine: sum, mean or max
    include_last_offset: bool = False  # the last offset ends the last bag (n offsets, n - 1 bags)
    padding_idx: int | None = None  # an id whose rows are left out of their bags

    def __post_init__(self):
        positive(self, "num_embeddings", "embedding_dim")

    def infer_shape(self, ids, offsets, per_sample_weights=None):
        expect_rank(ids, 1, "ids [N] (all bags' ids one after another)")
        expect_rank(offsets, 1, "offsets [n] (where each bag starts)")
        if per_sample_weights is not None:
            expect_rank(per_sample_weights, 1, "per_sample_weights [N]")
            expect_dim(per_sample_weights[0], ids[0], "length of per_sample_weights (that of ids)")
        bags = norm(offsets[0] - 1) if self.include_last_offset else offsets[0]
        return (bags, self.embedding_dim)

    def params(self):
        yield Tensor("weight", (self.num_embeddings, self.embedding_dim))

    def flops(self, inputs, outputs):
        per_row = 2 if len(inputs) > 2 and inputs[2] is not None else 1  # a weight multiplies each row
        return per_row * prod(inputs[0]) * self.embedding_dim

    def saved(self, inputs, outputs, eager):
        return keeps_inputs(inputs, 0, 1, width="index")  # the ids and offsets, for the rows' gradients

    def forward(self, run, ids, offsets, per_sample_weights=None):
        return run.F.embedding_bag(ids, run.tensor("weight"), offsets, mode=self.mode,
                                   per_sample_weights=per_sample_weights,
                                   include_last_offset=self.include_last_offset, padding_idx=self.padding_idx)
