"""Partial evaluation of spec expressions: the names whose values are known are folded in,
the names kept (a spec's sizes, a block's arguments, the repetition index) stay.

`residual(text, known, values, index)` gives a plain value when the expression no longer
depends on a kept name, else the simplified expression's text.  It never guesses: a
part is folded only by evaluating it (`expr.evaluate`), `c if t else e` and `and`/`or`
only where the constant parts decide them (or both branches are one value).  With `index` (the repetition index, and the
values it takes) a part whose only kept name is the index and that gives one value at
every repetition is that value (`i >= 0` is true).  `values` holds the kept names' values
where they are known (whole numbers: `floor(D)` of a whole D is D).

>>> residual("4 * H if gated else H", {"gated": False}, {"H": 8})
'H'
>>> residual("W if i >= MWL else None", {"MWL": 0}, {"W": 16}, ("i", range(4)))
'W'
>>> residual("floor(D * rot)", {"rot": 1.0}, {"D": 64})
'D'
>>> residual("CH * rot / IMH", {"rot": 1.0}, {"CH": 24})   # a real number: / divides as Python's
'CH * 1.0 / IMH'
>>> residual("factor if scaling in ['yarn', 'longrope'] else None", {"factor": None}, {})   # either way None
"""
from __future__ import annotations

import ast
import copy
from typing import Any, Mapping

from .. import expr
from ..errors import ExprError


class _Const:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


_WHOLE = ("floor", "ceil", "round", "int")


def residual(text: Any, known: Mapping[str, Any], values: Mapping[str, Any] | None = None,
             index: tuple[str, Any] | None = None, decide: Mapping[str, Any] | None = None) -> Any:
    """`text` (an expression, or a number, bool, None or list as a spec holds them) with `known`
    folded in: a value, or the text of what is left.  `decide`: values of kept names that decide a
    condition (a comparison, `not`, the test of `c if t else e`, which part `a or b` is) where they
    are read in one; elsewhere those names stay (`W if P > 1 else None` at P = 6 is `W`).

    >>> residual("W if (i + 1) % P != 0 else None", {"i": 5}, {}, decide={"P": 6, "W": 512})
    >>> residual("W if (i + 1) % P != 0 else None", {"i": 4}, {}, decide={"P": 6, "W": 512})
    'W'
    >>> residual("rope_orig or max_pos", {}, {}, decide={"rope_orig": None, "max_pos": 4096})
    'max_pos'
    """
    if isinstance(text, list):
        parts = [residual(t, known, values, index, decide) for t in text]
        if all(not isinstance(p, Expr) for p in parts):
            return parts
        return Expr("[" + ", ".join(p if isinstance(p, Expr) else source(p) for p in parts) + "]")
    if not isinstance(text, str):
        return text
    out = _Folder(known, values or {}, index, decide).fold(expr.parse(text).body)
    return out.value if isinstance(out, _Const) else Expr(ast.unparse(out))


class Expr(str):
    """The text of an expression left with kept names (a plain str is a word, a value)."""


def source(value: Any) -> str:
    """A value as expression text: `['a', 'b']`."""
    return ast.unparse(_node(value))


def _node(value: Any) -> ast.AST:
    if isinstance(value, list):
        return ast.List([_node(v) for v in value], ast.Load())
    if isinstance(value, float) and value != value:  # pragma: no cover - check_value refuses nan
        raise ValueError("nan")
    return ast.Constant(value)


