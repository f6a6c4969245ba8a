"""Tensor dimensions: plain ints, or sympy expressions when symbolic (`B`, `S`, `B*S`).

A dimension collapses to an `int` whenever its value is known.  `equal` decides
equality exactly or raises `InconclusiveDimError`; it never guesses `False`.
sympy is imported only when a symbolic dimension is first created.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable

from .errors import InconclusiveDimError, ShapeError

Dim = Any  # int | sympy.Expr
Shape = tuple  # tuple[Dim, ...]


def _sympy():
    import sympy
    return sympy


@lru_cache(maxsize=None)
def symbol(name: str):
    """The symbolic dimension called `name` (a positive integer)."""
    return _sympy().Symbol(name, integer=True, positive=True)


def is_symbolic(d: Dim) -> bool:
    return not isinstance(d, int)


def norm(d: Dim) -> Dim:
    """Collapse sympy integers to int."""
    if isinstance(d, int):
        return d
    if getattr(d, "is_Integer", False):
        return int(d)
    return d


def equal(a: Dim, b: Dim) -> bool:
    """True or False when decidable, else InconclusiveDimError."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    diff = _sympy().expand(a - b)
    if diff == 0:
        return True
    if diff.is_number:
        return False
    raise InconclusiveDimError(
        f"cannot decide whether {fmt(a)} equals {fmt(b)}",
        hint="give the symbolic sizes concrete values, e.g. --set " +
             "=2 --set ".join(sorted(str(s) for s in diff.free_symbols)) + "=2")


def prod(dims: Iterable[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = out * d
    return norm(out)


def exact_div(a: Dim, b: Dim, what: str) -> Dim:
    """a / b, which must be exact."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0 or a % b:
            raise ShapeError(f"{what}: {a} is not divisible by {b}")
        return a // b
    q = _sympy().cancel(a / b)
    num, den = q.as_numer_denom()
    if den != 1:
        raise InconclusiveDimError(f"{what}: {fmt(a)} is not known to be divisible by {fmt(b)}",
                                   hint="give the symbolic sizes concrete values with --set")
    return norm(q)


def ceil_div(a: Dim, b: int) -> Dim:
    """ceil(a / b) for a positive int b; symbolic a stays exact (`ceil(S/2)`)."""
    if isinstance(a, int):
        return -(-a // b)
    if b == 1:
        return a
    sp = _sympy()
    return norm(sp.ceiling(a / b))


def floor_div(a: Dim, b: int) -> Dim:
    """floor(a / b) for a positive int b."""
    if isinstance(a, int):
        return a // b
    if b == 1:
        return a
    return norm(_sympy().floor(a / b))


def fmt(d: Dim) -> str:
    """Human text of a dimension: `768`, `B*S`, `ceil(S/2)`."""
    if isinstance(d, int):
        return str(d)
    return str(d).replace("ceiling", "ceil").replace("floor(", "floor(")


def to_json(d: Dim) -> int | str:
    return d if isinstance(d, int) else fmt(d)


def fmt_shape(shape: Shape) -> str:
    return "[" + ", ".join(fmt(d) for d in shape) + "]"


def known_positive(d: Dim) -> bool:
    return not isinstance(d, int) or d > 0
