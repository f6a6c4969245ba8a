"""Elementwise functions of two tensors beyond arithmetic, with torch's names and semantics:
`atan2`, `fmod` and `remainder` (C's and Python's remainders), the bitwise `bitwise_and`,
`bitwise_or`, `bitwise_xor` (of integers, or of masks) and the logical `logical_and`,
`logical_or`, `logical_xor` (true where the values are non-zero; a mask).

The inputs broadcast together (`fmod` and `remainder` may take a `constant` instead of the second);
one FLOP per output element, 4 for atan2.
"""
from __future__ import annotations

from ..dims import prod
from .base import Op, keeps_inputs, op
from .elementwise import Binary, broadcast


class TensorBinary(Op):
    """Two inputs broadcast together, through the torch function `function` (a class constant)."""

    function = ""
    cost = 1

    def infer_shape(self, a, b):
        return broadcast(a, b)

    def flops(self, inputs, outputs):
        return self.cost * prod(outputs[0])

    def forward(self, run, a, b):
        return getattr(run.torch, self.function)(a, b)


@op("atan2", aliases=("torch.atan2", "arctan2"))
class Atan2(TensorBinary):
    """The angle of the point (b, a): tan⁻¹(a / b) in (-π, π], by the signs of both (torch.atan2(a, b))."""

    function, cost = "atan2", 4


@op("bitwise_and", aliases=("torch.bitwise_and", "&"))
class BitwiseAnd(TensorBinary):
    """a & b of integers (bit by bit) or of masks (both true)."""

    function = "bitwise_and"
    keeps, differentiable = "", False


@op("bitwise_or", aliases=("torch.bitwise_or", "|"))
class BitwiseOr(TensorBinary):
    """a | b of integers (bit by bit) or of masks (either true)."""

    function = "bitwise_or"
    keeps, differentiable = "", False


@op("bitwise_xor", aliases=("torch.bitwise_xor", "^"))
class BitwiseXor(TensorBinary):
    """a ^ b of integers (bit by bit) or of masks (exactly one true)."""

    function = "bitwise_xor"
    keeps, differentiable = "", False


@op("logical_and", aliases=("torch.logical_and",))
class LogicalAnd(TensorBinary):
    """True where both are non-zero (a mask)."""

    function = "logical_and"
    keeps, differentiable = "", False


@op("logical_or", aliases=("torch.logical_or",))
class LogicalOr(TensorBinary):
    """True where either is non-zero (a mask)."""

    function = "logical_or"
    keeps, differentiable = "", False


@op("logical_xor", aliases=("torch.logical_xor",))
class LogicalXor(TensorBinary):
    """True where exactly one is non-zero (a mask)."""

    function = "logical_xor"
    keeps, differentiable = "", False


@op("fmod", aliases=("torch.fmod",), example={"constant": 2.0})
class Fmod(Binary):
    """a - trunc(a / b)·b: the remainder with a's sign (C's fmod); or of x and a constant."""

    constant: float | None = None  # a constant second operand instead of a second input
    reverse: bool = False  # true: the constant comes first (constant op x)

    def saved(self, inputs, outputs, eager):
        """Both tensors (the divisor's gradient reads both); with a constant, nothing."""
        return keeps_inputs(inputs) if len(inputs) > 1 and inputs[1] is not None else []

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        if isinstance(left, float):  # a constant first: torch.fmod takes a tensor there
            left = run.torch.as_tensor(left, device=right.device)
        return run.torch.fmod(left, right)


@op("remainder", aliases=("torch.remainder", "%", "mod"), example={"constant": 2.0})
class Remainder(Binary):
    """a - floor(a / b)·b: the remainder with b's sign (Python's %); or of x and a constant."""

    constant: float | None = None  # a constant second operand instead of a second input
    reverse: bool = False  # true: the constant comes first (constant op x)

    def saved(self, inputs, outputs, eager):
        """Both tensors (the divisor's gradient reads both); with a constant, nothing."""
        return keeps_inputs(inputs) if len(inputs) > 1 and inputs[1] is not None else []

    def forward(self, run, a, b=None):
        left, right = self.operands(a, b)
        return left % right
