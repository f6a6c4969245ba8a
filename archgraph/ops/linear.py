"""Dense layers: `linear`."""
from __future__ import annotations

from typing import Literal

from ..dims import prod
from .base import Op, Tensor, expect_dim, expect_rank, op, positive


@op("linear", category="linear",
     aliases=("nn.Linear", "Dense", "fully_connected"), example={"in_features": 768, "out_features": 3072})
class Linear(Op):
    """A learned affine map of the last dimension: y = x·Wᵀ + b (weight_layout in_out: GPT-2's Conv1D, W stored [in, out])."""

    in_features: int  # width of the input: its last dimension
    out_features: int  # width of the output
    bias: bool = True  # add a learned bias
    weight_layout: Literal["out_in", "in_out"] = "out_in"  # out_in: weight stored [out, in] as nn.Linear; in_out:
    #   [in, out] as GPT-2's Conv1D

    def __post_init__(self):
        positive(self, "in_features", "out_features")

    def infer_shape(self, x):
        expect_rank(x, tuple(range(1, 9)))
        *lead, k = x
        expect_dim(k, self.in_features, "last dimension of the input (in_features)")
        return (*lead, self.out_features)

    def params(self):
        o, i = self.out_features, self.in_features
        yield Tensor("weight", (o, i) if self.weight_layout == "out_in" else (i, o))
        if self.bias:
            yield Tensor("bias", (o,))

    def flops(self, inputs, outputs):
        return 2 * prod(inputs[0][:-1]) * self.in_features * self.out_features

    def forward(self, run, x):
        bias = run.tensor("bias") if self.bias else None
        if self.weight_layout == "in_out":  # GPT-2's Conv1D: x @ W + b, W stored [in, out]
            out = x @ run.tensor("weight")
            return out + bias if bias is not None else out
        return run.F.linear(x, run.tensor("weight"), bias)
