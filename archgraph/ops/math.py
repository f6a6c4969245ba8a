"""Parameter-free arithmetic with torch's names: `sub`, `div`, `maximum`, `minimum`, `pow`, the
comparisons (`eq` ... `ge`), unary functions (`exp`, `log`, `sin`, `cos`, `abs`, `sqrt`, `rsqrt`,
`neg`, `reciprocal`, `square`), `clamp`, `where`, `masked_fill`, `masked_scatter`, `tril`/`triu`, `cumsum`, and
tensors made from sizes alone (`arange`, `full`): decay masks, 1 + scale, x · C^-0.5.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Union

from ..dims import equal, fmt_shape, prod
from ..errors import ShapeError
from .activation import Pointwise
from .base import Op, Saved, Size, TensorType, axis, check, expect_rank, invalid, op
from .elementwise import Binary, broadcast


@op("sub", aliases=("torch.sub", "subtract", "minus", "rsub"), example={"constant": 1.0, "reverse": True})
class Sub(Binary):
    """a - b with broadcasting; or x - constant (reverse: constant - x)."""

    constant: float | None = None  # a constant second operand instead of a second input
    reverse: bool = False  # true: the constant comes first (constant op x)

    keeps = ""

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left - right


@op("div", aliases=("torch.div", "divide", "true_divide", "floor_divide", "//"), example={"constant": 8.0})
class Div(Binary):
    """a / b with broadcasting; or x / constant (reverse: constant / x); `rounding_mode` trunc or
    floor rounds the quotient as torch.div does (floor: Python's //, torch.floor_divide)."""

    constant: float | None = None  # a constant second operand instead of a second input
    reverse: bool = False  # true: the constant comes first (constant op x)
    rounding_mode: Literal["trunc", "floor"] | None = None  # none: true division; trunc: toward zero;
    #   floor: down (integers stay integers)

    def saved(self, inputs, outputs, eager):
        """The divisor (and the dividend for the divisor's gradient); x / constant keeps nothing, nor does
        a rounded quotient (a step function: zero gradient)."""
        if self.rounding_mode is not None:
            return []
        if inputs[1] is None:
            return [Saved(input=0)] if self.reverse else []
        return [Saved(input=1), Saved(input=0, if_grad=1)]

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        if self.rounding_mode is None:
            return left / right
        if isinstance(left, float):  # a constant first: torch.div takes a tensor there
            left = run.torch.as_tensor(left, device=right.device)
        return run.torch.div(left, right, rounding_mode=self.rounding_mode)


@op("maximum", aliases=("torch.maximum", "torch.max_elementwise"))
class Maximum(Binary):
    """Elementwise maximum of a and b (or of x and a constant)."""

    constant: float | None = None  # a constant second operand instead of a second input
    reverse: bool = False  # true: the constant comes first (constant op x)

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return run.torch.maximum(run.torch.as_tensor(left), run.torch.as_tensor(right))


@op("minimum", aliases=("torch.minimum",))
class Minimum(Binary):
    """Elementwise minimum of a and b (or of x and a constant)."""

    constant: float | None = None  # a constant second operand instead of a second input
    reverse: bool = False  # true: the constant comes first (constant op x)

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return run.torch.minimum(run.torch.as_tensor(left), run.torch.as_tensor(right))


@op("pow", aliases=("torch.pow", "power", "float_power"), example={"constant": 2.0})
class Pow(Binary):
    """a ** b with broadcasting; x ** constant; reverse: constant ** x (a decay γ^(i-j))."""

    constant: float | None = None  # a constant second operand instead of a second input
    reverse: bool = False  # true: the constant comes first (constant op x)

    def flops(self, inputs, outputs):
        return 4 * prod(outputs[0])

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left ** right


@dataclass(init=False, repr=False, eq=False)  # fields only, as @op makes them (see ops.base.Op)
class _Compare(Binary):
    """A comparison: true where it holds (a boolean mask), with broadcasting.  A whole constant is
    compared with integers as the integer it is (exactly, where torch would round both to floats)."""

    differentiable = False

    constant: float | None = None  # a constant second operand instead of a second input
    reverse: bool = False  # true: the constant comes first (constant op x)

    keeps = ""

    def operands(self, a, b):
        left, right = super().operands(a, b)
        whole = self.constant is not None and float(self.constant).is_integer()
        if whole and b is None and not (a.is_floating_point() or a.is_complex()):
            return (int(left), right) if self.reverse else (left, int(right))
        return left, right


@op("eq", aliases=("torch.eq", "equal"))
class Eq(_Compare):
    """a == b, elementwise (a mask)."""

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left == right


@op("ne", aliases=("torch.ne", "not_equal"))
class Ne(_Compare):
    """a != b, elementwise (a mask)."""

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left != right


@op("lt", aliases=("torch.lt", "less"))
class Lt(_Compare):
    """a < b, elementwise (a mask)."""

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left < right


@op("le", aliases=("torch.le", "less_equal"))
class Le(_Compare):
    """a <= b, elementwise (a mask)."""

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left <= right


@op("gt", aliases=("torch.gt", "greater"))
class Gt(_Compare):
    """a > b, elementwise (a mask)."""

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left > right


@op("ge", aliases=("torch.ge", "greater_equal"), example={"constant": 0.0})
class Ge(_Compare):
    """a >= b, elementwise (a mask)."""

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left >= right


@op("neg", aliases=("torch.neg", "negative"))
class Neg(Pointwise):
    """-x."""

    keeps = ""

    def forward(self, run, x):
        return -x


@op("exp", aliases=("torch.exp",))
class Exp(Pointwise):
    """e^x."""

    cost = 4

    keeps = "out"

    def forward(self, run, x):
        return run.torch.exp(x)


@op("log", aliases=("torch.log",))
class Log(Pointwise):
    """Natural logarithm."""

    cost = 4

    def forward(self, run, x):
        return run.torch.log(x)


@op("sin", aliases=("torch.sin",))
class Sin(Pointwise):
    """sin x."""

    cost = 4

    def forward(self, run, x):
        return run.torch.sin(x)


@op("cos", aliases=("torch.cos",))
class Cos(Pointwise):
    """cos x."""

    cost = 4

    def forward(self, run, x):
        return run.torch.cos(x)


@op("abs", aliases=("torch.abs", "absolute"))
class Abs(Pointwise):
    """|x|."""

    def forward(self, run, x):
        return run.torch.abs(x)


@op("floor", aliases=("torch.floor",))
class Floor(Pointwise):
    """The largest whole number at most x (Llama 4's temperature tuning)."""

    keeps = ""

    def forward(self, run, x):
        return run.torch.floor(x)


@op("sqrt", aliases=("torch.sqrt",))
class Sqrt(Pointwise):
    """√x."""

    cost = 4

    keeps = "out"

    def forward(self, run, x):
        return run.torch.sqrt(x)


@op("rsqrt", aliases=("torch.rsqrt",))
class Rsqrt(Pointwise):
    """1 / √x."""

    cost = 4

    keeps = "out"

    def forward(self, run, x):
        return run.torch.rsqrt(x)


@op("reciprocal", aliases=("torch.reciprocal",))
class Reciprocal(Pointwise):
    """1 / x."""

    keeps = "out"

    def forward(self, run, x):
        return run.torch.reciprocal(x)


@op("square", aliases=("torch.square",))
class Square(Pointwise):
    """x²."""

    def forward(self, run, x):
        return run.torch.square(x)


@op("clamp", aliases=("torch.clamp", "clip", "torch.clip"), example={"min": -1.0, "max": 1.0})
class Clamp(Pointwise):
    """x limited to [min, max] (either may be absent)."""

    min: float | None = None  # the lower bound (none: no lower bound)
    max: float | None = None  # the upper bound (none: no upper bound)

    def __post_init__(self):
        if self.min is None and self.max is None:
            raise invalid(self, "give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise invalid(self, f"min={self.min} is above max={self.max}")

    def forward(self, run, x):
        lo, hi = self.min, self.max
        if not x.is_floating_point():  # whole bounds keep integers integers, as torch.clamp(ids, 0) does
            lo, hi = (int(v) if v is not None and float(v).is_integer() else v for v in (lo, hi))
        return run.torch.clamp(x, lo, hi)


@op("where", aliases=("torch.where", "select_where"))
class Where(Op):
    """Elementwise choice between two tensors: condition ? x : y, all three broadcast together (torch.where(condition, x, y))."""

    def infer_shape(self, condition, x, y):
        return broadcast(condition, x, y)

    def flops(self, inputs, outputs):
        return prod(outputs[0])

    def saved(self, inputs, outputs, eager):
        return [Saved(input=0, width="mask")]

    def forward(self, run, condition, x, y):
        return run.torch.where(condition.bool(), x, y)


@op("masked_fill", aliases=("torch.Tensor.masked_fill",), example={"value": -1e9})
class MaskedFill(Op):
    """x with `value` where mask is true (mask broadcasts to x): attention masks."""

    value: float  # the value written where the mask is true

    def infer_shape(self, x, mask):
        out = broadcast(x, mask)
        check(len(out) == len(x) and all(a is b or a == b for a, b in zip(out, x)),
              "the mask must broadcast to the input's shape, not grow it")
        return x

    def flops(self, inputs, outputs):
        return prod(outputs[0])

    def saved(self, inputs, outputs, eager):
        return [Saved(input=1, width="mask")]

    def forward(self, run, x, mask):
        return x.masked_fill(mask.bool(), self.value)


@op("masked_scatter", aliases=("torch.Tensor.masked_scatter",))
class MaskedScatter(Op):
    """Write a source's elements where a mask is true: x with the elements of `source`, in order, written where mask is true (mask broadcasts to x;
    source holds at least as many elements as the mask's true places): LLaVA puts the projected
    image features at the image-token positions of the token embeddings."""

    def infer_shape(self, x, mask, source):
        out = broadcast(x, mask)
        check(len(out) == len(x) and all(a is b or a == b for a, b in zip(out, x)),
              "the mask must broadcast to the input's shape, not grow it")
        # where the mask broadcasts over the last dims, each true place takes a whole row of the source
        rows = 0
        while rows < min(len(x), len(mask)) and mask[-1 - rows] == 1 and x[-1 - rows] != 1:
            rows += 1
        if rows:
            check(len(source) >= rows and all(equal(a, b) for a, b in zip(source[-rows:], x[-rows:])),
                  f"the source's rows {fmt_shape(source[-rows:])} must be the input's {fmt_shape(x[-rows:])}: "
                  f"each true place of the mask {fmt_shape(mask)} takes one whole row (source "
                  f"{fmt_shape(source)}, input {fmt_shape(x)})")
        return x

    def flops(self, inputs, outputs):
        return 0

    def saved(self, inputs, outputs, eager):
        return [Saved(input=1, width="mask")]

    def forward(self, run, x, mask, source):
        return x.masked_scatter(mask.bool(), source.to(x.dtype))


class _Triangle(Op):
    def infer_shape(self, x):
        expect_rank(x, tuple(range(2, 9)), "input (a matrix, or a batch of them)")
        return x

    def flops(self, inputs, outputs):
        return prod(outputs[0])


@op("tril", aliases=("torch.tril", "lower_triangle", "causal_mask"), example={"diagonal": 0})
class Tril(_Triangle):
    """The lower triangle of the last two dims (diagonal offset), zeros above: a causal mask."""

    diagonal: Size = 0  # which diagonal bounds the triangle (0 the main one, 1 one above; may be a size: T - S + 1)

    keeps = ""

    def forward(self, run, x):
        return run.torch.tril(x, int(self.diagonal))


@op("triu", aliases=("torch.triu", "upper_triangle"), example={"diagonal": 1})
class Triu(_Triangle):
    """The upper triangle of the last two dims (diagonal offset), zeros below."""

    diagonal: Size = 0  # which diagonal bounds the triangle (0 the main one, 1 one above; may be a size: T - S + 1)

    keeps = ""

    def forward(self, run, x):
        return run.torch.triu(x, int(self.diagonal))


@op("cumsum", aliases=("torch.cumsum", "cumulative_sum"), example={"dim": -1})
class CumSum(Op):
    """Running sum along `dim`."""

    dim: int  # the dimension summed along

    def infer_shape(self, x):
        axis(self.dim, len(x))
        return x

    def flops(self, inputs, outputs):
        return prod(outputs[0])

    keeps = ""

    def forward(self, run, x):
        return run.torch.cumsum(x, dim=self.dim)


ElementType = Literal["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]


@op("arange", aliases=("torch.arange", "positions", "range"), example={"end": "S"})
class Arange(Op):
    """A range of numbers: start, start + step, ... below end, as one dim: [ceil((end - start) / step)];
    no input (end may be a symbolic size: positions 0 .. S-1).  `dtype` as torch.arange's:
    int64 by default, float32 for arithmetic that must not stay whole (2 ** -arange).  Real bounds
    and steps (NaViT's buckets: arange(1 / 16, 1.0, 1 / 16)) count as torch counts, in float64."""

    end: Union[Size, float]  # the numbers stop below it (may be a symbolic size: S)
    start: Union[int, float] = 0  # the first number
    step: Union[int, float] = 1  # the difference between neighbours
    dtype: ElementType = "int64"  # the element type, as torch.arange's dtype

    def __post_init__(self):
        if self.step <= 0:
            raise invalid(self, f"step must be positive; received {self.step}")
        if any(isinstance(v, float) for v in (self.start, self.step)) and not isinstance(self.end, (int, float)):
            raise invalid(self, f"a real start or step needs a number for end; received {self.end}",
                          "give end as a number, or whole numbers for start and step")

    def infer_shape(self):
        if any(isinstance(v, float) for v in (self.start, self.end, self.step)):
            length = math.ceil((self.end - self.start) / self.step)  # as torch.arange: in float64
        else:
            length = -((self.start - self.end) // self.step)
        if isinstance(length, int) and length <= 0:
            raise ShapeError(f"arange({self.start}, {self.end}, {self.step}) is empty",
                             hint='give an end past the start (or a negative step for a falling range)')
        return (length,)

    def forward(self, run):
        end = self.end if isinstance(self.end, float) else int(self.end)
        return run.torch.arange(self.start, end, self.step, dtype=getattr(run.torch, self.dtype), device=run.device)


@op("full", aliases=("torch.full", "torch.ones", "torch.zeros", "constant_tensor"),
    example={"shape": ["S", "S"], "value": 1.0})
class Full(Op):
    """A constant tensor: `shape` filled with `value` (sizes may be symbolic; [] is a scalar); no input.
    `dtype` rounds the value as that type holds it (bfloat16 keeps 8 significant bits)."""

    shape: tuple[Size, ...]  # the tensor's shape (sizes may be symbolic; [] is a scalar)
    value: float = 0.0  # the value of every element
    dtype: TensorType = "float32"  # the element type (the value is rounded as it holds it; complex64: value + 0i)

    def __post_init__(self):
        if any(isinstance(d, int) and d <= 0 for d in self.shape):
            raise invalid(self, f"shape must list positive sizes; received {list(self.shape)}")

    def infer_shape(self):
        return tuple(self.shape)

    def forward(self, run):
        return run.torch.full(tuple(int(d) for d in self.shape), self.value, dtype=getattr(run.torch, self.dtype),
                              device=run.device)


@op("linspace", aliases=("torch.linspace",), example={"start": 0.0, "end": 1.0, "steps": 64})
class Linspace(Op):
    """`steps` numbers evenly from start to end (both included), as one dim: [steps]; no input."""

    start: float  # the first number
    end: float  # the last number
    steps: Size  # how many numbers (may be a symbolic size)

    def __post_init__(self):
        if isinstance(self.steps, int) and self.steps <= 0:
            raise invalid(self, f"steps must be positive; received {self.steps}")

    def infer_shape(self):
        return (self.steps,)

    def forward(self, run):
        return run.torch.linspace(self.start, self.end, int(self.steps), device=run.device)


@op("cast", aliases=("torch.Tensor.to", "Tensor.type", "astype"), example={"dtype": "float32"})
class Cast(Op):
    """x converted to the element type `dtype` (Tensor.to(dtype)): positions made floats before
    they are multiplied by frequencies; the shape is the input's."""

    dtype: TensorType  # the element type of the output (torch's name: float32, int64, complex64, ...)

    def infer_shape(self, x):
        return x

    keeps = ""

    def forward(self, run, x):
        return x.to(getattr(run.torch, self.dtype))
