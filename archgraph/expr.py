"""Safe integer arithmetic for spec values: `4 * H`, `H / A`, `max(1, L // 2)`.

Expressions are parsed with `ast` and evaluated by walking a whitelist of node
types; nothing is ever passed to `eval`.  `/` is exact division: it fails when
the division leaves a remainder (use `//` to floor).  Lists may be written
(`[16, 24, 32]`), made by `range` and by comprehensions over lists
(`[round(w * dm) for w in widths]`, nested `for`s and `if`s as in Python), at
most MAX_ITEMS items or steps each, and at most MAX_EXPR_ITEMS in all in one evaluation
(every item a list literal, `range`, `*` or `+` makes and every comprehension step counts, so
nested comprehensions stay bounded too).  Values may be ints,
floats, bools, words, symbolic sizes (`dims.Poly`: `B`, `S * 2`) or SymInts
(`numbers`: ints that carry a formula); a choice that depends on a SymInt (a
comparison, `x if c else y`) records its names as decided.  `min` and `max` stay
exact: of sizes a size (`max(1, floor(S/2))`), of SymInts a formula with sympy's
Max/Min.  `log`, `exp`, `sqrt` and the constant `pi` give floats; `inf` is the float infinity
(a fill value: `-inf` masks a score out).

>>> evaluate("4 * H", {"H": 768})
3072
>>> evaluate("H / A", {"H": 768, "A": 12})
64
>>> evaluate("max(S // 2, 1)", {"S": dims.symbol("S")})
Poly(max(1, floor(S/2)))
>>> evaluate("act == 'gelu'", {"act": "gelu"})
True
>>> evaluate("[s for s in range(len(r)) for _ in range(r[s])]", {"r": [1, 2]})
[0, 1, 1]
"""
from __future__ import annotations

import ast
import collections
import contextlib
import contextvars
import math
import operator
import unicodedata
from functools import lru_cache
from typing import Any, Iterator, Mapping

from . import dims
from .errors import ExprError, Fallback, InconclusiveDimError, ShapeError, did_you_mean
from .limits import MAX_EXPR_CHARS, MAX_EXPR_DEPTH, MAX_EXPR_ITEMS, MAX_ITEMS, MAX_MAGNITUDE, MAX_POW
from .numbers import SymInt, decided, expr_of, plain, quotient

MAX_LEN, MAX_DEPTH = MAX_EXPR_CHARS, MAX_EXPR_DEPTH  # the names this module's messages use


class _Budget:
    """What the evaluations of one spec (or one evaluation alone) may still make, and what the
    evaluation under way has made."""

    __slots__ = ("left", "here")

    def __init__(self) -> None:
        self.left, self.here = MAX_EXPR_ITEMS, 0


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("expr_budget", default=None)
_checking: contextvars.ContextVar[bool] = contextvars.ContextVar("expr_checking", default=False)  # in check()


@contextlib.contextmanager
def budget() -> Iterator[None]:
    """Every evaluation inside shares one MAX_EXPR_ITEMS (a spec's build: an expression evaluated at
    each of 100,000 repetitions cannot make 100,000 items each); inside another, the outer one."""
    if _budget.get() is not None:
        yield
        return
    token = _budget.set(_Budget())
    try:
        yield
    finally:
        _budget.reset(token)


def _spend(items: int) -> None:
    """Count `items` made (or comprehension steps taken) against the budget, before they are made."""
    spent = _budget.get()
    if spent is None:  # pragma: no cover - every evaluation enters through evaluate_node
        return
    spent.left -= items
    spent.here += items
    if spent.left >= 0:
        return
    if spent.here > MAX_EXPR_ITEMS:
        raise ExprError(f"the expression makes more than {MAX_EXPR_ITEMS:,} list items and comprehension steps "
                        f"in all", hint=_LONG)
    raise ExprError(f"the spec's expressions make more than {MAX_EXPR_ITEMS:,} list items and comprehension steps "
                    f"in all, this one the last", hint=_AGAIN)


