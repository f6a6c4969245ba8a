"""Dense layers: `linear`, `bilinear`."""
from __future__ import annotations

from typing import Literal

from ..dims import prod
from .base import Op, Tensor, check, expect_dim, expect_rank, op, positive


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


@op("bilinear", category="linear", aliases=("nn.Bilinear",), example={"in1_features": 64, "in2_features": 32,
                                                                      "out_features": 16})
class Bilinear(Op):
    """A learned bilinear map of two inputs' last dimensions: y_k = x1·W_k·x2ᵀ + b_k (nn.Bilinear, W stored
    [out, in1, in2]); the inputs' other dimensions are equal."""

    in1_features: int  # width of the first input: its last dimension
    in2_features: int  # width of the second input: its last dimension
    out_features: int  # width of the output
    bias: bool = True  # add a learned bias

    def __post_init__(self):
        positive(self, "in1_features", "in2_features", "out_features")

    def infer_shape(self, x1, x2):
        expect_rank(x1, tuple(range(1, 9)))
        *lead, k1 = x1
        *lead2, k2 = x2
        expect_dim(k1, self.in1_features, "last dimension of the first input (in1_features)")
        expect_dim(k2, self.in2_features, "last dimension of the second input (in2_features)")
        check(len(lead) == len(lead2), f"the inputs' ranks differ: {len(x1)} and {len(x2)}")
        for i, (a, b) in enumerate(zip(lead, lead2)):
            expect_dim(b, a, f"dimension {i} of the second input (the first's)")
        return (*lead, self.out_features)

    def params(self):
        yield Tensor("weight", (self.out_features, self.in1_features, self.in2_features))
        if self.bias:
            yield Tensor("bias", (self.out_features,))

    def flops(self, inputs, outputs):  # x1·W_k (in1·in2 per k) then ·x2 (in2 per k), as multiply-adds
        return 2 * prod(inputs[0][:-1]) * self.out_features * (self.in1_features + 1) * self.in2_features

    def forward(self, run, x1, x2):
        return run.F.bilinear(x1, x2, run.tensor("weight"), run.tensor("bias") if self.bias else None)
