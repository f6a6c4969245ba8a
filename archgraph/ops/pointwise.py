"""Elementwise functions of one tensor with torch's names and semantics, beyond those of `math` and
`activation`: trigonometric and hyperbolic functions and their inverses, `erf`, `expm1`, `log1p`,
`log2`, `log10`, rounding (`ceil`, `trunc`, `round`), `sign`, the tests `isinf`/`isnan`,
`bitwise_not`, `logical_not`, `nan_to_num`, and the activations with settings (`elu`, `hardtanh`,
`leaky_relu`, `softplus`, `hardsigmoid`, `logsigmoid`, `log_softmax`).

Each keeps its input's shape.  FLOPs per element: 1 for rounding, signs, tests and bit operations;
4 for a transcendental function (as `exp` and `sin` count); an activation its few operations.
The output's element type is torch's: a float function of integers gives floats, a test booleans.
"""
from __future__ import annotations

from .activation import Pointwise
from ..dims import prod
from .base import Saved, axis, invalid, keeps_own, op


class Unary(Pointwise):
    """x through the torch function `function` (a class constant: `torch.acos`)."""

    function = ""

    def forward(self, run, x):
        return getattr(run.torch, self.function)(x)


@op("acos", aliases=("torch.acos", "arccos"))
class Acos(Unary):
    """cos⁻¹ x, in radians (NaN outside [-1, 1])."""

    function, cost = "acos", 4


@op("asin", aliases=("torch.asin", "arcsin"))
class Asin(Unary):
    """sin⁻¹ x, in radians (NaN outside [-1, 1])."""

    function, cost = "asin", 4


@op("atan", aliases=("torch.atan", "arctan"))
class Atan(Unary):
    """tan⁻¹ x, in radians."""

    function, cost = "atan", 4


@op("tan", aliases=("torch.tan",))
class Tan(Unary):
    """tan x."""

    function, cost = "tan", 4
    keeps = "out"  # its derivative is 1 + tan²


@op("sinh", aliases=("torch.sinh",))
class Sinh(Unary):
    """Hyperbolic sine."""

    function, cost = "sinh", 4


@op("cosh", aliases=("torch.cosh",))
class Cosh(Unary):
    """Hyperbolic cosine."""

    function, cost = "cosh", 4


@op("asinh", aliases=("torch.asinh", "arcsinh"))
class Asinh(Unary):
    """Inverse hyperbolic sine."""

    function, cost = "asinh", 4


@op("acosh", aliases=("torch.acosh", "arccosh"))
class Acosh(Unary):
    """Inverse hyperbolic cosine (NaN below 1)."""

    function, cost = "acosh", 4


@op("atanh", aliases=("torch.atanh", "arctanh"))
class Atanh(Unary):
    """Inverse hyperbolic tangent (±inf at ±1, NaN beyond)."""

    function, cost = "atanh", 4


@op("erf", aliases=("torch.erf", "torch.special.erf"))
class Erf(Unary):
    """The error function 2/√π ∫₀ˣ e^(-t²) dt (the exact GELU's Φ)."""

    function, cost = "erf", 4


@op("expm1", aliases=("torch.expm1", "torch.special.expm1"))
class Expm1(Unary):
    """eˣ - 1, exact for small x."""

    function, cost = "expm1", 4
    keeps = "out"  # its derivative is the output plus 1


@op("log1p", aliases=("torch.log1p", "torch.special.log1p"))
class Log1p(Unary):
    """log(1 + x), exact for small x."""

    function, cost = "log1p", 4


@op("log2", aliases=("torch.log2",))
class Log2(Unary):
    """Logarithm to base 2."""

    function, cost = "log2", 4


@op("log10", aliases=("torch.log10",))
class Log10(Unary):
    """Logarithm to base 10."""

    function, cost = "log10", 4


@op("ceil", aliases=("torch.ceil",))
class Ceil(Unary):
    """The smallest whole number at least x."""

    function = "ceil"
    keeps = ""  # a step function: its gradient is zero


@op("trunc", aliases=("torch.trunc", "torch.fix"))
class Trunc(Unary):
    """x rounded toward zero."""

    function = "trunc"
    keeps = ""  # a step function: its gradient is zero


@op("round", aliases=("torch.round",))
class Round(Unary):
    """x rounded to the nearest whole number, halves to even (0.5 -> 0, 1.5 -> 2)."""

    function = "round"
    keeps = ""  # a step function: its gradient is zero


@op("sign", aliases=("torch.sign", "torch.sgn"))
class Sign(Unary):
    """-1, 0 or 1 as x is negative, zero or positive (of the input's element type)."""

    function = "sign"
    keeps = ""  # a step function: its gradient is zero


@op("isinf", aliases=("torch.isinf",))
class IsInf(Unary):
    """True where x is +inf or -inf (a mask)."""

    function = "isinf"
    keeps, differentiable = "", False


