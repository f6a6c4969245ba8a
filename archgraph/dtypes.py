"""Storage dtypes and their sizes in bits (a node's `dtype:` key, `--dtype`), and the element types a
buffer is kept in (torch's names, without `torch.`) with their bytes per value.

>>> BITS["bf16"], BITS["int4"], ELEMENT_BYTES["complex64"]
(16, 4, 8)
"""
from __future__ import annotations

from .errors import SpecError, did_you_mean

BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
# a buffer's element type (as torch names its dtype: torch.int64 is "int64") -> bytes per value
ELEMENT_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "complex64": 8, "complex128": 16,
                 "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float8": "fp8"}


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
