"""Closed-form parameter counts: the spec re-evaluated with its integer variables as sympy symbols.

Every variable whose value is a whole number (`H: 768`) becomes a symbol; derived
variables (`I: 4 * H`), block arguments, hyperparameters and `repeat:` counts are
evaluated over those symbols, and each op's tensors are counted from an op whose
integer hyperparameters are symbolic.  Each symbolic count is checked against the
concrete one: where the two disagree, or an expression cannot be evaluated
symbolically, the concrete number is used and the names involved are reported as
`frozen`.  So the formula always evaluates to the exact count at the spec's
values; it holds for other values of the symbols not in `frozen` (and as long as
the `when:` conditions, which are evaluated concretely, keep their truth value).

>>> from archgraph.passes.formula import param_formula
>>> f = param_formula("gpt2")
>>> f.evaluate() == 124439808
True
"""
from __future__ import annotations

import dataclasses
import graphlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import expr
from ..dims import symbol
from ..errors import ArchgraphError, Loc
from ..load import read_spec
from ..ops import REGISTRY
from ..spec import build
from ..spec.values import evaluate, hints, typed


def _sp():
    import sympy
    return sympy


@dataclass
class TensorTerm:
    name: str
    shape: tuple          # symbolic dims
    count: Any            # sympy expression (or int)
    value: int            # the concrete count
    tied_to: str | None = None  # tied tensors are listed but not counted


@dataclass
class Term:
    """One node of the spec: an op with its tensors, or a block call with its body's terms."""

    path: str
    kind: str                    # op name, or the block's name
    category: str | None
    tensors: list[TensorTerm] = field(default_factory=list)
    children: list["Term"] = field(default_factory=list)
    repeat: Any = 1              # symbolic repetitions of a block call
    repeat_value: int = 1
    shared: bool = False
    is_block: bool = False

    _memo: dict = field(default_factory=dict, repr=False)  # bodies are shared between calls: sum once

    def body(self) -> Any:
        """Parameters of one repetition (an op: its own untied tensors)."""
        if "body" not in self._memo:
            parts = [t.count for t in self.tensors if t.tied_to is None] if not self.is_block \
                else [c.total() for c in self.children]
            self._memo["body"] = sum(parts, _sp().Integer(0))
        return self._memo["body"]

    def body_value(self) -> int:
        if "value" not in self._memo:
            self._memo["value"] = sum(t.value for t in self.tensors if t.tied_to is None) if not self.is_block \
                else sum(c.total_value() for c in self.children)
        return self._memo["value"]

    def times(self) -> Any:
        if not self.is_block:
            return 1
        if self.repeat_value == 0:
            return 0
        return 1 if self.shared else self.repeat

    def total(self) -> Any:
        return self.body() * self.times()

    def total_value(self) -> int:
        if not self.is_block:
            return self.body_value()
        return self.body_value() * (min(self.repeat_value, 1) if self.shared else self.repeat_value)


@dataclass
class FormulaReport:
    model: str
    symbols: dict[str, int]           # the spec's integer variables (symbol name -> value used)
    terms: list[Term]
    total: Any                        # sympy expression, simplified
    by_category: dict[str, Any]
    frozen: set[str]                  # names whose value is baked in as a number somewhere
    notes: list[str]
    repeat_symbols: set[str]

    @property
    def subs(self) -> dict:
        return {symbol(k): v for k, v in self.symbols.items()}

    def evaluate(self, **values: int) -> int:
        """The count at the spec's values, with `values` replacing some of them."""
        sp = _sp()
        env = {symbol(k): sp.Integer(v) for k, v in {**self.symbols, **values}.items()}
        return int(sp.sympify(self.total).xreplace(env))

    def free_names(self) -> list[str]:
        return sorted(str(s) for s in _sp().sympify(self.total).free_symbols)

    def lambdify(self, names: list[str], of: Any = None):
        """A fast numeric function of `names` computing the total (or `of`, e.g. a category's
        formula); other symbols take their spec values."""
        sp = _sp()
        fixed = {symbol(k): sp.Integer(v) for k, v in self.symbols.items() if k not in names}
        expr_ = sp.sympify(self.total if of is None else of).xreplace(fixed)
        return sp.lambdify([symbol(n) for n in names], expr_, modules="math")


