"""Tensor dimensions: plain ints, or `Poly` when symbolic (`B`, `S`, `B*S`, `ceil(H/2)`).

A symbolic dimension is a polynomial in atoms: named sizes (positive integers),
floors of such a polynomial divided by a positive integer, and the max or min of
sizes that no bound orders (`max(1, floor(S/2))`; orderings are decided by interval
bounds over the atoms, or raise `InconclusiveDimError`).  Its normal form is
unique (a floor's numerator keeps coefficients in [0, divisor), the rest moves
outside), so equal sizes compare equal, and a polynomial that turns out constant
collapses to an `int`.  Coefficients are whole numbers, or fractions where a
spec's constraint makes the value whole (`H % 4 == 0` makes `H/2` a size:
`assuming({"H": 4})`).  `equal` decides exactly or raises `InconclusiveDimError`;
it never guesses False.  No sympy here (counting must not pay for it);
`to_sympy` converts for formulas.

>>> S = symbol("S")
>>> fmt(floor_div(S + 1, 2)), fmt(S * 2 - S), equal(ceil_div(S, 2), floor_div(S + 1, 2))
('ceil(S/2)', 'S', True)
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from fractions import Fraction
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping, Union

from .errors import Fallback, InconclusiveDimError, ShapeError
from .limits import MAX_POLY_TERMS

Dim = Any  # int | Poly
Shape = tuple  # tuple[Dim, ...]
_DIVISORS: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar("archgraph_divisors", default={})
_BOUNDS: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar("archgraph_bounds", default={})
_LEAST: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar("archgraph_least", default={})


@contextlib.contextmanager
def assuming(divisors: Mapping[str, int], bounds: Mapping[str, int] | None = None,
             least: Mapping[str, int] | None = None) -> Iterator[None]:
    """Within the block, each named size is known to be a multiple of its number in `divisors`, at
    most its number in `bounds` and at least its number in `least` (a spec's constraints)."""
    known, most, fewest = dict(_DIVISORS.get()), dict(_BOUNDS.get()), dict(_LEAST.get())
    for name, k in divisors.items():  # a multiple of both: of their least common multiple
        known[name] = math.lcm(known.get(name, 1), k)
    for name, k in (bounds or {}).items():
        most[name] = min(most.get(name, k), k)
    for name, k in (least or {}).items():
        fewest[name] = max(fewest.get(name, k), k)
    tokens = (_DIVISORS.set(known), _BOUNDS.set(most), _LEAST.set(fewest))
    try:
        yield
    finally:
        _DIVISORS.reset(tokens[0])
        _BOUNDS.reset(tokens[1])
        _LEAST.reset(tokens[2])


class _Atom:
    """An atom of a size other than a name: equal to another of its kind with the same `key`."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


class Floor(_Atom):
    """The atom floor(num / den) for a Poly `num` whose coefficients lie in [0, den)."""

    __slots__ = ("num", "den", "key")

    def __init__(self, num: "Poly", den: int):
        self.num, self.den = num, den
        self.key = (1, f"{num.text()}/{den}")

    def text(self) -> str:
        const = self.num.terms.get((), 0)
        if const == self.den - 1:  # floor((x + d - 1)/d) reads as ceil(x/d)
            return f"ceil({_group(self.num - const)}/{self.den})"
        return f"floor({_group(self.num)}/{self.den})"


class Log2(_Atom):
    """The atom ceil(log2(num)): the levels of an FFT of size num (for FLOPs)."""

    __slots__ = ("num", "key")

    def __init__(self, num: "Poly"):
        self.num = num
        self.key = (2, num.text())

    def text(self) -> str:
        return f"ceil(log2({self.num.text()}))"


class Extreme(_Atom):
    """The atom max(args) or min(args) of two or more sizes that no bound orders (`max(floor(S/2), 1)`)."""

    __slots__ = ("kind", "args", "key")

    def __init__(self, kind: str, args: tuple):
        self.kind, self.args = kind, args
        self.key = (3, f"{kind}({', '.join(fmt(a) for a in args)})")

    def text(self) -> str:
        return self.key[1]


Atom = Union[str, Floor, Log2, Extreme]
Mono = tuple  # tuple[tuple[Atom, int], ...], sorted by the atoms' keys


def _key(atom: Atom) -> tuple:
    return (0, atom) if isinstance(atom, str) else atom.key


class Poly:
    """A symbolic size: a polynomial with integer coefficients (see the module docstring)."""

    __slots__ = ("terms", "_hash", "_text")

    def __init__(self, terms: dict):
        self.terms = terms  # Mono -> nonzero int; never only a constant (that is an int)
        self._hash: int | None = None
        self._text: str | None = None

    # -- arithmetic ---------------------------------------------------------------------------
    def __add__(self, other: Any) -> Dim:
        if not isinstance(other, _NUMBERS) or isinstance(other, bool):
            return NotImplemented
        out = dict(self.terms)
        for mono, c in _terms(other).items():
            out[mono] = out.get(mono, 0) + c
        return _make(out)

    __radd__ = __add__

    def __neg__(self) -> "Poly":
        return Poly({m: -c for m, c in self.terms.items()})

    def __pos__(self) -> "Poly":
        return self

    def __sub__(self, other: Any) -> Dim:
        if not isinstance(other, _NUMBERS) or isinstance(other, bool):
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other: Any) -> Dim:
        if not isinstance(other, _NUMBERS) or isinstance(other, bool):
            return NotImplemented
        return (-self) + other

    def __mul__(self, other: Any) -> Dim:
        if not isinstance(other, _NUMBERS) or isinstance(other, bool):
            return NotImplemented
        theirs = _terms(other)
        if len(self.terms) * len(theirs) > MAX_POLY_TERMS:
            raise ShapeError(f"the product of symbolic sizes of {len(self.terms):,} and {len(theirs):,} terms "
                             f"is too large to expand (at most {MAX_POLY_TERMS:,} terms)",
                             hint="give the sizes values with --set")
        out: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in theirs.items():
                mono = _mono_mul(m1, m2)
                out[mono] = out.get(mono, 0) + c1 * c2
        return _make(out)

    __rmul__ = __mul__

    def __pow__(self, exponent: Any) -> Dim:
        if not isinstance(exponent, int) or isinstance(exponent, bool) or exponent < 0:
            raise InconclusiveDimError(f"{self.text()} ** {exponent}: a size's power must be a whole number "
                                       "of at least 0", hint=Fallback('raise the size to a whole power of at least 0'))
        out: Dim = 1
        for _ in range(exponent):
            out = out * self
        return out

    def __floordiv__(self, other: Any) -> Dim:
        if isinstance(other, int) and not isinstance(other, bool) and other > 0:
            return floor_div(self, other)
        raise InconclusiveDimError(f"cannot floor-divide {self.text()} by {fmt(other)}",
                                   hint="divide a symbolic size by a positive whole number only")

    def __truediv__(self, other: Any) -> Dim:
        return exact_div(self, other, f"{self.text()} / {fmt(other)}")

    def __rtruediv__(self, other: Any) -> Dim:
        return exact_div(other, self, f"{fmt(other)} / {self.text()}")

    def __rfloordiv__(self, other: Any) -> Dim:
        raise InconclusiveDimError(f"cannot floor-divide {fmt(other)} by the symbolic size {self.text()}",
                                   hint=_set_hint(self))

    def __mod__(self, other: Any) -> Dim:
        if isinstance(other, int) and not isinstance(other, bool) and other > 0:
            return self - other * floor_div(self, other)
        raise InconclusiveDimError(f"cannot take {self.text()} modulo {fmt(other)}", hint=_set_hint(self))

    # -- orderings: decided where every value of the sizes agrees, else InconclusiveDimError ----
    def __le__(self, other: Any) -> bool:
        return _le(self, other, f"{self.text()} <= {fmt(other)}")

    def __lt__(self, other: Any) -> bool:
        return not _le(other, self, f"{self.text()} < {fmt(other)}")

    def __ge__(self, other: Any) -> bool:
        return _le(other, self, f"{self.text()} >= {fmt(other)}")

    def __gt__(self, other: Any) -> bool:
        return not _le(self, other, f"{self.text()} > {fmt(other)}")

    def __index__(self) -> int:
        raise InconclusiveDimError(f"the symbolic size {self.text()} is used where a number is needed",
                                   hint=_set_hint(self))

    __int__ = __index__

    # -- identity and text -------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        """Structural equality (normal forms are unique); `equal()` is the decision procedure."""
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.terms.items()))
        return self._hash

    def text(self) -> str:
        if self._text is None:
            self._text = _text(self.terms)
        return self._text

    __str__ = text

    def __repr__(self) -> str:
        return f"Poly({self.text()})"


_NUMBERS = (int, Fraction, Poly)


def _le(a: Dim, b: Dim, shown: str) -> bool:
    """Whether a <= b for every value of the sizes (False: a > b for every value); else
    InconclusiveDimError naming the comparison `shown`: never a guess."""
    if any(isinstance(x, bool) or not isinstance(x, _NUMBERS) for x in (a, b)):
        raise InconclusiveDimError(f"cannot compare {shown}: a symbolic size orders with whole numbers "
                                   "and other sizes only", hint=Fallback('compare sizes with whole numbers or other sizes only'))
    outcome = provably_le(a, b)
    if outcome is None:
        raise InconclusiveDimError(f"cannot decide whether {shown}", hint=_set_hint(b - a),
                                   names=free_names(b - a))
    return outcome


def _terms(x: Dim) -> dict:
    if isinstance(x, Poly):
        return x.terms
    if isinstance(x, Fraction):
        return {(): x} if x else {}
    return {(): int(x)} if x else {}  # int(): a SymInt's formula has no place in a size


def _make(terms: dict) -> Dim:
    terms = {m: (int(c) if isinstance(c, Fraction) and c.denominator == 1 else c) for m, c in terms.items() if c}
    if not terms:
        return 0
    if len(terms) == 1 and () in terms:
        return terms[()]
    return Poly(terms)


def _known_divisor(mono: Mono) -> int:
    """What the constraints say a monomial's value is a multiple of."""
    known, out = _DIVISORS.get(), 1
    for atom, p in mono:
        if isinstance(atom, str):
            out *= known.get(atom, 1) ** p
    return out


def _divides(p: "Poly", d: int) -> bool:
    """Whether every term of `p` is known to be a multiple of `d` (constraints included)."""
    return all((c * _known_divisor(m)) % d == 0 for m, c in p.terms.items())


def _mono_mul(a: Mono, b: Mono) -> Mono:
    if not a:
        return b
    if not b:
        return a
    powers: dict = dict(a)
    for atom, p in b:
        powers[atom] = powers.get(atom, 0) + p
    return tuple(sorted(powers.items(), key=lambda ap: _key(ap[0])))


def _atom_text(atom: Atom) -> str:
    return atom if isinstance(atom, str) else atom.text()


def _mono_text(mono: Mono) -> str:
    return "*".join(_atom_text(a) + (f"**{p}" if p > 1 else "") for a, p in mono)


def _degree(mono: Mono) -> int:
    return sum(p for _, p in mono)


def _text(terms: dict) -> str:
    order = sorted(terms.items(), key=lambda mc: (-_degree(mc[0]), [(_key(a), -p) for a, p in mc[0]]))
    out = ""
    for mono, c in order:
        body = _mono_text(mono)
        mag = abs(c)
        num, den = (mag.numerator, mag.denominator) if isinstance(mag, Fraction) else (mag, 1)
        piece = body if num == 1 and body else f"{num}*{body}" if body else str(num)
        piece += f"/{den}" if den != 1 else ""
        if not out:
            out = ("-" if c < 0 else "") + piece
        else:
            out += (" - " if c < 0 else " + ") + piece
    return out


def _group(d: Dim) -> str:
    text = fmt(d)
    return f"({text})" if isinstance(d, Poly) and (len(d.terms) > 1 or "-" in text) else text


def _set_hint(d: Dim) -> str:
    names = sorted(free_names(d))
    return "give the symbolic sizes concrete values, e.g. " + " ".join(f"--set {n}=..." for n in names)


# -- the public operations ----------------------------------------------------------------------
@lru_cache(maxsize=None)
def symbol(name: str) -> Poly:
    """The symbolic dimension called `name` (a positive integer)."""
    return Poly({((name, 1),): 1})


def is_symbolic(d: Dim) -> bool:
    return isinstance(d, Poly)


def norm(d: Dim) -> Dim:
    """A dimension as archgraph keeps it (ints stay ints; kept for callers that normalise)."""
    return d


def free_names(d: Dim) -> set[str]:
    """Names of the symbolic sizes `d` depends on."""
    out: set[str] = set()
    if isinstance(d, Poly):
        for mono in d.terms:
            for atom, _ in mono:
                out |= {atom} if isinstance(atom, str) \
                    else set().union(*map(free_names, atom.args)) if isinstance(atom, Extreme) \
                    else free_names(atom.num)
    return out


def ceil_log2(d: Dim) -> Dim:
    """ceil(log2(d)) of a positive size: the number of levels of an FFT of that size."""
    if isinstance(d, int):
        return (d - 1).bit_length()
    return Poly({((Log2(d), 1),): 1})


def provably_le(a: Dim, b: Dim) -> bool | None:
    """True when a <= b for every value of the sizes, False when a > b for every value, else None."""
    diff = b - a
    if isinstance(diff, (int, Fraction)):
        return diff >= 0
    low, high = _bounds(diff)
    if low is not None and low >= 0:
        return True
    if high is not None and high < 0:
        return False
    return None


def _bounds(p: Poly) -> tuple[Any, Any]:
    """The tighter of `_range(p)` and the range with each floor(n/d) term read as n/d less up to
    (d-1)/d (so S - floor(S/2) is seen to be at least 0)."""
    low, high = _range(p)
    relaxed: Dim = 0
    slack_low: Any = 0
    slack_high: Any = 0
    for mono, c in p.terms.items():
        atom = mono[0][0] if len(mono) == 1 and mono[0][1] == 1 else None
        if isinstance(atom, Floor):
            relaxed = relaxed + _make({m: Fraction(c) * k / atom.den for m, k in atom.num.terms.items()})
            gap = Fraction(c * (atom.den - 1), atom.den)
            slack_low, slack_high = (slack_low - gap, slack_high) if c > 0 else (slack_low, slack_high - gap)
        else:
            relaxed = relaxed + Poly({mono: c})
    if relaxed == p:
        return low, high
    lo, hi = _range(relaxed) if isinstance(relaxed, Poly) else (relaxed, relaxed)
    if lo is not None:
        low = lo + slack_low if low is None else max(low, lo + slack_low)
    if hi is not None:
        high = hi + slack_high if high is None else min(high, hi + slack_high)
    return low, high


def _range(p: Poly) -> tuple[Any, Any]:
    """(least, greatest) value of `p` over its sizes (each named size at least 1, or its least bound,
    and at most its bound), None where unknown: interval arithmetic over the atoms."""
    low: Any = 0
    high: Any = 0
    for mono, c in p.terms.items():
        lo, hi = _mono_range(mono)
        if c < 0:
            lo, hi = hi, lo
        low = None if low is None or lo is None else low + c * lo
        high = None if high is None or hi is None else high + c * hi
    return low, high


def _mono_range(mono: Mono) -> tuple[Any, Any]:
    """The range of a product of atoms: exact when every atom is at least 0."""
    low: Any = 1
    high: Any = 1
    for atom, power in mono:
        lo, hi = _atom_range(atom)
        if lo is None or lo < 0:
            return (lo, hi) if len(mono) == 1 and power == 1 else (None, None)
        low = low * lo ** power
        high = None if high is None or hi is None else high * hi ** power
    return low, high


def _atom_range(atom: Atom) -> tuple[Any, Any]:
    if isinstance(atom, str):
        return max(1, _LEAST.get().get(atom, 1)), _BOUNDS.get().get(atom)
    if isinstance(atom, Extreme):
        ranges = [_range(a) if isinstance(a, Poly) else (a, a) for a in atom.args]
        lows, highs = [r[0] for r in ranges], [r[1] for r in ranges]
        if atom.kind == "min":  # min <= each argument; at least the least of all lows
            return (None if None in lows else min(lows)), min((h for h in highs if h is not None), default=None)
        return max((x for x in lows if x is not None), default=None), (None if None in highs else max(highs))
    lo, hi = _range(atom.num)
    if isinstance(atom, Log2):
        return (None if lo is None or lo < 1 else ceil_log2(int(lo))), \
            (None if hi is None or hi < 1 else ceil_log2(int(-(-hi // 1))))
    return (None if lo is None else lo // atom.den), (None if hi is None else hi // atom.den)


def maximum(*args: Dim) -> Dim:
    """max(args), exact: an argument when bounds order it above the rest (an int when all are
    known), else the atom max(...) of those no other argument is known to exceed."""
    return _extreme("max", args)


def minimum(*args: Dim) -> Dim:
    """min(args), exact, as `maximum`."""
    return _extreme("min", args)


def _extreme(kind: str, args: tuple) -> Dim:
    flat: list = []
    for a in args:  # max(max(a, b), c) is max(a, b, c)
        inner = _single_atom(a)
        flat.extend(inner.args if isinstance(inner, Extreme) and inner.kind == kind else [a])
    keep: list = []
    for i, a in enumerate(flat):  # drop an argument another one is known to bound (ties: the first)
        beaten = False
        for j, b in enumerate(flat):
            if i == j:
                continue
            order = provably_le(a, b) if kind == "max" else provably_le(b, a)
            if order and (j < i or (provably_le(b, a) if kind == "max" else provably_le(a, b)) is not True):
                beaten = True
                break
        if not beaten:
            keep.append(a)
    if len(keep) == 1:
        return keep[0]
    keep = sorted(set(keep), key=lambda d: (isinstance(d, Poly), fmt(d)))
    return Poly({((Extreme(kind, tuple(keep)), 1),): 1})


def _single_atom(d: Dim) -> Atom | None:
    """The atom `d` is, when it is exactly one atom."""
    if isinstance(d, Poly) and len(d.terms) == 1:
        ((mono, c),) = d.terms.items()
        if c == 1 and len(mono) == 1 and mono[0][1] == 1:
            return mono[0][0]
    return None


def equal(a: Dim, b: Dim) -> bool:
    """True or False when decidable, else InconclusiveDimError."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    diff = a - b
    if isinstance(diff, int):
        return diff == 0
    if _surely_nonzero(diff):
        return False
    raise InconclusiveDimError(f"cannot decide whether {fmt(a)} equals {fmt(b)}", hint=_set_hint(diff),
                               names=free_names(diff))


def _surely_nonzero(p: Poly) -> bool:
    """All coefficients of one sign and a term of named sizes only (each at least 1): never 0."""
    signs = {c > 0 for c in p.terms.values()}  # a multiple of a constant never vanishes either
    if len(signs) == 1 and any(all(isinstance(a, str) for a, _ in m) for m in p.terms):
        return True
    low, high = _bounds(p)
    return (low is not None and low > 0) or (high is not None and high < 0)


def prod(dims: Iterable[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = out * d
    return out


def exact_div(a: Dim, b: Dim, what: str) -> Dim:
    """a / b, which must be exact."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0 or a % b:
            raise ShapeError(f"{what}: {a} is not divisible by {b}",
                             hint=Fallback("make the sizes divisible (check the spec's variables or the --set values)"))
        return a // b
    if isinstance(b, int) and b == 0:
        raise ShapeError(f"{what}: division by zero",
                         hint=Fallback("divide by a size that is not 0 (check the spec's variables or the --set values)"))
    if isinstance(a, Poly) and isinstance(b, int) and b > 0 and _divides(a, b):
        return _make({m: Fraction(c, b) for m, c in a.terms.items()})
    quotient = _divide(a, b)
    if quotient is None:
        raise InconclusiveDimError(f"{what}: {fmt(a)} is not known to be divisible by {fmt(b)}",
                                   hint=_set_hint(a) if isinstance(a, Poly) else _set_hint(b),
                                   names=free_names(a) | free_names(b))
    return quotient


def _divide(a: Dim, b: Dim) -> Dim | None:
    """The exact quotient of polynomials, or None (division by leading terms, graded order)."""
    rest, quotient = _terms(a), {}
    divisor = _terms(b)
    lead_b = max(divisor, key=_order)
    while rest:
        lead = max(rest, key=_order)
        factor = _mono_div(lead, lead_b)
        if factor is None or rest[lead] % divisor[lead_b]:
            return None
        coef = rest[lead] // divisor[lead_b]
        quotient[factor] = quotient.get(factor, 0) + coef
        step = dict(rest)
        for mono, c in divisor.items():
            m = _mono_mul(mono, factor)
            step[m] = step.get(m, 0) - c * coef
        rest = {m: c for m, c in step.items() if c}
    return _make(quotient)


def _order(mono: Mono) -> tuple:
    return (_degree(mono), [(_key(a), p) for a, p in mono])


def _mono_div(a: Mono, b: Mono) -> Mono | None:
    powers = dict(a)
    for atom, p in b:
        if powers.get(atom, 0) < p:
            return None
        powers[atom] -= p
    return tuple(sorted(((x, p) for x, p in powers.items() if p), key=lambda ap: _key(ap[0])))


def floor_div(a: Dim, b: int) -> Dim:
    """floor(a / b) for a positive int b; symbolic a stays exact (`floor(S/2)`)."""
    if isinstance(a, int):
        return a // b
    if b == 1:
        return a
    if _divides(a, b):
        return _make({m: Fraction(c, b) for m, c in a.terms.items()})
    whole, part = {}, {}
    for mono, c in a.terms.items():
        if mono and (c * _known_divisor(mono)) % b == 0:  # a known multiple of b leaves the floor whole
            whole[mono] = Fraction(c, b)
            continue
        q, r = divmod(c, b)
        if q:
            whole[mono] = q
        if r:
            part[mono] = r
    rest = _make(part)
    if isinstance(rest, int):  # 0 <= rest < b
        return _make(whole)
    return _make(whole) + Poly({((Floor(rest, b), 1),): 1})


def ceil_div(a: Dim, b: int) -> Dim:
    """ceil(a / b) for a positive int b; symbolic a stays exact (`ceil(S/2)`)."""
    if isinstance(a, int):
        return -(-a // b)
    return floor_div(a + (b - 1), b)


def subs(d: Dim, values: Mapping[str, Dim]) -> Dim:
    """`d` with the named sizes in `values` replaced (by ints or other sizes)."""
    if isinstance(d, int):
        return d
    out: Dim = 0
    for mono, c in d.terms.items():
        term: Dim = c
        for atom, p in mono:
            value = values.get(atom, symbol(atom)) if isinstance(atom, str) \
                else _extreme(atom.kind, tuple(subs(a, values) for a in atom.args)) if isinstance(atom, Extreme) \
                else ceil_log2(subs(atom.num, values)) if isinstance(atom, Log2) \
                else floor_div(subs(atom.num, values), atom.den)
            for _ in range(p):
                term = term * value
        out = out + term
    return int(out) if isinstance(out, Fraction) and out.denominator == 1 else out


def fmt(d: Dim) -> str:
    """Human text of a dimension: `768`, `B*S`, `ceil(S/2)`."""
    return d.text() if isinstance(d, Poly) else str(d)


def to_json(d: Dim) -> int | str:
    return fmt(d) if isinstance(d, Poly) else d


def fmt_shape(shape: Shape) -> str:
    return "[" + ", ".join(fmt(d) for d in shape) + "]"


def known_positive(d: Dim) -> bool:
    return not isinstance(d, int) or d > 0


def to_sympy(d: Dim) -> Any:
    """The same size as a sympy expression (for formulas; imports sympy)."""
    import sympy
    if not isinstance(d, Poly):
        return sympy.Integer(d) if isinstance(d, int) else d
    out = sympy.Integer(0)
    for mono, c in d.terms.items():
        term = sympy.Integer(c)
        for atom, p in mono:
            base = sympy.Symbol(atom, integer=True, positive=True) if isinstance(atom, str) \
                else (sympy.Max if atom.kind == "max" else sympy.Min)(*map(to_sympy, atom.args)) \
                if isinstance(atom, Extreme) \
                else sympy.ceiling(sympy.log(to_sympy(atom.num), 2)) if isinstance(atom, Log2) \
                else sympy.floor(to_sympy(atom.num) / atom.den)
            term = term * base ** p
        out = out + term
    return out
