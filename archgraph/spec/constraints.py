"""`constraints:`, what a spec says about its sizes (`H % 4 == 0`, `S <= P`).

Constraints of the forms `NAME % K == 0`, `NAME <= K` (or `<`) and `NAME >= K` (or `>`) on a
symbolic size are facts the shape rules use (`H % 4 == 0` makes `H/2` and `H/4` exact sizes, so a
U-Net's skip connections line up symbolically; `L <= LMAX` makes `x[..., :L]` of an LMAX-long
table L long; `S >= 3` makes `x[:, :-2]` of an S-long sequence S - 2 long); once the size has a
value, and for every other constraint, the expression must hold for the values given (`--set
H=30` is refused with the constraint's line).  A constraint that still names an unbound size, and
is not a divisibility, is checked when the size gets a value.  A constraint may be written
`{check: EXPR, message: TEXT}`: its failure then says TEXT (a family template refusing a
combination of config keys names the keys).
"""
from __future__ import annotations

import ast
import math
from typing import Any, Mapping

from .. import expr
from ..dims import Poly
from ..errors import ArchgraphError, Fallback, Loc, SpecError
from ..record import Record


class Constraint(Record, frozen=True):
    """One `constraints:` entry: its expression text and where the spec says it."""

    text: str
    loc: Loc
    divisor: tuple[str, int] | None = None  # (size, K) for `size % K == 0`
    bound: tuple[str, int] | None = None    # (size, K) for `size <= K` (K - 1 for `size < K`)
    least: tuple[str, int] | None = None    # (size, K) for `size >= K` (K + 1 for `size > K`)
    message: str | None = None              # what a failure says, when the spec wrote one


def read_constraints(raw: Any, loc: Loc, env: Mapping[str, Any]) -> list[Constraint]:
    """The spec's `constraints:` (a list of expressions), with the divisibility ones recognised."""
    if raw is None:
        return []
    def form(c: Any) -> bool:
        return isinstance(c, str) or (isinstance(c, Mapping) and set(c) == {"check", "message"}
                                      and isinstance(c["check"], str) and isinstance(c["message"], str))
    if not isinstance(raw, list) or not all(form(c) for c in raw):
        raise SpecError("'constraints' must be a list of conditions, such as '- H % 4 == 0' or "
                        "'- {check: H % 4 == 0, message: why}'", loc=loc,
                        hint=Fallback("write them as a list: constraints: ['H % 4 == 0']"))
    out = []
    for item in raw:
        text, message = (item, None) if isinstance(item, str) else (item["check"], item["message"])
        try:
            tree = expr.parse(text)
        except ArchgraphError as exc:
            raise exc.with_context(loc=loc)
        out.append(Constraint(text, loc, divisor=_divisibility(tree.body, env), message=message,
                              bound=_bound(tree.body, env, (ast.LtE, ast.Lt)),
                              least=_bound(tree.body, env, (ast.GtE, ast.Gt))))
    return out


def _bound(node: ast.AST, env: Mapping[str, Any], ops: tuple) -> tuple[str, int] | None:
    """(NAME, K) for `NAME <= K` or `NAME < K + 1` (`ops` LtE, Lt), or `NAME >= K` or `NAME > K - 1`
    (GtE, Gt), where NAME is a symbolic size and K a whole number."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ops)
            and isinstance(node.left, ast.Name) and isinstance(env.get(node.left.id), Poly)):
        return None
    k = expr.evaluate(ast.unparse(node.comparators[0]), env)
    if isinstance(k, bool) or not isinstance(k, int):
        return None
    return node.left.id, int(k) + {ast.Lt: -1, ast.Gt: 1}.get(type(node.ops[0]), 0)


def bounds(constraints: list[Constraint], bound: Mapping[str, Any]) -> dict[str, int]:
    """name -> its greatest value, for the sizes still symbolic."""
    return _extremes(constraints, bound, "bound", min)


def least(constraints: list[Constraint], bound: Mapping[str, Any]) -> dict[str, int]:
    """name -> its least value, for the sizes still symbolic."""
    return _extremes(constraints, bound, "least", max)


def _extremes(constraints: list[Constraint], bound: Mapping[str, Any], kind: str, pick) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in constraints:
        fact = getattr(c, kind)
        if fact and fact[0] not in bound:
            name, k = fact
            out[name] = pick(out.get(name, k), k)
    return out


def _divisibility(node: ast.AST, env: Mapping[str, Any]) -> tuple[str, int] | None:
    """(NAME, K) for `NAME % K == 0` where NAME is a symbolic size and K a whole number."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)
            and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value == 0):
        return None
    left = node.left
    if not (isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) and isinstance(left.left, ast.Name)):
        return None
    if not isinstance(env.get(left.left.id), Poly):
        return None
    k = expr.evaluate(ast.unparse(left.right), env)
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        return None
    return left.left.id, int(k)


def divisors(constraints: list[Constraint], bound: Mapping[str, Any]) -> dict[str, int]:
    """name -> what it is a multiple of, for the sizes still symbolic."""
    out: dict[str, int] = {}
    for c in constraints:
        if c.divisor and c.divisor[0] not in bound:
            name, k = c.divisor
            out[name] = math.lcm(out.get(name, 1), k)
    return out


def check_constraints(constraints: list[Constraint], env: Mapping[str, Any]) -> None:
    """Every constraint whose names all have values must hold."""
    for c in constraints:
        fact = c.divisor or c.bound or c.least
        if fact and isinstance(env.get(fact[0]), Poly):
            continue
        if any(isinstance(env.get(n), Poly) for n in expr.names(c.text)):
            continue  # checked once the sizes have values
        try:
            holds = expr.check(c.text, env)
        except ArchgraphError as exc:
            raise exc.with_context(loc=c.loc)
        if holds is not True:
            values = ", ".join(f"{n}={env[n]}" for n in sorted(expr.names(c.text)) if n in env)
            if c.message:
                raise SpecError(f"{c.message} (the constraint '{c.text}' does not hold: {values})", loc=c.loc,
                                hint=Fallback("change the values so the constraint holds (--set, or the spec's variables)"))
            raise SpecError(f"the constraint '{c.text}' does not hold ({values})", loc=c.loc,
                            hint="choose values that satisfy it (the spec's 'constraints:')")