def _exact_div(a: Any, b: Any) -> Any:
    if isinstance(a, dims.Poly) or isinstance(b, dims.Poly):
        try:
            return dims.exact_div(a, b, f"{dims.fmt(a)} / {dims.fmt(b)}")
        except ShapeError as exc:
            raise ExprError(exc.message, hint=exc.hint) from None
    if b == 0:
        raise ExprError("division by zero",
                        hint=Fallback('divide by a size that is not 0: check the variables the expression reads '
                                      '(archgraph explain shows them)'))
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        if a % b:
            raise ExprError(f"{plain(a)} / {plain(b)} is not exact ({int(a) / int(b):g})",
                            hint="choose values that divide exactly, or write // to round down")
        return quotient(a, b)
    return a / b


def _pow(a: Any, b: Any) -> Any:
    if isinstance(b, (int, float)) and abs(plain(b)) > MAX_POW:
        raise ExprError(f"exponent {plain(b)} is too large (at most {MAX_POW})",
                        hint=Fallback('use a smaller exponent, or write the value out'))
    if isinstance(a, (int, float)) and abs(plain(a)) > 2 ** 64:
        raise ExprError("base of ** is too large", hint=Fallback('use a smaller base, or write the value out'))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == 0 and b < 0:
        raise ExprError(f"0 ** {plain(b)} has no value (0 to a negative power)",
                        hint=Fallback('raise 0 to a power of at least 0, or change the variable that is 0'))
    return a ** b


def _floordiv(a: Any, b: Any) -> Any:
    if b == 0:
        raise ExprError("division by zero",
                        hint=Fallback('divide by a size that is not 0: check the variables the expression reads'))
    return a // b


def _mod(a: Any, b: Any) -> Any:
    if b == 0:
        raise ExprError("'%' by zero has no value",
                        hint=Fallback("take '%' by a size that is not 0: check the variables the expression reads"))
    return a % b


_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: _exact_div, ast.FloorDiv: _floordiv, ast.Mod: _mod, ast.Pow: _pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.In: lambda a, b: _member(a, b), ast.NotIn: lambda a, b: not _member(a, b),
}


def _member(item: Any, items: Any) -> bool:
    if not isinstance(items, (list, tuple)):
        raise ExprError(f"'in' looks in a list; received {items!r}",
                        hint=Fallback("write the right side of 'in' as a list: x in [1, 2, 4]"))
    return item in items


