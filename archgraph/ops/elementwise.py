"""Broadcasting elementwise ops of two or more inputs: `add`, `mul`."""
from __future__ import annotations

from ..dims import Shape, equal, fmt_shape, prod
from ..errors import ShapeError
from .base import Op, op


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
                                 " do not broadcast (dimension " + str(i - rank) + ")")
        out.append(dim)
    return tuple(out)


class Elementwise(Op):
    def infer_shape(self, a, b, *more):
        return broadcast(a, b, *more)

    def flops(self, inputs, outputs):
        return (len(inputs) - 1) * prod(outputs[0])


@op("add", aliases=("torch.add", "residual", "plus"))
class Add(Elementwise):
    """Sum of its inputs (residual connections), with broadcasting."""


@op("mul", aliases=("torch.mul", "multiply", "gate"))
class Mul(Elementwise):
    """Product of its inputs (gates), with broadcasting."""


@op("scale", aliases=("torch.mul_scalar", "multiply_by_constant", "rescale"), example={"factor": 0.125})
class Scale(Op):
    """x · factor, a constant (attention's 1/√d, a logit scale, Gemma's √H); no parameters."""

    factor: float

    def infer_shape(self, x):
        return x

    def flops(self, inputs, outputs):
        return prod(inputs[0])