class _Folder:
    def __init__(self, known: Mapping[str, Any], values: Mapping[str, Any], index, decide=None) -> None:
        self.known, self.values, self.index = known, values, index
        self.decide = {k: v for k, v in (decide or {}).items() if k not in known}

    def _decided(self, node: ast.AST) -> _Const | None:
        """A condition's value at the kept names' values (`decide`), when they give it one."""
        if not self.decide:
            return None
        out = _Folder({**self.decide, **self.known}, self.values, self.index).fold(copy.deepcopy(node))
        return out if isinstance(out, _Const) else None

    def fold(self, node: ast.AST) -> Any:
        out = self._fold(node)
        if isinstance(out, _Const) or self.index is None:
            return out
        free = _free(out)
        name, steps = self.index
        if free == {name} and len(steps):
            text = ast.unparse(out)
            try:
                seen = {repr(expr.evaluate(text, {name: i})) for i in steps}
            except ExprError:  # a part a condition around it keeps from some repetitions
                return out
            if len(seen) == 1:
                return _Const(expr.evaluate(text, {name: steps[0]}))
        return out

    def _fold(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return _Const(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.known:
                value = self.known[node.id]
                if isinstance(value, Expr):  # a name that stands for an expression of kept names
                    return self._fold(copy.deepcopy(expr.parse(value).body))
                return _Const(value)
            if node.id in ("true", "True", "false", "False"):
                return _Const(node.id in ("true", "True"))
            if node.id in expr.CONSTANTS:
                return _Const(expr.CONSTANTS[node.id])
            return node
        if isinstance(node, ast.IfExp):
            test = self._decided(node.test) or self.fold(node.test)
            if isinstance(test, _Const):
                return self.fold(node.body if test.value else node.orelse)
            body, orelse = self.fold(node.body), self.fold(node.orelse)
            if isinstance(body, _Const) and isinstance(orelse, _Const) and _same_value(body.value, orelse.value):
                return body  # `A if t else A`: A, whatever t is
            return self._rebuild(ast.IfExp(test, body, orelse))
        if isinstance(node, ast.BoolOp):
            return self._boolop(node)
        if isinstance(node, ast.ListComp):
            return self._comprehension(node)
        if isinstance(node, ast.Call):
            args = [self.fold(a) for a in node.args]
            if node.func.id in _WHOLE and len(args) == 1 and self._whole(_unreal(args[0])):
                return _unreal(args[0])
            return self._rebuild(ast.Call(node.func, args, []))
        if isinstance(node, ast.BinOp):
            left, right = self.fold(node.left), self.fold(node.right)
            kept = _identity(node.op, left, right)
            if kept is not None:
                return kept
            return self._rebuild(ast.BinOp(left, node.op, right))
        if isinstance(node, ast.Compare) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            decided = self._decided(node)
            if decided is not None:
                return decided
        if isinstance(node, ast.UnaryOp):
            return self._rebuild(ast.UnaryOp(node.op, self.fold(node.operand)))
        if isinstance(node, ast.Compare):
            return self._rebuild(ast.Compare(self.fold(node.left), node.ops, [self.fold(c) for c in node.comparators]))
        if isinstance(node, ast.Subscript):
            return self._rebuild(ast.Subscript(self.fold(node.value), self.fold(node.slice), ast.Load()))
        if isinstance(node, ast.List):
            return self._rebuild(ast.List([self.fold(e) for e in node.elts], ast.Load()))
        return node  # pragma: no cover - parse() allows nothing else

    def _boolop(self, node: ast.BoolOp) -> Any:
        want = isinstance(node.op, ast.And)  # and: a false part decides; or: a true one
        if self.decide:  # the part `a or b` gives, by the parts' truth at the kept names' values
            for k, part in enumerate(node.values):
                truth = self._decided(part)
                if truth is None:
                    break
                if bool(truth.value) != want or k == len(node.values) - 1:
                    return self.fold(part)
        left = []
        for part in node.values:
            value = self.fold(part)
            if isinstance(value, _Const):
                if bool(value.value) != want:
                    if not left:
                        return _Const(not want)
                    left.append(value)
                    break
                continue
            left.append(value)
        if not left:
            return _Const(want)
        if len(left) == 1:
            return left[0]
        return ast.BoolOp(node.op, [_ast(v) for v in left])

    def _comprehension(self, node: ast.ListComp) -> Any:
        bound = {g.target.id for g in node.generators}
        inner = _Folder({k: v for k, v in self.known.items() if k not in bound}, self.values, None)
        gens = [ast.comprehension(g.target, _ast(inner.fold(g.iter)), [_ast(inner.fold(c)) for c in g.ifs], 0)
                for g in node.generators]
        return self._rebuild(ast.ListComp(_ast(inner.fold(node.elt)), gens))

    def _rebuild(self, node: ast.AST) -> Any:
        """The node with folded parts as constants; a value when no kept name is left in it."""
        for field, value in ast.iter_fields(node):
            if isinstance(value, _Const):
                setattr(node, field, _node(value.value))
            elif isinstance(value, list):
                setattr(node, field, [_ast(v) for v in value])
        if not _free(node):
            try:
                return _Const(expr.evaluate_node(node, {}))
            except ExprError:  # a part only a condition around it keeps from being evaluated
                return node
        return node

    def _whole(self, value: Any) -> bool:
        """Whether a folded part is a whole number by itself: a kept name with a whole value."""
        if isinstance(value, _Const):
            return False
        return (isinstance(value, ast.Name) and isinstance(self.values.get(value.id), int)
                and not isinstance(self.values.get(value.id), bool))


def _same_value(a: Any, b: Any) -> bool:
    """Equal and of one type (1 and 1.0 and True differ: each is read as its own kind)."""
    return type(a) is type(b) and repr(a) == repr(b)


def _ast(value: Any) -> ast.AST:
    return _node(value.value) if isinstance(value, _Const) else value


def _identity(op: ast.operator, left: Any, right: Any) -> Any:
    """`x * 1`, `1 * x`, `x / 1`, `x // 1`, `x + 0`, `0 + x`, `x - 0`: x.  Whole-number constants only:
    `x * 1.0` makes a real number of x (`CH * 1.0 / IMH` divides as Python's `/`, not exactly)."""
    def one(v):
        return isinstance(v, _Const) and type(v.value) is int and v.value == 1

    def zero(v):
        return isinstance(v, _Const) and type(v.value) is int and v.value == 0
    if isinstance(left, _Const) and isinstance(right, _Const):
        return None
    if isinstance(op, ast.Mult):
        return left if one(right) else right if one(left) else None
    if isinstance(op, (ast.Div, ast.FloorDiv)):
        return left if one(right) else None
    if isinstance(op, ast.Add):
        return left if zero(right) else right if zero(left) else None
    if isinstance(op, ast.Sub):
        return left if zero(right) else None
    return None


def _unreal(value: Any) -> Any:
    """x of `x * 1.0` or `1.0 * x` (floor(D * 1.0) is D when D is whole); else the value."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        for one, other in ((value.right, value.left), (value.left, value.right)):
            if isinstance(one, ast.Constant) and type(one.value) is float and one.value == 1.0:
                return other
    return value


def _free(node: ast.AST) -> set[str]:
    """The names left in a folded node (functions and a comprehension's own names excluded)."""
    nodes = list(ast.walk(node))
    calls = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    bound = {n.target.id for n in nodes if isinstance(n, ast.comprehension)}
    return {n.id for n in nodes if isinstance(n, ast.Name) and id(n) not in calls} - bound