def _ceil_div(a: Any, b: Any) -> Any:
    if b == 0:
        raise ExprError("ceil_div by zero has no value",
                        hint=Fallback('divide by a size that is not 0: check the variables the expression reads'))
    return -((-a) // b)


def _chosen(fn):
    """min/max, exact over every kind of number: of symbolic sizes a size (`max(1, floor(S/2))`,
    one argument where bounds decide), of SymInts a SymInt whose formula is sympy's Max/Min; a
    float among them decides the names."""
    def pick(*args: Any) -> Any:
        if any(isinstance(a, dims.Poly) for a in args):
            if any(isinstance(a, float) for a in args):
                raise ExprError(f"{fn.__name__}() of a symbolic size takes whole numbers and sizes; received "
                                + ", ".join(dims.fmt(a) for a in args),
                                hint=Fallback('give the symbolic sizes values with --set (B=1 S=512), or pass whole numbers'))
            return (dims.maximum if fn is max else dims.minimum)(*(plain(a) for a in args))
        if all(isinstance(a, int) for a in args) and any(isinstance(a, SymInt) for a in args):
            formula = (_sympy().Max if fn is max else _sympy().Min)(*(expr_of(a) for a in args))
            return SymInt(fn(int(a) for a in args), formula)
        decided(*args)
        return fn(*args)
    pick.__name__ = fn.__name__
    return pick


def _sympy():
    import sympy
    return sympy


def _rounded(fn):
    """ceil/floor: whole numbers (and their formulas) stay as they are."""
    def rounded(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            raise ExprError(f"{fn.__name__}({x}) is not a whole number", hint="sizes and values are at most 10**30")
        return x if isinstance(x, (int, dims.Poly)) else fn(x)
    return rounded


def _list_fn(fn):
    """len/sum of a list (a config's layer_types, a stage's depths)."""
    def call(items: Any) -> Any:
        if not isinstance(items, (list, tuple)):
            raise ExprError(f"{fn.__name__}() takes a list; received {items!r}", hint=Fallback('pass a list: max([a, b, c])'))
        return fn(items)
    return call


def _real(fn):
    """log, exp, sqrt: real numbers (a whole-number variable's formula is decided here)."""
    def call(x: Any) -> Any:
        if isinstance(x, dims.Poly):
            raise ExprError(f"{fn.__name__}() of the symbolic size {dims.fmt(x)} is not a size",
                            hint=f"give {', '.join(sorted(dims.free_names(x)))} a value with --set")
        decided(x)
        try:
            return fn(float(x))
        except (ValueError, OverflowError):
            raise ExprError(f"{fn.__name__}({x}) is not defined",
                            hint=Fallback("pass a value inside the function's domain (log and sqrt take positive "
                                          "numbers)")) from None
    call.__name__ = fn.__name__
    return call


def _round(x: Any) -> Any:
    """round(x): the nearest whole number, halves to even (Python's round)."""
    if isinstance(x, float) and not math.isfinite(x):
        raise ExprError(f"round({x}) is not a whole number", hint="sizes and values are at most 10**30")
    return x if isinstance(x, (int, dims.Poly)) else round(x)


def _best_resolution(height: Any, width: Any, resolutions: Any) -> list:
    """best_resolution(h, w, [[h1, w1], ...]): of the listed [height, width] resolutions, the one an
    h x w image fills best when scaled to fit (the most of the image's pixels kept, then the fewest
    wasted; the first of equals): transformers' select_best_resolution, by which LLaVA-NeXT's
    processor picks the grid of tiles an image is cut into (`anyres`)."""
    if any(isinstance(a, bool) or not isinstance(a, int) or a <= 0 for a in (height, width)):
        raise ExprError(f"best_resolution() takes an image's height and width, positive whole numbers; "
                        f"received {height}, {width}",
                        hint=Fallback("give the image's height and width as positive whole numbers"))
    if not isinstance(resolutions, (list, tuple)) or not resolutions or any(
            not isinstance(r, (list, tuple)) or len(r) != 2 or
            any(isinstance(n, bool) or not isinstance(n, int) or n <= 0 for n in r) for r in resolutions):
        raise ExprError(f"best_resolution() takes a list of [height, width] resolutions, positive whole numbers; "
                        f"received {resolutions!r}",
                        hint=Fallback('give the resolutions as a list of [height, width] pairs of positive whole '
                                      'numbers: [[336, 672], [672, 336]]'))
    decided(height, width, *(n for r in resolutions for n in r))
    height, width = int(height), int(width)
    best, most, least = None, 0, math.inf
    for h, w in ((int(h), int(w)) for h, w in resolutions):
        scale = min(w / width, h / height)
        kept = min(int(width * scale) * int(height * scale), width * height)
        wasted = w * h - kept
        if kept > most or (kept == most and wasted < least):
            best, most, least = [h, w], kept, wasted
    return best


def _range(*args: Any) -> list:
    """range(stop), range(start, stop[, step]) as a list (a comprehension runs over it)."""
    if any(isinstance(a, bool) or not isinstance(a, int) for a in args):
        raise ExprError(f"range() takes whole numbers; received {', '.join(str(a) for a in args)}",
                        hint=Fallback('give range() whole numbers (a symbolic size needs a value: --set)'))
    decided(*args)
    if len(args) == 3 and args[2] == 0:
        raise ExprError("range() with step 0 has no end", hint=Fallback('give range() a step other than 0'))
    steps = range(*(int(a) for a in args))
    if len(steps) > MAX_ITEMS:
        raise ExprError(f"range() of {len(steps)} items is too long (at most {MAX_ITEMS})",
                        hint=Fallback('use a shorter range, or describe the layers with a repeat: instead of a list'))
    _spend(len(steps))
    return list(steps)


FUNCTIONS = {"min": _chosen(min), "max": _chosen(max), "abs": abs, "ceil_div": _ceil_div,
             "ceil": _rounded(math.ceil), "floor": _rounded(math.floor), "round": _round, "len": _list_fn(len),
             "sum": _list_fn(sum), "range": _range, "log": _real(math.log), "exp": _real(math.exp),
             "sqrt": _real(math.sqrt), "best_resolution": _best_resolution}
LIST_FUNCTIONS = {"len", "sum"}
LIST_ARGUMENTS = LIST_FUNCTIONS | {"best_resolution"}  # the functions that take a list
CONSTANTS = {"pi": math.pi, "inf": math.inf}  # names no variable may take (a spec's variables are checked)
ARITY = {"min": (2, None), "max": (2, None), "abs": (1, 1), "ceil_div": (2, 2), "ceil": (1, 1),
         "floor": (1, 1), "round": (1, 1), "len": (1, 1), "sum": (1, 1), "range": (1, 3), "log": (1, 1),
         "exp": (1, 1), "sqrt": (1, 1), "best_resolution": (3, 3)}


def _takes(name: str) -> str:
    """`ceil_div() takes 2 numbers`, `min() takes 2 or more numbers`, `len() takes a list`."""
    least, most = ARITY[name]
    if name in LIST_FUNCTIONS:
        return f"{name}() takes a list"
    if name == "best_resolution":
        return "best_resolution() takes a height, a width and a list of [height, width] resolutions"
    count = f"{least} or more" if most is None else str(least)
    return f"{name}() takes {count} number{'s' if most != 1 else ''}"


def parse(text: str) -> ast.Expression:
    """Parse and whitelist-check an expression; raise ExprError on anything else."""
    return _parsed(text)[0]


@lru_cache(maxsize=4096)
def _parsed(text: str) -> tuple[ast.Expression, tuple[ast.AST, ...]]:
    """The checked tree of `text` and all its nodes (one walk serves the checks and `names`)."""
    if len(text) > MAX_LEN:
        raise ExprError(f"expression is longer than {MAX_LEN} characters",
                        hint=Fallback('split the expression into variables of the spec (variables: {name: expression})'))
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse expression '{text}': {exc.msg}",
                        hint="use numbers, variable names, + - * / // % ** and parentheses") from None
    nodes = _nodes(tree)
    if not text.isascii():
        for word in _words(text):
            folded_name(word)
    for node in nodes:
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"'{ast.unparse(node) if hasattr(ast, 'unparse') else text}' is not allowed "
                            f"in an expression ({type(node).__name__})",
                            hint="expressions take numbers, variable names, arithmetic, comparisons, "
                                 "'x if c else y' and the functions " + ", ".join(sorted(FUNCTIONS)))
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                                and node.func.id in FUNCTIONS and not node.keywords):
            raise ExprError(f"only the functions {', '.join(sorted(FUNCTIONS))} may be called",
                            hint=Fallback('write the value with the functions listed, or compute it in a variable of the spec'))
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool, str, type(None))):
            raise ExprError(f"constant {node.value!r} is not a number or a word",
                            hint=Fallback('write numbers, true/false, words or lists only'))
        if isinstance(node, ast.comprehension) and (node.is_async or not isinstance(node.target, ast.Name)):
            raise ExprError("each 'for' of a list comprehension takes one name: [w * 2 for w in widths]",
                            hint=Fallback('write the comprehension with one plain name: [w * 2 for w in widths]'))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in FUNCTIONS:
            raise ExprError(f"'{node.id}' is a function; name the comprehension's variable otherwise",
                            hint=Fallback("name the comprehension's variable with a word that is not a function (x, w, i)"))
    return tree, nodes


