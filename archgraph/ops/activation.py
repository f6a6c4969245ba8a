"""Shape-preserving pointwise ops: activations, `dropout`, `softmax`, `identity`.

`ACTIVATIONS` is the one table of activation functions by name: the `activation` op and
the feed-forward ops (`mlp`, `gated_mlp`, `moe`) read it, so a config's
`hidden_act` names the same function everywhere.
"""
from __future__ import annotations

from typing import Literal, get_args

from ..dims import exact_div, prod
from .base import Op, Saved, axis, invalid, keeps_own, op


class Pointwise(Op):
    """Output has the input's shape; `cost` FLOPs per element."""

    cost = 1

    def infer_shape(self, x):
        return x

    def flops(self, inputs, outputs):
        return self.cost * prod(inputs[0])


ActivationName = Literal["gelu", "gelu_tanh", "quick_gelu", "gelu_10", "relu", "relu2", "relu6", "leaky_relu",
                         "silu", "mish", "hardswish", "sigmoid", "tanh", "softplus", "identity"]

ACTIVATIONS = {  # name -> (what it computes given run and x, FLOPs per element)
    "gelu": (lambda run, x: run.F.gelu(x), 8),                                   # erf form (nn.GELU)
    "gelu_tanh": (lambda run, x: run.F.gelu(x, approximate="tanh"), 8),          # gelu_new, gelu_pytorch_tanh
    "quick_gelu": (lambda run, x: x * run.torch.sigmoid(1.702 * x), 5),          # CLIP's
    "gelu_10": (lambda run, x: run.torch.clamp(run.F.gelu(x), -10.0, 10.0), 9),   # clipped to [-10, 10]
    "relu": (lambda run, x: run.F.relu(x), 1),
    "relu2": (lambda run, x: run.torch.square(run.F.relu(x)), 2),                 # squared ReLU (Primer)
    "relu6": (lambda run, x: run.F.relu6(x), 1),
    "leaky_relu": (lambda run, x: run.F.leaky_relu(x), 2),                        # slope 0.01
    "silu": (lambda run, x: run.F.silu(x), 4),                                    # swish
    "mish": (lambda run, x: run.F.mish(x), 6),
    "hardswish": (lambda run, x: run.F.hardswish(x), 3),
    "sigmoid": (lambda run, x: run.torch.sigmoid(x), 4),
    "tanh": (lambda run, x: run.torch.tanh(x), 4),
    "softplus": (lambda run, x: run.F.softplus(x), 4),                            # log(1 + exp(x))
    "identity": (lambda run, x: x, 0),                                            # 'linear'
}
# What autograd keeps of each, as the functions above compute it: "in" the input, "out" the output,
# "tmp" a tensor of its own as large (quick_gelu's sigmoid, gelu_10's gelu before the clamp).
KEPT = {"gelu": ("in",), "gelu_tanh": ("in",), "quick_gelu": ("in", "tmp"), "gelu_10": ("in", "tmp"),
        "relu": ("out",), "relu2": ("tmp",), "relu6": ("in",), "leaky_relu": ("in",), "silu": ("in",),
        "mish": ("in",), "hardswish": ("in",), "sigmoid": ("out",), "tanh": ("out",), "softplus": ("in",),
        "identity": ()}
assert set(ACTIVATIONS) == set(get_args(ActivationName)) == set(KEPT)


def activate(name: str, run, x):
    """`x` through the activation `name` of ACTIVATIONS."""
    return ACTIVATIONS[name][0](run, x)


def kept(name: str, x) -> list[Saved]:
    """What the activation `name` keeps for backward, applied to x (input 0, output 0)."""
    refs = {"in": Saved(input=0), "out": Saved(output=0)}
    return [refs[k] if k in refs else keeps_own(prod(x)) for k in KEPT[name]]


@op("activation", aliases=("hidden_act", "ACT2FN", "activation_function"), example={"fn": "quick_gelu"})
class Activation(Pointwise):
    """The activation named by `fn` (a Hugging Face config's hidden_act): gelu, gelu_tanh
    (gelu_new, gelu_pytorch_tanh, gelu_fast), quick_gelu, gelu_10, relu, relu2, relu6,
    leaky_relu, silu (swish), mish, hardswish, sigmoid, tanh, softplus (log(1 + eˣ): Gated DeltaNet's
    time step), identity (linear)."""

    fn: ActivationName = "gelu"  # which activation (a Hugging Face config's hidden_act, normalised): gelu, relu,
    #   silu, ...

    @property
    def cost(self):
        return ACTIVATIONS[self.fn][1]

    def forward(self, run, x):
        return activate(self.fn, run, x)

    def saved(self, inputs, outputs, eager):
        return kept(self.fn, inputs[0])