@op("isnan", aliases=("torch.isnan",))
class IsNaN(Unary):
    """True where x is NaN (a mask)."""

    function = "isnan"
    keeps, differentiable = "", False


@op("bitwise_not", aliases=("torch.bitwise_not", "~", "invert"))
class BitwiseNot(Unary):
    """~x: each bit flipped of an integer tensor, logical not of a boolean one."""

    function = "bitwise_not"
    keeps, differentiable = "", False


@op("logical_not", aliases=("torch.logical_not",))
class LogicalNot(Unary):
    """True where x is zero (or false): a mask."""

    function = "logical_not"
    keeps, differentiable = "", False


@op("nan_to_num", aliases=("torch.nan_to_num",), example={"nan": 0.0, "posinf": 1e4, "neginf": -1e4})
class NanToNum(Pointwise):
    """NaN, +inf and -inf replaced by the numbers `nan`, `posinf` and `neginf`.

    An absent posinf or neginf is the largest or smallest finite value of the element type, as
    torch.nan_to_num does."""

    nan: float = 0.0  # what NaN becomes
    posinf: float | None = None  # what +inf becomes (none: the type's largest finite value)
    neginf: float | None = None  # what -inf becomes (none: the type's smallest finite value)

    def forward(self, run, x):
        return run.torch.nan_to_num(x, self.nan, self.posinf, self.neginf)


@op("elu", aliases=("nn.ELU", "F.elu", "selu", "celu"), example={"alpha": 1.0})
class ELU(Pointwise):
    """Exponential linear unit: scale·x above 0, else scale·alpha·(exp(input_scale·x) - 1).

    aten.elu's three settings: F.elu gives alpha, F.selu alpha and scale, F.celu alpha and
    input_scale 1/alpha."""

    alpha: float = 1.0  # the negative branch's size: it tends to -scale·alpha
    scale: float = 1.0  # multiplies both branches (SELU's λ)
    input_scale: float = 1.0  # multiplies x inside the exponential (CELU's 1/α)
    cost = 5

    def forward(self, run, x):
        return run.torch.ops.aten.elu(x, self.alpha, self.scale, self.input_scale)


@op("hardtanh", aliases=("nn.Hardtanh", "F.hardtanh", "relu6"), example={"min_val": 0.0, "max_val": 6.0})
class Hardtanh(Pointwise):
    """x clamped to [min_val, max_val] (F.relu6 is hardtanh from 0 to 6)."""

    min_val: float = -1.0  # the lower bound
    max_val: float = 1.0  # the upper bound

    def __post_init__(self):
        if self.min_val > self.max_val:
            raise invalid(self, f"min_val={self.min_val} is above max_val={self.max_val}")

    def forward(self, run, x):
        return run.F.hardtanh(x, self.min_val, self.max_val)


@op("leaky_relu", aliases=("nn.LeakyReLU", "F.leaky_relu"), example={"negative_slope": 0.2})
class LeakyReLU(Pointwise):
    """x where x >= 0, else negative_slope·x."""

    negative_slope: float = 0.01  # the slope below zero
    cost = 2

    def forward(self, run, x):
        return run.F.leaky_relu(x, self.negative_slope)


@op("softplus", aliases=("nn.Softplus", "F.softplus"), example={"beta": 1.0, "threshold": 20.0})
class Softplus(Pointwise):
    """log(1 + exp(beta·x)) / beta, and x itself where beta·x > threshold (F.softplus)."""

    beta: float = 1.0  # the sharpness
    threshold: float = 20.0  # above it (beta·x), the identity
    cost = 4

    def forward(self, run, x):
        return run.F.softplus(x, self.beta, self.threshold)


@op("hardsigmoid", aliases=("nn.Hardsigmoid", "F.hardsigmoid"))
class Hardsigmoid(Pointwise):
    """relu6(x + 3) / 6: a piecewise-linear sigmoid (MobileNetV3's squeeze-excitation gate)."""

    cost = 3

    def forward(self, run, x):
        return run.F.hardsigmoid(x)


@op("logsigmoid", aliases=("nn.LogSigmoid", "F.logsigmoid", "log_sigmoid"))
class LogSigmoid(Pointwise):
    """log(sigmoid(x)), computed without overflow (-softplus(-x))."""

    cost = 5

    def saved(self, inputs, outputs, eager):
        return [Saved(input=0), keeps_own(prod(inputs[0]))]  # the input and exp(-|x|) of each

    def forward(self, run, x):
        return run.F.logsigmoid(x)


@op("log_softmax", aliases=("nn.LogSoftmax", "F.log_softmax", "torch.log_softmax"), example={"dim": -1})
class LogSoftmax(Pointwise):
    """log(softmax(x)) along `dim`, computed as x - logsumexp(x)."""

    dim: int = -1  # the dimension normalised
    cost = 6
    keeps = "out"

    def infer_shape(self, x):
        axis(self.dim, len(x))
        return x

    def forward(self, run, x):
        return run.F.log_softmax(x, dim=self.dim)