# -- loading the raw spec --------------------------------------------------------------------
def _raw_spec(source: str):
    return build._merge_extends(*read_spec(source))


@dataclass
class _Ctx:
    blocks: Mapping[str, Any]
    globals_c: dict
    globals_s: dict
    subs: dict
    frozen: set = field(default_factory=set)
    notes: list = field(default_factory=list)
    repeat_symbols: set = field(default_factory=set)
    cache: dict = field(default_factory=dict)


def param_formula(source: str, settings: Mapping[str, Any] | None = None) -> FormulaReport:
    """The parameter count of the spec `source` as a closed-form sympy expression."""
    from ..hf import import_file, is_config
    name = None
    if is_config(source):  # a Hugging Face config.json: its family template with the config's values
        imported = import_file(source)
        source, settings, name = str(imported.template), {**imported.variables, **dict(settings or {})}, imported.name
    build_checked = _check_builds(source, settings)
    spec, var_locs = _raw_spec(source)
    settings = dict(settings or {})
    raw_vars = spec.get("variables") or {}
    overrides = {k: v for k, v in settings.items() if k in raw_vars}
    concrete = build.evaluate_variables(raw_vars, var_locs, {}, overrides)
    base = {k: v for k, v in concrete.items() if _is_int(v) and (k in overrides or _is_int(raw_vars[k]))}
    ctx = _Ctx(spec.get("blocks") or {}, concrete, {}, {symbol(k): _sp().Integer(v) for k, v in base.items()})
    ctx.globals_s = _symbolic_variables(ctx, raw_vars, concrete, {k: symbol(k) for k in base}, var_locs)
    terms = _terms(ctx, spec.get("nodes"), "", concrete, ctx.globals_s, None)
    total = sum((t.total() for t in terms), _sp().Integer(0))
    cats: Counter = Counter()
    _categories(terms, 1, cats)
    report = FormulaReport(name or str(spec.get("name") or "model"), base, terms, tidy(total, ctx.repeat_symbols),
                           {k: tidy(v, ctx.repeat_symbols) for k, v in cats.items()},
                           ctx.frozen, ctx.notes, ctx.repeat_symbols)
    if report.evaluate() != build_checked:  # pragma: no cover - guarded by the per-tensor checks
        raise ArchgraphError(f"internal: the formula gives {report.evaluate():,}, the count is {build_checked:,}")
    return report


def _check_builds(source: str, settings) -> int:
    """Build the model normally first: every validation and error message comes from the builder."""
    from ..load import load
    from .params import graph_totals
    return graph_totals(load(source, settings).graph).total


def tidy(e: Any, repeat_symbols: set[str]) -> Any:
    """Expanded, then collected by the repetition counts (L·(12·H² + 13·H) + ...)."""
    sp = _sp()
    e = sp.expand(sp.sympify(e))
    syms = sorted((s for s in e.free_symbols if str(s) in repeat_symbols), key=str)
    return sp.collect(e, syms) if syms else e


def _categories(terms: list[Term], times: Any, out: Counter) -> None:
    for t in terms:
        for cat, n in _term_categories(t).items():
            out[cat] += n * times


def _term_categories(t: Term) -> Counter:
    if "cats" not in t._memo:
        out: Counter = Counter()
        if t.is_block:
            _categories(t.children, t.times(), out)
        elif t.tensors:
            out[t.category or "other"] += t.body()
        t._memo["cats"] = out
    return t._memo["cats"]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _symbolic_variables(ctx: _Ctx, raw: Mapping, concrete: Mapping, base: Mapping, locs) -> dict:
    """Derived variables over the symbols, in dependency order; a failure keeps the number."""
    env = {**{k: v for k, v in concrete.items() if k not in raw}, **base}
    pending = {k: v for k, v in raw.items() if k not in base}
    deps = {k: (expr.names(v) if isinstance(v, str) else set()) & set(pending) for k, v in pending.items()}
    for name in graphlib.TopologicalSorter(deps).static_order():
        if name not in pending:
            continue
        env[name] = _sym_value(ctx, pending[name], env, concrete[name], f"variable '{name}'", None)
    return env