def folded_name(name: str) -> str:
    """`name` when Python reads it as written; a name in compatibility characters (a fullwidth 'Ｈ',
    which Python folds to 'H' in an expression but YAML keeps in a key) is refused, in expressions
    and in the keys that name variables alike, so that one name never means two things."""
    folded = unicodedata.normalize("NFKC", name)
    if folded != name:
        raise ExprError(f"the name '{name}' holds compatibility characters that Python reads as '{folded}'",
                        hint=f"write '{folded}'")
    return name


def _words(text: str) -> list[str]:
    """The names in an expression's text as written (outside its quoted words)."""
    import io
    import tokenize
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(text.strip()).readline)
                if t.type == tokenize.NAME]
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - ast.parse accepted the text
        return []


def _nodes(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of `tree`, level by level as ast.walk gives them, refusing one nested deeper
    than MAX_DEPTH."""
    out, depths = [tree], [0]
    for node, depth in zip(out, depths):  # both grow while the loop reads them
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nests more than {MAX_DEPTH} levels deep",
                            hint=Fallback('split the expression into variables of the spec (variables: {name: expression})'))
        for child in ast.iter_child_nodes(node):
            out.append(child)
            depths.append(depth + 1)
    return tuple(out)


_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
            ast.Name, ast.Load, ast.Constant, ast.Call, ast.And, ast.Or, ast.Subscript,
            ast.List, ast.ListComp, ast.comprehension, ast.Store,
            *_BINOPS, *_UNARY, *_COMPARE)


def names(text: str) -> set[str]:
    """Free variable names of an expression (function names and a comprehension's own names excluded)."""
    return set(_names(text))


@lru_cache(maxsize=4096)
def _names(text: str) -> frozenset[str]:
    """names(), once per expression text (a template asks about the same ones for every layer)."""
    nodes = _parsed(text)[1]
    calls = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    bound = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return frozenset({n.id for n in nodes if isinstance(n, ast.Name) and id(n) not in calls} - bound - set(CONSTANTS))


def evaluate(text: str, env: Mapping[str, Any]) -> Any:
    """Evaluate `text` with the variables in `env`."""
    return evaluate_node(parse(text).body, env, text)


def check(text: str, env: Mapping[str, Any]) -> Any:
    """Evaluate a constraint (`heads > 0`): its comparisons of whole numbers are conditions a
    symbolic build's formula holds under (numbers.SymInt records them), not choices fixing the
    names' values, so a sweep still counts the sizes it names from the formula."""
    token = _checking.set(True)
    try:
        return evaluate(text, env)
    finally:
        _checking.reset(token)


def _decides(left: Any, right: Any) -> bool:
    """Whether comparing `left` with `right` fixes the names behind them: whether a value is null is
    not its value (`head_dim == None` leaves H free), and a constraint's comparison of whole numbers
    is a condition (see check)."""
    if left is None or right is None:
        return False
    return not (_checking.get() and all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)))


