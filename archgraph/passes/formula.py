"""Closed-form parameter counts: the parameter pass over a model built symbolically.

`archgraph.load(source, symbolic=True)` builds the model with every whole-number
variable (`H: 768`) as a SymInt named after itself, so each hyperparameter, tensor
shape and repetition count carries its formula; this pass reads the formulas off
the ordinary parameter totals.  There is no second reader of the spec: whatever
the language can say, the formula follows.  Names a choice depended on (`when:`,
comparisons, `min`) are `frozen`: the formula holds for other values of the other
names, and at the spec's values of the frozen ones.

>>> from archgraph import load
>>> f = param_formula(load("gpt2", symbolic=True))
>>> str(f.total), f.evaluate()
('H*P + H*V + 2*H + L*(12*H**2 + 13*H)', 124439808)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ArchgraphError
from ..graph import Graph, Model, OpNode, join
from ..numbers import SymInt, expr_of
from .params import count_params


def _sp():
    import sympy
    return sympy


def sym(name: str) -> Any:
    """The formula symbol of the variable `name`."""
    return _sp().Symbol(name, integer=True, positive=True)


@dataclass
class TensorTerm:
    name: str
    shape: tuple          # formulas of the dims
    count: Any            # formula of the element count
    value: int            # the count at the spec's values
    tied_to: str | None = None  # tied tensors are listed but not counted


@dataclass
class Term:
    """One node of the model: an op with its tensors, or a block call with its body's terms."""

    path: str
    kind: str                    # op name, or the block's name
    category: str | None
    tensors: list[TensorTerm] = field(default_factory=list)
    children: list["Term"] = field(default_factory=list)
    repeat: Any = 1              # formula of the repetitions of a block call
    repeat_value: int = 1
    shared: bool = False
    is_block: bool = False
    label: str = ""              # a block call as tables name it: its run of a layer schedule (`layers.2..5`)
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
    symbols: dict[str, int]           # the spec's whole-number variables (name -> value used)
    terms: list[Term]
    total: Any                        # sympy expression, tidied
    by_category: dict[str, Any]
    frozen: set[str]                  # names whose value a choice depended on
    notes: list[str]
    repeat_symbols: set[str]
    conditions: list = field(default_factory=list)  # relations the build's checks relied on
    idle: Any = 0                     # parameters a token does not touch (the experts its router does not pick)

    def validity(self) -> Any:
        """Where the build would take the same course: all conditions (a sympy boolean)."""
        return _sp().And(*self.conditions)

    @property
    def subs(self) -> dict:
        return {sym(k): v for k, v in self.symbols.items()}

    def evaluate(self, **values: int) -> int:
        """The count at the spec's values, with `values` replacing some of them."""
        sp = _sp()
        env = {sym(k): sp.Integer(v) for k, v in {**self.symbols, **values}.items()}
        return int(sp.sympify(self.total).xreplace(env))

    def free_names(self) -> list[str]:
        return sorted(str(s) for s in _sp().sympify(self.total).free_symbols)

    def lambdify(self, names: list[str], of: Any = None):
        """A fast numeric function of `names` computing the total (or `of`, e.g. a category's
        formula); other symbols take their spec values."""
        sp = _sp()
        fixed = {sym(k): sp.Integer(v) for k, v in self.symbols.items() if k not in names}
        expr_ = sp.sympify(self.total if of is None else of).xreplace(fixed)
        return sp.lambdify([sym(n) for n in names], expr_, modules="math")


def param_formula(model: Model) -> FormulaReport:
    """The parameter count of a symbolically built model as a closed-form sympy expression."""
    report = count_params(model)
    symbols = {k: int(v) for k, v in model.variables.items()
               if isinstance(v, SymInt) and str(v.expr) == k}
    repeats: set[str] = set()
    terms = _terms(model, model.graph, "", {}, repeats)
    total = expr_of(report.totals.total)
    formula = FormulaReport(model.name, symbols, terms, tidy(total, repeats),
                            {k: tidy(expr_of(v), repeats) for k, v in report.totals.by_category.items()},
                            set(model.decided), [], repeats, list(model.conditions),
                            tidy(expr_of(report.totals.idle), repeats))
    if formula.evaluate() != int(report.totals.total):  # pragma: no cover - the same numbers, carried
        raise ArchgraphError(f"internal: the formula gives {formula.evaluate():,}, "
                             f"the count is {int(report.totals.total):,}",
                             hint='this is a bug in archgraph: please report it with the spec that gave it')
    return formula


def tidy(e: Any, repeat_symbols: set[str]) -> Any:
    """Expanded, then collected by the repetition counts (L·(12·H² + 13·H) + ...)."""
    sp = _sp()
    e = sp.expand(sp.sympify(e))
    syms = sorted((s for s in e.free_symbols if str(s) in repeat_symbols), key=str)
    return sp.collect(e, syms) if syms else e


def _terms(model: Model, graph: Graph, prefix: str, cache: dict, repeats: set[str]) -> list[Term]:
    out = []
    for name, node in graph.nodes.items():
        path = join(prefix, name)
        if isinstance(node, OpNode):
            tensors = [TensorTerm(t.name, tuple(expr_of(d) for d in t.shape), expr_of(t.count), int(t.count),
                                  node.ties.get(t.name)) for t in node.op.params()]
            out.append(Term(path, node.op.op_name, node.category, tensors))
            continue
        repeats |= {str(s) for s in expr_of(node.repeat).free_symbols}
        if id(node.body) not in cache:  # a body shared by several calls is one list of terms
            cache[id(node.body)] = _terms(model, node.body, "", cache, repeats)
        out.append(Term(join(prefix, node.segment), node.block, None, [], cache[id(node.body)],
                        expr_of(node.repeat), int(node.repeat), node.shared, True, join(prefix, node.label)))
    return out