def _sym_value(ctx: _Ctx, raw: Any, env_s: Mapping, conc: Any, what: str, typ: Any) -> Any:
    """`raw` evaluated over symbols, or `conc` when that fails or disagrees with it."""
    if not _numeric(conc):
        return conc
    try:
        value = typed(raw, typ, env_s, Loc(), what) if typ is not None else evaluate(raw, env_s, Loc(), what)
    except (ArchgraphError, TypeError, ValueError):
        value = None
    if value is not None and _agrees(ctx, value, conc):
        return value
    ctx.frozen |= _names(raw)
    ctx.notes.append(f"{what}: {raw!r} kept as {conc!r}")
    return conc


def _numeric(v: Any) -> bool:
    if isinstance(v, (list, tuple)):
        return bool(v) and all(_numeric(x) for x in v)
    return _is_int(v)


def _agrees(ctx: _Ctx, value: Any, conc: Any) -> bool:
    if isinstance(conc, (list, tuple)):
        return isinstance(value, (list, tuple)) and len(value) == len(conc) and \
            all(_agrees(ctx, a, b) for a, b in zip(value, conc))
    sp = _sp()
    if isinstance(value, bool) or isinstance(value, str):
        return False
    try:
        got = sp.sympify(value).xreplace(ctx.subs)
        return bool(got.is_Integer) and int(got) == conc
    except (TypeError, ValueError, AttributeError, sp.SympifyError):
        return False


def _names(raw: Any) -> set[str]:
    if isinstance(raw, str):
        try:
            return expr.names(raw)
        except ArchgraphError:
            return set()
    if isinstance(raw, list):
        return set().union(*(_names(r) for r in raw)) if raw else set()
    return set()


# -- walking the spec's nodes ------------------------------------------------------------------
def _terms(ctx: _Ctx, raw_nodes: list, prefix: str, env_c: dict, env_s: dict, category: str | None) -> list[Term]:
    out = []
    for raw in raw_nodes:
        if "when" in raw:
            ctx.frozen |= _names(raw["when"])
            if not evaluate(raw["when"], env_c, raw.key_loc("when"), "when"):
                continue
        name = raw["name"]
        path = f"{prefix}.{name}" if prefix else name
        own = raw.get("category")
        if "op" in raw:
            out.append(_op_term(ctx, raw, path, env_c, env_s, own or category, own is not None))
        else:
            out.append(_block_term(ctx, raw, path, env_c, env_s, own or category))
    return out


def _op_term(ctx: _Ctx, raw, path: str, env_c, env_s, category, explicit: bool) -> Term:
    cls = REGISTRY[raw["op"]]
    fields, types = cls.hyperparameters(), hints(cls)
    conc = {k: typed(v, types[k], env_c, raw.key_loc(k), k) for k, v in raw.items() if k in fields}
    op_c = cls.build(conc)
    sym = {k: _sym_value(ctx, v, env_s, conc[k], f"{path}.{k}", types[k]) for k, v in raw.items() if k in fields}
    op_s = object.__new__(cls)
    for f in dataclasses.fields(cls):
        object.__setattr__(op_s, f.name, getattr(op_c, f.name))
    for k, v in sym.items():
        if _numeric(conc[k]):
            object.__setattr__(op_s, k, tuple(v) if isinstance(v, list) else v)
    if not explicit and (category is None or op_c.category not in build.GENERIC_CATEGORIES):
        category = op_c.category
    ties = build._ties(raw)
    spec_floors = set()
    for v in sym.values():
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if hasattr(x, "atoms"):
                spec_floors |= x.atoms(_sp().floor)
    tensors = []
    concrete_tensors = {t.name: t for t in op_c.params()}
    try:
        symbolic_tensors = list(op_s.params())
    except Exception:  # an op rule that needs numbers: count this node as a number
        symbolic_tensors = []
    by_name = {t.name: t for t in symbolic_tensors}
    for name, t_c in concrete_tensors.items():
        t_s = by_name.get(name)
        shape, count = _tensor_expr(ctx, t_s, t_c, spec_floors, f"{path}.{name}", raw)
        tensors.append(TensorTerm(name, shape, count, t_c.count, ties.get(name)))
    return Term(path, raw["op"], category, tensors)