def evaluate_node(node: ast.AST, env: Mapping[str, Any], text: str | None = None) -> Any:
    """Evaluate a parsed expression (`parse(text).body`, or one built from parsed parts and values:
    the length limit is parse's, for text a user wrote, not for values folded into it)."""
    spent = _budget.get()
    token = None if spent is not None else _budget.set(spent := _Budget())  # alone: a budget of its own
    outer, spent.here = spent.here, 0
    try:
        return _eval(node, env)
    except ExprError:
        raise
    except (TypeError, ValueError, ArithmeticError, RecursionError) as exc:
        reason = str(exc) or type(exc).__name__
        raise ExprError(f"cannot evaluate '{ast.unparse(node) if text is None else text}': {reason}",
                        hint="use whole numbers and names of sizes; words can only be compared") from None
    finally:
        spent.here = outer
        if token is not None:
            _budget.reset(token)


_HUGE = "no size, count or setting of a model comes near 10**30: check the value and the variables it uses"
_LONG = "a list in an expression holds one value per layer or stage: check the count it is repeated by"
_AGAIN = ("an expression a repeated block call evaluates at every repetition makes its lists again each time: "
          "make the list once, under 'variables:'")


def check_value(value: Any) -> Any:
    """Refuse whole numbers no model size comes near (|x| > 10**30: sizes, counts and settings are
    whole numbers), complex numbers and NaN.  A real number may be any float64, the infinities
    included (float32's lowest, -3.4e38, fills every eager attention mask); it is bounded again
    where it becomes a whole number (ops' coerce, --set)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(plain(value)) > MAX_MAGNITUDE:
        raise ExprError(f"a value of {len(str(abs(value)))} digits is too large (at most 10**30)", hint=_HUGE)
    if isinstance(value, complex):
        raise ExprError(f"the value {value} is not a real number",
                        hint=Fallback('use a real number (an infinite value has no size)'))
    if isinstance(value, float) and math.isnan(value):
        raise ExprError(f"the value {value} is not a number", hint=Fallback('use a number (NaN has no value)'))
    return value



def _compare(op: type, left: Any, right: Any) -> bool:
    """A comparison; symbolic sizes are equal or not only when that is decidable."""
    if isinstance(left, dims.Poly) or isinstance(right, dims.Poly):
        if op in (ast.In, ast.NotIn):
            raise ExprError(f"cannot decide whether the symbolic size {dims.fmt(left)} is in {right!r}",
                            hint="give the symbolic sizes values with --set")
        if any(isinstance(v, (float, str, bool)) for v in (left, right)):
            raise ExprError(f"cannot compare the symbolic size {dims.fmt(left)} with {right!r}"
                            if isinstance(left, dims.Poly) else
                            f"cannot compare {left!r} with the symbolic size {dims.fmt(right)}",
                            hint="symbolic sizes compare with whole numbers and other sizes")
        try:
            if op in (ast.Eq, ast.NotEq):
                same = dims.equal(left, right)
                return same if op is ast.Eq else not same
            return _COMPARE[op](plain(left), plain(right))  # decided by the sizes' bounds, or refused
        except ShapeError as exc:
            raise ExprError(exc.message, hint=exc.hint) from None
    if op not in (ast.Eq, ast.NotEq, ast.In, ast.NotIn) and (isinstance(left, str) != isinstance(right, str)):
        raise ExprError(f"cannot order a word and a number ({left!r} and {right!r})",
                        hint="words can be compared with '==' and '!=' only")
    return _COMPARE[op](left, right)


def _item(items: Any, index: Any) -> Any:
    """items[index]: an entry of a list (negative from the end), as in Python."""
    if not isinstance(items, (list, tuple)):
        raise ExprError(f"only lists can be indexed; received {items!r}", hint=Fallback('index a list: [a, b, c][i]'))
    if isinstance(index, bool) or not isinstance(index, int):
        raise ExprError(f"a list index is a whole number; received {index!r}",
                        hint=Fallback('index with a whole number (a symbolic size needs a value: --set)'))
    decided(index)
    if not -len(items) <= index < len(items):
        raise ExprError(f"index {int(index)} is out of range for a list of {len(items)}",
                        hint=Fallback("use an index from 0 to the list's length - 1"))
    return items[index]


def _comprehension(node: ast.ListComp, env: Mapping[str, Any]) -> list:
    """[elt for a in A if c for b in B ...]: Python's order, each `for` binding one name."""
    out: list = []
    steps = 0

    def run(k: int, scope: Mapping[str, Any]) -> None:
        nonlocal steps
        if k == len(node.generators):
            out.append(_eval(node.elt, scope))
            return
        gen = node.generators[k]
        items = _eval(gen.iter, scope)
        if not isinstance(items, (list, tuple)):
            raise ExprError(f"a comprehension's 'for' runs over a list; received {items!r}",
                            hint=Fallback("run the 'for' over a list: [w * 2 for w in [1, 2, 4]]"))
        for item in items:
            steps += 1
            if steps > MAX_ITEMS:
                raise ExprError(f"the list comprehension takes more than {MAX_ITEMS} steps",
                                hint=Fallback('use a shorter list, or a repeat: instead of a list'))
            _spend(1)
            inner = collections.ChainMap({gen.target.id: item}, scope)
            if all(_truth(_eval(c, inner)) for c in gen.ifs):
                run(k + 1, inner)

    run(0, env)
    return out


