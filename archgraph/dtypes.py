"""Storage dtypes and their sizes in bits (a node's `dtype:` key, `--dtype`), and the element types a
buffer is kept in (torch's names, without `torch.`) with their bytes per value.

>>> BITS["bf16"], BITS["int4"], ELEMENT_BYTES["complex64"]
(16, 4, 8)
"""
from __future__ import annotations

import json
from typing import Any

from .errors import ArchgraphError, Loc, SpecError, did_you_mean, shortened

BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
# a buffer's element type (as torch names its dtype: torch.int64 is "int64") -> bytes per value
ELEMENT_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "complex64": 8, "complex128": 16,
                 "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
# every name torch gives a dtype (torch.float8_e4m3fn is "float8_e4m3fn"): what a config's `torch_dtype`
# or `dtype` may say, checked without importing torch (tests compare it with torch's own list)
TORCH_DTYPES = frozenset(
    "bfloat16 bit bits16 bits1x8 bits2x4 bits4x2 bits8 bool cdouble cfloat chalf complex128 complex32 complex64 "
    "double float float16 float32 float4_e2m1fn_x2 float64 float8_e4m3fn float8_e4m3fnuz float8_e5m2 "
    "float8_e5m2fnuz float8_e8m0fnu half int int1 int16 int2 int3 int32 int4 int5 int6 int64 int7 int8 long "
    "qint32 qint8 quint2x4 quint4x2 quint8 short uint1 uint16 uint2 uint3 uint32 uint4 uint5 uint6 uint64 uint7 "
    "uint8".split())
ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float8": "fp8"}


DTYPE_KEYS = ("dtype", "torch_dtype")   # where a Hugging Face config names its weights' dtype


def check_dtypes(config: Any, loc: Loc, prefix: str = "") -> None:
    """A config's `dtype`/`torch_dtype` (at any depth: a sub-config's too) that torch does not name is
    refused, as transformers refuses it when it builds the model ("module 'torch' has no attribute ...")."""
    items = config.items() if isinstance(config, dict) else enumerate(config) if isinstance(config, list) else ()
    for key, value in items:
        name = f"{prefix}[{key}]" if isinstance(key, int) else f"{prefix}{'.' if prefix else ''}{key}"
        if isinstance(value, (dict, list)) and key not in DTYPE_KEYS:
            check_dtypes(value, loc, name)
        elif key in DTYPE_KEYS and value is not None:
            word = value.removeprefix("torch.") if isinstance(value, str) else None
            if word != "auto" and word not in TORCH_DTYPES:
                raise ArchgraphError(f"'{name}' is {shortened(json.dumps(value))}, which is not a torch dtype",
                                     loc=loc, hint=(did_you_mean(word, TORCH_DTYPES) if word else None) or
                                     "give float32, bfloat16 or float16 (or leave it out)")


def canonical(name: object, what: str = "dtype") -> str:
    """`bfloat16` -> `bf16`; anything unknown is a SpecError with a did-you-mean."""
    text = str(name).strip().lower()
    text = ALIASES.get(text, text)
    if text not in BITS:
        hint = did_you_mean(str(name), list(BITS) + list(ALIASES))
        raise SpecError(f"{what}: unknown dtype {name!r}",
                        hint=hint or f"dtypes: {', '.join(BITS)} (or {', '.join(ALIASES)})")
    return text


def nbytes(elements: int, dtype: str) -> int:
    """Bytes of `elements` values of `dtype` (int4 packs two per byte; rounded up)."""
    return -(-elements * BITS[dtype] // 8)
