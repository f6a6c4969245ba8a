"""Shape-preserving pointwise ops: activations, `dropout`, `softmax`, `identity`."""
from __future__ import annotations

from typing import Literal

from ..dims import exact_div, prod
from .base import Op, axis, invalid, op


class Pointwise(Op):
    """Output has the input's shape; `cost` FLOPs per element."""

    cost = 1

    def infer_shape(self, x):
        return x

    def flops(self, inputs, outputs):
        return self.cost * prod(inputs[0])


@op("relu", aliases=("nn.ReLU", "F.relu"))
class ReLU(Pointwise):
    """max(x, 0)."""

    def forward(self, run, x):
        return run.F.relu(x)


@op("gelu", aliases=("nn.GELU", "F.gelu", "gelu_new"), example={"approximate": "tanh"})
class GELU(Pointwise):
    """Gaussian error linear unit (approximate: none or tanh, the 'gelu_new' of GPT-2)."""

    approximate: Literal["none", "tanh"] = "none"
    cost = 8

    def forward(self, run, x):
        return run.F.gelu(x, approximate=self.approximate)


@op("silu", aliases=("nn.SiLU", "swish"))
class SiLU(Pointwise):
    """x·sigmoid(x), also called swish."""

    cost = 4

    def forward(self, run, x):
        return run.F.silu(x)


@op("tanh", aliases=("nn.Tanh",))
class Tanh(Pointwise):
    """Hyperbolic tangent."""

    cost = 4

    def forward(self, run, x):
        return run.torch.tanh(x)


@op("sigmoid", aliases=("nn.Sigmoid",))
class Sigmoid(Pointwise):
    """1 / (1 + e^-x)."""

    cost = 4

    def forward(self, run, x):
        return run.torch.sigmoid(x)


@op("identity", aliases=("nn.Identity",))
class Identity(Pointwise):
    """Passes its input through."""

    cost = 0

    def forward(self, run, x):
        return x


@op("dropout", aliases=("nn.Dropout",), example={"p": 0.1})
class Dropout(Pointwise):
    """Zeroes a fraction p of elements while training; identity at inference."""

    p: float = 0.1
    cost = 0

    def __post_init__(self):
        if not 0.0 <= self.p <= 1.0:
            raise invalid(self, f"p must lie between 0 and 1; received p={self.p}")

    def forward(self, run, x):
        return run.F.dropout(x, self.p, run.training)


@op("softmax", aliases=("nn.Softmax", "F.softmax"), example={"dim": -1})
class Softmax(Pointwise):
    """Normalised exponentials along `dim`."""

    dim: int = -1
    cost = 5

    def infer_shape(self, x):
        axis(self.dim, len(x))
        return x

    def forward(self, run, x):
        return run.F.softmax(x, dim=self.dim)


@op("glu", aliases=("nn.GLU", "F.glu", "gated_linear_unit"), example={"dim": -1})
class GLU(Op):
    """a · sigmoid(b), where a and b are the two halves of `dim` (which must be even): [.., 2n] -> [.., n]."""

    dim: int = -1

    def infer_shape(self, x):
        d = axis(self.dim, len(x))
        return (*x[:d], exact_div(x[d], 2, f"glu over dim {self.dim}"), *x[d + 1:])

    def flops(self, inputs, outputs):
        return 5 * prod(outputs[0])

    def forward(self, run, x):
        return run.F.glu(x, dim=self.dim)
