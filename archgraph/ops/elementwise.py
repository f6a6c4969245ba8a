"""Broadcasting elementwise ops of two or more inputs (or one input and a `constant`): `add`, `mul`;
`Binary` is the base of the other two-operand ops (`sub`, `div`, comparisons in `math.py`)."""
from __future__ import annotations

from ..dims import Shape, equal, fmt_shape, prod
from ..errors import ShapeError
from .base import Op, Saved, op


def broadcast(*shapes: Shape) -> Shape:
    """NumPy broadcasting: align right; each dim equal, or 1."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dim = 1
        for s in shapes:
            d = s[i - rank + len(s)] if i - rank + len(s) >= 0 else 1
            if isinstance(d, int) and d == 1:
                continue
            if isinstance(dim, int) and dim == 1:
                dim = d
            elif not equal(dim, d):
                raise ShapeError("shapes " + ", ".join(fmt_shape(s) for s in shapes) +
                                 " do not broadcast (dimension " + str(i - rank) + ")",
                                 hint='make the dimensions equal or 1 (reshape, unsqueeze or expand one input first)')
        out.append(dim)
    return tuple(out)


class Elementwise(Op):
    """Inputs broadcast together; with `constant`, one input and the constant (`1 + x`)."""

    def infer_shape(self, a, b=None, *more):
        operands = [s for s in (b, *more) if s is not None]
        if self.constant is None and not operands:
            raise ShapeError(f"'{self.op_name}' needs a second input, or a constant (constant: 1.0)",
                             hint='give a second input (in: [a, b]) or a constant (constant: 1.0)')
        if self.constant is not None and operands:
            raise ShapeError(f"'{self.op_name}' with a constant takes one input; 'in' gives {1 + len(operands)}",
                             hint='give one input with a constant, or two inputs without one')
        return broadcast(a, *operands)

    def flops(self, inputs, outputs):
        return max(len([i for i in inputs if i is not None]) - 1, 1) * prod(outputs[0])


@op("add", aliases=("torch.add", "residual", "plus"), example={"constant": 1.0})
class Add(Elementwise):
    """Sum of its inputs (residual connections), with broadcasting; or x + constant."""

    constant: float | None = None  # a constant added to the single input instead of a second input

    def forward(self, run, a, *more):
        out = a
        for b in more:
            out = out + b
        return out + self.constant if self.constant is not None else out

    keeps = ""


@op("mul", aliases=("torch.mul", "multiply", "gate"), example={"constant": 0.5})
class Mul(Elementwise):
    """Product of its inputs (gates), with broadcasting; or x · constant."""

    constant: float | None = None  # a constant the single input is multiplied by instead of a second input

    def forward(self, run, a, *more):
        out = a
        for b in more:
            out = out * b
        return out * self.constant if self.constant is not None else out

    def saved(self, inputs, outputs, eager):
        """Each factor, for the other's gradient (a constant factor keeps nothing)."""
        given = [i for i, x in enumerate(inputs) if x is not None]
        if len(given) == 2:
            return [Saved(input=0, if_grad=1), Saved(input=1, if_grad=0)]
        return [Saved(input=i) for i in given] if len(given) > 2 else []


class Binary(Op):
    """Two inputs broadcast together, or one input and a `constant` (`reverse`: the constant comes
    first, `1 - x`); autograd keeps both inputs (the input with a constant)."""

    def infer_shape(self, a, b=None):
        if (b is None) == (self.constant is None):
            raise ShapeError(f"'{self.op_name}' takes two inputs, or one input and a constant",
                             hint='give two inputs, or one input and a constant')
        return a if b is None else broadcast(a, b)

    def flops(self, inputs, outputs):
        return prod(outputs[0])

    def operands(self, a, b):
        """(left, right) of the operation: the two inputs, or the input and the constant (reversed)."""
        if b is not None:
            return a, b
        return (self.constant, a) if self.reverse else (a, self.constant)


@op("scale", aliases=("torch.mul_scalar", "multiply_by_constant", "rescale"), example={"factor": 0.125})
class Scale(Op):
    """x · factor, a constant (attention's 1/√d, a logit scale, Gemma's √H); no parameters."""

    factor: float  # the constant the input is multiplied by

    def infer_shape(self, x):
        return x

    def flops(self, inputs, outputs):
        return prod(inputs[0])

    def forward(self, run, x):
        return x * self.factor

    keeps = ""
