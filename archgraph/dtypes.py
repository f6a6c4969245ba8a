"""Storage dtypes and their sizes in bits (a node's `dtype:` key, `--dtype`).

>>> BITS["bf16"], BITS["int4"]
(16, 4)
"""
from __future__ import annotations

from .errors import SpecError, did_you_mean

BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
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
