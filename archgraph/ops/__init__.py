"""The operator library: one family per module, each op registered by name in REGISTRY."""
from . import activation, attention, conv, elementwise, embedding, linear, mlp, norm, pool, tensor  # noqa: F401
from . import encoders, indexing, math, reduce, routing, signal  # noqa: F401
from .base import REGISTRY, Op, Tensor

__all__ = ["REGISTRY", "Op", "Tensor"]
