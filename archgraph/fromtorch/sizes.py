"""A size torch.export keeps symbolic (a sympy expression of its symbols) as the text of an archgraph
expression of the spec's size names: `s0 // 8` as `S // 8`, `Min(64, s1)` as `min(64, S)`.  What
the expression language cannot say is None (the caller refuses it by name)."""
from __future__ import annotations

from typing import Any

import sympy
import torch.utils._sympy.functions as F

BINARY = {F.FloorDiv: "//", F.PythonMod: "%", F.Mod: "%"}
CALLS = {sympy.Min: "min", F.Min: "min", sympy.Max: "max", F.Max: "max", F.CeilDiv: "ceil_div"}


def size_text(expr: Any, names: dict) -> str | None:
    """`expr` with each symbol written as names[symbol], or None when it holds a symbol not named or
    an operation archgraph's expressions do not have."""
    try:
        return _text(expr, names)
    except _Unsayable:
        return None


class _Unsayable(Exception):
    pass


def _text(e: Any, names: dict) -> str:
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        if e not in names:
            raise _Unsayable(e)
        return names[e]
    if e.is_Add:
        terms = sorted(e.args, key=lambda t: (t.is_number, str(t)))
        out = _text(terms[0], names)
        for t in terms[1:]:
            coeff, rest = t.as_coeff_Mul()
            if coeff < 0:
                out += f" - {_text(-t, names)}"
            else:
                out += f" + {_text(t, names)}"
        return out
    if e.is_Mul:
        return " * ".join(_atom(a, names) for a in sorted(e.args, key=lambda a: (not a.is_number, str(a))))
    if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
        return f"{_atom(e.base, names)} ** {int(e.exp)}"
    if type(e) in BINARY:
        a, b = e.args
        return f"{_atom(a, names)} {BINARY[type(e)]} {_atom(b, names)}"
    if type(e) in CALLS:
        return f"{CALLS[type(e)]}({', '.join(_text(a, names) for a in e.args)})"
    raise _Unsayable(e)


def _atom(e: Any, names: dict) -> str:
    """`e` as an operand of a product, quotient or power: in parentheses unless a name, a whole number
    or a call (`2 * (S // 8)`, never `2 * S // 8`, which Python reads as (2 * S) // 8)."""
    text = _text(e, names)
    plain = e.is_Symbol or (e.is_Integer and int(e) >= 0) or type(e) in CALLS
    return text if plain else f"({text})"