@op("relu", aliases=("nn.ReLU", "F.relu"))
class ReLU(Pointwise):
    """max(x, 0)."""

    keeps = "out"

    def forward(self, run, x):
        return run.F.relu(x)


@op("gelu", aliases=("nn.GELU", "F.gelu", "gelu_new"), example={"approximate": "tanh"})
class GELU(Pointwise):
    """Gaussian error linear unit: x·Φ(x) (approximate: none or tanh, the 'gelu_new' of GPT-2)."""

    approximate: Literal["none", "tanh"] = "none"  # none: the exact erf form; tanh: the tanh approximation (GPT-2's
    #   gelu_new)
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
    keeps = "out"

    def forward(self, run, x):
        return run.torch.tanh(x)


@op("softcap", aliases=("logit_softcapping", "tanh_softcap"), example={"cap": 30.0})
class Softcap(Pointwise):
    """cap·tanh(x / cap): a smooth bound of x to (-cap, cap), near the identity for |x| much
    below cap (Gemma 2's final_logit_softcapping; attention's `softcap` does it to the scores)."""

    cap: float  # the bound: outputs lie in (-cap, cap)
    cost = 6  # a division, a tanh, a product

    def __post_init__(self):
        if not self.cap > 0:
            raise invalid(self, f"cap must be positive; received {self.cap}")

    def forward(self, run, x):
        return run.torch.tanh(x / self.cap) * self.cap

    def saved(self, inputs, outputs, eager):
        return [keeps_own(prod(inputs[0]))]  # the tanh's output, before the scale


@op("sigmoid", aliases=("nn.Sigmoid",))
class Sigmoid(Pointwise):
    """1 / (1 + e^-x)."""

    cost = 4
    keeps = "out"

    def forward(self, run, x):
        return run.torch.sigmoid(x)


@op("identity", aliases=("nn.Identity",))
class Identity(Pointwise):
    """Passes its input through."""

    cost = 0
    keeps = ""

    def forward(self, run, x):
        return x


@op("dropout", aliases=("nn.Dropout",), example={"p": 0.1})
class Dropout(Pointwise):
    """Zeroes a fraction p of elements while training; identity at inference."""

    p: float = 0.1  # the fraction of elements zeroed while training (0 <= p < 1)
    cost = 0

    def __post_init__(self):
        if not 0.0 <= self.p <= 1.0:
            raise invalid(self, f"p must lie between 0 and 1; received p={self.p}")

    def forward(self, run, x):
        return run.F.dropout(x, self.p, run.training)

    def saved(self, inputs, outputs, eager):
        """Its mask, a bool per element (none at p = 0, where torch returns the input)."""
        return [keeps_own(prod(inputs[0]), "mask")] if self.p else []


@op("softmax", aliases=("nn.Softmax", "F.softmax"), example={"dim": -1})
class Softmax(Pointwise):
    """Normalised exponentials along `dim`."""

    dim: int = -1  # the dimension the probabilities sum to 1 along
    cost = 5
    keeps = "out"

    def infer_shape(self, x):
        axis(self.dim, len(x))
        return x

    def forward(self, run, x):
        return run.F.softmax(x, dim=self.dim)


@op("glu", aliases=("nn.GLU", "F.glu", "gated_linear_unit"), example={"dim": -1})
class GLU(Op):
    """a · sigmoid(b), where a and b are the two halves of `dim` (which must be even): [.., 2n] -> [.., n]."""

    dim: int = -1  # the dimension cut into the halves a and b (its size must be even)

    def infer_shape(self, x):
        d = axis(self.dim, len(x))
        return (*x[:d], exact_div(x[d], 2, f"glu over dim {self.dim}"), *x[d + 1:])

    def flops(self, inputs, outputs):
        return 5 * prod(outputs[0])

    def forward(self, run, x):
        return run.F.glu(x, dim=self.dim)