def _tensor_expr(ctx: _Ctx, t_s, t_c, spec_floors: set, what: str, raw):
    """(symbolic shape, symbolic count) of a tensor, or its numbers when they disagree.

    A floor that the op itself introduced (`hidden // heads`) is exact: the op checked
    the divisibility, so it is replaced by the quotient."""
    sp = _sp()
    if t_s is not None:
        def clean(d):
            d = sp.sympify(d)
            return d.replace(lambda e: isinstance(e, sp.floor) and e not in spec_floors, lambda e: e.args[0])
        dims = t_s.shape if isinstance(t_s.shape, (tuple, list)) else (t_s.shape,)  # `(s,) if int` rules
        shape = tuple(clean(d) for d in dims)
        count = sp.Mul(*shape) if shape else sp.Integer(1)
        if _agrees(ctx, count, t_c.count) and all(_agrees(ctx, d, c) for d, c in zip(shape, t_c.shape)):
            return shape, count
    ctx.frozen |= set().union(*(_names(v) for k, v in raw.items() if k not in ("name", "op", "in")))
    ctx.notes.append(f"{what}: counted as the number {t_c.count:,}")
    return tuple(sp.Integer(d) for d in t_c.shape), sp.Integer(t_c.count)


def _block_term(ctx: _Ctx, raw, path: str, env_c, env_s, category) -> Term:
    block = raw["block"]
    definition = ctx.blocks[block]
    params = build._block_params(definition, block)
    args_c = {k: build._arg(v, env_c, raw.key_loc(k), k) for k, v in raw.items() if k in params}
    args_s = {}
    for k, v in raw.items():
        if k in params:
            args_s[k] = (_sym_value(ctx, v, env_s, args_c[k], f"{path}: argument '{k}'", None)
                         if _numeric(args_c[k]) else args_c[k])
    category = build._category(definition) or category if category is None else category
    repeat_c = build._positive_int(raw, "repeat", env_c, 1, least=0)
    repeat_s = _sym_value(ctx, raw["repeat"], env_s, repeat_c, f"{path}.repeat", None) if "repeat" in raw else 1
    if "repeat" in raw:
        ctx.repeat_symbols |= {str(s) for s in getattr(_sp().sympify(repeat_s), "free_symbols", ())}
    key = (block, tuple(sorted((k, repr(v)) for k, v in args_s.items())), category)
    if key not in ctx.cache:
        env_c2, env_s2 = dict(ctx.globals_c), dict(ctx.globals_s)
        for p, default in params.items():
            if p in args_c:
                env_c2[p], env_s2[p] = args_c[p], args_s[p]
            else:
                env_c2[p] = build._arg(default, ctx.globals_c, definition.key_loc("args"), p)
                env_s2[p] = (_sym_value(ctx, default, ctx.globals_s, env_c2[p], f"{block}: default '{p}'", None)
                             if _numeric(env_c2[p]) else env_c2[p])
        raw_vars = definition.get("variables") or {}
        locs = {k: Loc() for k in raw_vars}
        env_c2 = build.evaluate_variables(raw_vars, locs, env_c2, {})
        env_s2 = _symbolic_variables(ctx, raw_vars, env_c2, {k: v for k, v in env_s2.items() if k not in raw_vars},
                                     locs)
        ctx.cache[key] = _terms(ctx, definition.get("nodes"), "", env_c2, env_s2, category)
    children = ctx.cache[key]
    return Term(path, block, category, [], children, repeat_s, repeat_c, bool(raw.get("shared", False)), True)
