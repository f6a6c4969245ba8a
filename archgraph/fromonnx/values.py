"""What the converter and the rules share: a value the spec computes (`Tensor`), the refusal of a
node (`Refuse`), numpy's element types by torch's names."""
from __future__ import annotations

from dataclasses import dataclass

import re

import numpy as np

# an initializer's name an exporter made up (a folded constant, a transposed weight), not a module's tensor
GENERATED = re.compile(r"^(val_\d+|_?val_\w*|onnx::.*|.*Constant.*|const_.*|_?v_\d+|.*_output_\d+)$")
MODULE_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[\w]+)*$")  # fc1, h.0.attn


class Refuse(Exception):
    """The node cannot be written; the message says why (the converter adds the node and its op)."""


@dataclass
class Tensor:
    ref: str
    shape: tuple
    dtype: str


_NUMPY = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "int64": np.int64,
          "int32": np.int32, "bool": np.bool_, "int8": np.int8, "uint8": np.uint8}


def numpy_dtype(dt) -> str:
    dt = np.dtype(dt)
    for k, v in _NUMPY.items():
        if np.dtype(v) == dt:
            return k
    raise Refuse(f"a constant of element type {dt}")
