"""The ONNX operators' rules by op_type (`rules`, `pointwise`, `shapes` register theirs here)."""
from __future__ import annotations

TABLE: dict = {}


def rule(*names):
    """Register a rule `fn(node, cv, path)` for the ONNX operators `names`."""
    def register(fn):
        for n in names:
            TABLE[n] = fn
        return fn
    return register
