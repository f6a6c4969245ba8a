"""The number domain of a symbolic build: `SymInt`, an int that also carries a formula.

A spec is built once, by one interpreter, over either plain ints (counting and
shapes) or SymInts (formulas).  A SymInt *is* its concrete value for everything
that decides something (comparisons, `when:`, validation, loops), so a symbolic
build makes exactly the model the concrete build makes; arithmetic also carries
the formula along (a sympy expression in the spec's variables).  The active
`Trace` records two things: where a value's formula is lost or a choice of
structure depends on it (a comparison in an expression, a float), the names
involved are `frozen` (the formula holds only at their current values); and every
comparison of formulas that a check made (`H % A == 0`, `in_features == 3*H`)
is a `condition`: the formula describes a valid model only where they all hold.

>>> with Trace() as trace:
...     H = SymInt.named("H", 768)
...     x = 4 * H + 1
>>> int(x), str(x.expr), trace.frozen
(3073, '4*H + 1', set())
"""
from __future__ import annotations

import contextvars
from typing import Any

_TRACE: contextvars.ContextVar["Trace | None"] = contextvars.ContextVar("archgraph_trace", default=None)


def _sp():
    import sympy
    return sympy


class Trace:
    """Collects the names whose values a symbolic build had to fix (`with Trace() as t:`)."""

    def __init__(self) -> None:
        self.frozen: set[str] = set()
        self.conditions: dict[Any, None] = {}  # sympy relations that held, in order, once each
        self._token = None

    def __enter__(self) -> "Trace":
        self._token = _TRACE.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _TRACE.reset(self._token)


def decided(*values: Any) -> None:
    """Record that a choice depended on `values`: their names are frozen at their values."""
    trace = _TRACE.get()
    if trace is None:
        return
    for v in values:
        if isinstance(v, SymInt):
            trace.frozen |= {str(s) for s in v.expr.free_symbols}


def _held(relation: Any, outcome: bool) -> None:
    """Record that `relation` (sympy) came out `outcome` in a check of the active trace."""
    trace = _TRACE.get()
    if trace is None:
        return
    fact = relation if outcome else _sp().Not(relation)
    if fact not in (_sp().true, _sp().false) and getattr(fact, "free_symbols", None):
        trace.conditions.setdefault(fact, None)


def decided_names(names: set[str]) -> None:
    """Record that a choice (a `when:`) depended on the variables `names`, whatever their type."""
    trace = _TRACE.get()
    if trace is not None:
        trace.frozen |= set(names)


def expr_of(v: Any) -> Any:
    """The formula of a number: a SymInt's expression, an int as a sympy Integer."""
    return v.expr if isinstance(v, SymInt) else _sp().Integer(int(v))


def _other(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class SymInt(int):
    """An int that carries its formula (`expr`, sympy) through arithmetic."""

    expr: Any

    def __new__(cls, value: int, expr: Any) -> "SymInt":
        obj = int.__new__(cls, value)
        obj.expr = expr
        return obj

    @classmethod
    def named(cls, name: str, value: int) -> "SymInt":
        """The variable `name` with value `value`."""
        return cls(value, _sp().Symbol(name, integer=True, positive=True))

    def __repr__(self) -> str:  # cache keys tell equal values with other formulas apart
        return f"{int(self)}<{self.expr}>"

    def __str__(self) -> str:
        return str(int(self))

    def _binary(self, other: Any, fn, reverse: bool = False) -> Any:
        if _other(other):
            a, b = (other, self) if reverse else (self, other)
            return SymInt(fn(int(a), int(b)), _FORMULA[fn](expr_of(a), expr_of(b)))
        if isinstance(other, float):  # the formula is lost: freeze the names behind it
            decided(self)
            return fn(other, int(self)) if reverse else fn(int(self), other)
        return NotImplemented

    def __add__(self, o): return self._binary(o, _add)
    def __radd__(self, o): return self._binary(o, _add, True)
    def __sub__(self, o): return self._binary(o, _sub)
    def __rsub__(self, o): return self._binary(o, _sub, True)
    def __mul__(self, o): return self._binary(o, _mul)
    def __rmul__(self, o): return self._binary(o, _mul, True)
    def __floordiv__(self, o): return self._binary(o, _floordiv)
    def __rfloordiv__(self, o): return self._binary(o, _floordiv, True)
    def __mod__(self, o): return self._binary(o, _mod)
    def __rmod__(self, o): return self._binary(o, _mod, True)

    def __truediv__(self, o):
        decided(self, o)
        return int(self) / (int(o) if _other(o) else o)

    def __rtruediv__(self, o):
        decided(self, o)
        return (int(o) if _other(o) else o) / int(self)

    def __pow__(self, o):
        if _other(o) and int(o) >= 0:
            return SymInt(int(self) ** int(o), self.expr ** expr_of(o))
        decided(self, o)
        return int(self) ** (int(o) if _other(o) else o)

    def __rpow__(self, o):
        if _other(o) and int(self) >= 0:
            return SymInt(int(o) ** int(self), expr_of(o) ** self.expr)
        decided(self, o)
        return o ** int(self)

    __hash__ = int.__hash__

    def _compare(self, other: Any, fn, relation) -> Any:
        if not _other(other):
            return fn(int(self), other) if isinstance(other, float) else NotImplemented
        outcome = fn(int(self), int(other))
        _held(relation(self.expr, expr_of(other)), outcome)
        return outcome

    def __eq__(self, o): return self._compare(o, _eq, _sp().Eq) if _other(o) else int(self) == o
    def __ne__(self, o): return self._compare(o, _ne, _sp().Ne) if _other(o) else int(self) != o
    def __lt__(self, o): return self._compare(o, _lt, _sp().Lt)
    def __le__(self, o): return self._compare(o, _le, _sp().Le)
    def __gt__(self, o): return self._compare(o, _gt, _sp().Gt)
    def __ge__(self, o): return self._compare(o, _ge, _sp().Ge)

    def __bool__(self) -> bool:
        outcome = int(self) != 0
        _held(_sp().Ne(self.expr, 0), outcome)
        return outcome

    def __neg__(self): return SymInt(-int(self), -self.expr)
    def __pos__(self): return self

    def __abs__(self):
        decided(self)
        return abs(int(self))


def _eq(a, b): return a == b
def _ne(a, b): return a != b
def _lt(a, b): return a < b
def _le(a, b): return a <= b
def _gt(a, b): return a > b
def _ge(a, b): return a >= b
def _add(a, b): return a + b
def _sub(a, b): return a - b
def _mul(a, b): return a * b
def _floordiv(a, b): return a // b
def _mod(a, b): return a % b


def _formula_floordiv(a, b):
    return _sp().floor(a / b)


def _formula_mod(a, b):
    return _sp().Mod(a, b)


_FORMULA = {_add: _add, _sub: _sub, _mul: _mul, _floordiv: _formula_floordiv, _mod: _formula_mod}


def quotient(a: Any, b: Any) -> Any:
    """a / b for ints known to divide exactly (checked by the caller): the formula is a/b, not floor."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return SymInt(int(a) // int(b), expr_of(a) / expr_of(b))
    return a // b


def plain(v: Any) -> Any:
    """A value with any formula dropped (ints stay ints)."""
    return int(v) if isinstance(v, SymInt) else v