def _check_list_size(op: ast.operator, left: Any, right: Any) -> None:
    """`[0] * n` and `a + b` of lists, refused before Python builds a list of more than MAX_ITEMS
    (and counted against the evaluation's MAX_EXPR_ITEMS)."""
    made = 0
    if isinstance(op, ast.Mult):
        items, times = (left, right) if isinstance(left, list) else (right, left)
        if isinstance(times, int) and not isinstance(times, bool):
            made = len(items) * max(int(times), 0)
    elif isinstance(op, ast.Add) and isinstance(left, list) and isinstance(right, list):
        made = len(left) + len(right)
    if made > MAX_ITEMS:
        raise ExprError(f"a list of {made:,} items is too long (at most {MAX_ITEMS:,})", hint=_LONG)
    _spend(made)


def _truth(value: Any) -> bool:
    decided(value)
    return bool(value)


def _eval(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.List):
        if len(node.elts) > MAX_ITEMS:
            raise ExprError(f"a list of {len(node.elts)} items is too long (at most {MAX_ITEMS})",
                            hint=Fallback('use a shorter list, or a repeat: instead of a list'))
        _spend(len(node.elts))
        return [_eval(e, env) for e in node.elts]
    if isinstance(node, ast.ListComp):
        return _comprehension(node, env)
    if isinstance(node, ast.Constant):
        return check_value(node.value)
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in ("true", "false", "True", "False"):
            return node.id in ("true", "True")
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        hint = did_you_mean(node.id, env)
        raise ExprError(f"unknown variable '{node.id}'",
                        hint=hint or "define it under 'variables:' or pass --set "
                                     f"{node.id}=VALUE")
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(left, str) or isinstance(right, str):
            raise ExprError("words can be compared ('==', '!=') but not used in arithmetic",
                            hint=Fallback('compare words with == or !=; use numbers in arithmetic'))
        if isinstance(left, list) or isinstance(right, list):
            _check_list_size(node.op, left, right)
        try:
            return check_value(_BINOPS[type(node.op)](left, right))
        except ShapeError as exc:  # a product of symbolic sizes too large to expand (dims.MAX_POLY_TERMS)
            if isinstance(exc, InconclusiveDimError):
                raise
            raise ExprError(exc.message, hint=exc.hint) from None
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, env)
        if isinstance(operand, str) and not isinstance(node.op, ast.Not):
            raise ExprError("words can be compared ('==', '!=') but not used in arithmetic",
                            hint=Fallback('compare words with == or !=; use numbers in arithmetic'))
        if isinstance(node.op, ast.Not):
            decided(operand)
        return check_value(_UNARY[type(node.op)](operand))
    if isinstance(node, ast.BoolOp):
        want = isinstance(node.op, ast.And)  # and: stop at the first false; or: at the first true
        for v in node.values:
            value = _eval(v, env)
            decided(value)
            if bool(value) != want:
                return not want
        return want
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, env)
            if _decides(left, right):
                decided(left, right)
            if not _compare(type(op), left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        test = _eval(node.test, env)
        decided(test)
        return _eval(node.body if test else node.orelse, env)
    if isinstance(node, ast.Call):
        args = [_eval(a, env) for a in node.args]
        least, most = ARITY[node.func.id]
        if len(args) < least or (most is not None and len(args) > most):
            raise ExprError(f"{_takes(node.func.id)}; received {len(args)}",
                            hint=Fallback('call it with the number of arguments it takes (archgraph explain lists the '
                                          'functions)'))
        if any(isinstance(a, str) for a in args) or \
                (node.func.id not in LIST_ARGUMENTS and any(isinstance(a, (list, tuple)) for a in args)):
            shown = ", ".join(repr(a) if isinstance(a, str) else dims.fmt(a) if isinstance(a, dims.Poly)
                              else str(a) for a in args)
            raise ExprError(f"{_takes(node.func.id)}; received {shown}",
                            hint=Fallback('call it with numbers or sizes (a word or a list is not a number)'))
        return check_value(FUNCTIONS[node.func.id](*args))
    if isinstance(node, ast.Subscript):
        return _item(_eval(node.value, env), _eval(node.slice, env))
    raise ExprError(f"unsupported expression element {type(node).__name__}",
                    hint=Fallback('write the value with numbers, names, + - * / // % **, comparisons, if/else, lists '
                                  'and the functions listed'))  # pragma: no cover
