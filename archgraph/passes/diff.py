"""What changed between two designs: nodes matched by path and role, stacks compared as stacks.

Each model is flattened to one entry per place: an op node's path with the layer indices left
out (`model.layers.self_attn`, `transformer.h.attn.c_attn`), holding what every layer at that
place has (a schedule's layers may differ: Gemma 3's window is 1,024 in five layers of six),
each value with the number of layers that have it.  Stacks (`find_stacks`) pair by path, then
in order among those of the same role (GPT-2's `transformer.h` with Llama's `model.layers`);
inside a pair, nodes pair by their path in the layer.  A node left unpaired pairs with one of
the same role (its category) in the same stack that is equal to it (renamed); the rest of a
role is a design difference, said as such, never forced into a pair (GPT-2's fused `c_attn`
against Llama's `attention` op).  Figures (parameters, FLOPs, memory, by stack and in total)
are the compare pass's, at the same sizes for both.

>>> from archgraph import load
>>> d = diff(load("llama-2-7b"), load("llama-2-70b"))
>>> d.total.params[1] - d.total.params[0], [(s.a, s.b, s.layers) for s in d.stacks]
(62238232576, [('model.layers', 'model.layers', (32, 80))])
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..graph import BlockNode, Graph, Model, OpNode, join, read_inputs
from .compare import ModelSummary, summarize
from .params import op_totals
from .stacks import Stack, place

Values = dict[Any, int]  # a value -> how many layers have it (1 outside a stack)


@dataclass
class Entry:
    """What one model has at one place (a node's path, layer indices left out)."""

    path: str
    stack: str                 # the base path of the stack it is in, '' outside any
    op: Values                 # op name -> layers
    category: str
    fields: dict[str, Values]  # hyperparameter -> values
    tensors: dict[str, Values] # tensor name -> shapes (a buffer's name ends in ' (buffer)')
    params: int                # every layer's, tied tensors not counted again
    layers: int                # how many times it is evaluated with its own tensors or not

    def signature(self) -> tuple:
        """What it is, without where: equal signatures are the same computation and tensors."""
        return (tuple(sorted(self.op)), self.category, _frozen(self.fields), _frozen(self.tensors))


@dataclass
class Change:
    """A node that differs: `kind` is changed (same place, other values), renamed (other place,
    equal), added (only in B) or removed (only in A)."""

    kind: str
    a: str | None                   # its path in A
    b: str | None                   # its path in B
    op: str
    stack: str                      # the pair of stacks it is in ('' outside them): A's base path
    details: list[tuple[str, Values, Values]] = field(default_factory=list)  # (what, in A, in B)
    params: tuple[int, int] = (0, 0)


@dataclass
class Design:
    """A role (category) that the two models compute with different nodes in one stack."""

    stack: str
    role: str
    a: list[tuple[str, str]]        # (path, op) of A's nodes of that role left unpaired
    b: list[tuple[str, str]]
    params: tuple[int, int]
    stacks: tuple[str | None, str | None] = (None, None)  # the pair of stacks it is in: A's, B's base path

    @property
    def where(self) -> str:
        """`norm in transformer.h -> decoder.block`, `attention in model.layers`, `embedding`."""
        a, b = self.stacks
        inside = a if a == b else " -> ".join(x or "—" for x in (a, b)) if a or b else ""
        return f"{self.role or 'other'} in {inside}" if inside else self.role or "other"


@dataclass
class StackPair:
    """One stack in both (or one side None): layers, parameters, FLOPs and what its layers do."""

    a: str | None
    b: str | None
    role: str
    layers: tuple[int, int]
    params: tuple[int, int]
    per_layer: tuple[int, int]
    flops: tuple[int, int]
    does: tuple[tuple[str, ...], tuple[str, ...]]


@dataclass
class Figures:
    params: tuple[int, int]
    active: tuple[int, int]
    forward_flops: tuple[int, int]
    training_bytes: tuple[int, int]
    serving_bytes: tuple[int, int]
    outside: tuple[int, int]        # parameters outside every stack (embeddings, heads)


@dataclass
class InputChange:
    """A model input (one the model reads) only in A (`removed`), only in B (`added`) or in both
    with another shape, dtype or default (`changed`); each side (shape as the spec writes it,
    dtype, default: what a call leaving it out gets, None when it is required) or None."""

    name: str
    kind: str
    a: tuple[tuple, str, str | None] | None
    b: tuple[tuple, str, str | None] | None


@dataclass
class DiffReport:
    a: str
    b: str
    sizes: tuple[dict, dict]
    total: Figures
    stacks: list[StackPair]
    changes: list[Change]
    designs: list[Design]
    same: int                        # places equal in both
    inputs: list[InputChange] = field(default_factory=list)
    inputs_same: int = 0             # inputs equal in both (name, shape, dtype, default)


def diff(a: Model, b: Model, settings: dict | None = None) -> DiffReport:
    """The differences from `a` to `b`, figures at the compare pass's sizes (`settings`: B, S, ...;
    the models' variables are set when they are loaded)."""
    sa = summarize(a.name, dict(settings or {}), load=_loaded(a), probe=a)
    sb = summarize(b.name, dict(settings or {}), load=_loaded(b), probe=b)
    pairs = _pair_stacks(sa.stacks, sb.stacks)
    ea, eb = flatten(a, sa.stacks), flatten(b, sb.stacks)
    scope = {p.a or "": p.a or f"+{p.b}" for p in pairs} | {"": ""}
    scope_b = {p.b or "": p.a or f"+{p.b}" for p in pairs} | {"": ""}
    keyed_a = {(scope.get(e.stack, e.stack), _inside(e)): e for e in ea}
    keyed_b = {(scope_b.get(e.stack, e.stack), _inside(e)): e for e in eb}
    changes, same = [], 0
    for key, ent in keyed_a.items():
        other = keyed_b.get(key)
        if other is None:
            continue
        details = _details(ent, other)
        if details:
            changes.append(Change("changed", ent.path, other.path, _name(ent.op), key[0], details,
                                  (ent.params, other.params)))
        else:
            same += 1
    left_a = [e for k, e in keyed_a.items() if k not in keyed_b]
    left_b = [e for k, e in keyed_b.items() if k not in keyed_a]
    moved, designs = _by_role(left_a, left_b, scope, scope_b)
    named = {p.a or f"+{p.b}": (p.a, p.b) for p in pairs}
    for x in designs:
        x.stacks = named.get(x.stack, (None, None))
    inputs = diff_inputs(a, b)
    return DiffReport(a.name, b.name, (sa.bindings, sb.bindings), _figures(sa, sb),
                      [_stack_pair(sa, sb, x, y) for x, y in pairs_of(pairs, sa.stacks, sb.stacks)],
                      changes + moved, designs, same, [c for c in inputs if c.kind != "same"],
                      sum(c.kind == "same" for c in inputs))


def diff_inputs(a: Model, b: Model) -> list[InputChange]:
    """The inputs each model reads (an optional one nothing reads is no input of the design: GPT-2's
    `encoder_hidden_states`), by name in A's order then B's: each `same`, `changed`, `removed`
    (only in A) or `added` (only in B).

    >>> from archgraph import load
    >>> [(c.name, c.kind) for c in diff_inputs(load("bert-base-uncased"), load("t5-small"))]
    [('input_ids', 'same'), ('attention_mask', 'same'), ('token_type_ids', 'removed'), ('decoder_input_ids', 'added'), ('decoder_attention_mask', 'added')]
    """
    def read(model: Model) -> dict[str, tuple[tuple, str, str | None]]:
        used = read_inputs(model.graph)
        return {k: (tuple(i.shape), i.dtype, i.default) for k, i in model.inputs.items() if k in used}
    ia, ib = read(a), read(b)
    out = []
    for name in [*ia, *(k for k in ib if k not in ia)]:
        x, y = ia.get(name), ib.get(name)
        kind = "added" if x is None else "removed" if y is None else "same" if x == y else "changed"
        out.append(InputChange(name, kind, x, y))
    return out


def _loaded(model: Model):
    """`load` for the compare pass: the model itself (its variables are set already)."""
    return lambda *args, **kwargs: model


@dataclass
class _Pair:
    a: str | None
    b: str | None


def _pair_stacks(sa: list[Stack], sb: list[Stack]) -> list[_Pair]:
    """Stacks by base path, then in order among the rest of the same role."""
    pairs = [_Pair(s.base, s.base) for s in _bases(sa) if s.base in {t.base for t in sb}]
    paired = {p.a for p in pairs}
    rest_a = [s for s in _bases(sa) if s.base not in paired]
    rest_b = [s for s in _bases(sb) if s.base not in paired]
    for s in list(rest_a):
        t = next((t for t in rest_b if t.role == s.role), None)
        if t is not None:
            pairs.append(_Pair(s.base, t.base))
            rest_a.remove(s)
            rest_b.remove(t)
    return pairs + [_Pair(s.base, None) for s in rest_a] + [_Pair(None, t.base) for t in rest_b]


def _bases(stacks: list[Stack]) -> list[Stack]:
    """One stack per base path (a schedule's kinds share one: its first stands for them)."""
    seen: dict[str, Stack] = {}
    for s in stacks:
        seen.setdefault(s.base, s)
    return list(seen.values())


def pairs_of(pairs: list[_Pair], sa: list[Stack], sb: list[Stack]) -> Iterator[tuple[list, list]]:
    """(A's stacks, B's stacks) at each pair of base paths (a schedule's kinds together)."""
    for p in pairs:
        yield ([i for i, s in enumerate(sa) if s.base == p.a], [i for i, s in enumerate(sb) if s.base == p.b])


def _stack_pair(sa: ModelSummary, sb: ModelSummary, ia: list[int], ib: list[int]) -> StackPair:
    def side(summary: ModelSummary, idx: list[int]):
        stacks = [summary.stacks[i] for i in idx]
        if not stacks:
            return None, "", 0, 0, 0, 0, ()
        per = stacks[0].per_layer if len(stacks) == 1 else 0
        does = tuple(dict.fromkeys(d for s in stacks for d in s.does))
        return (stacks[0].base, stacks[0].role, sum(s.layers for s in stacks), sum(s.params for s in stacks), per,
                sum(summary.stack_flops[i] for i in idx), does)
    a, b = side(sa, ia), side(sb, ib)
    return StackPair(a[0], b[0], a[1] or b[1], (a[2], b[2]), (a[3], b[3]), (a[4], b[4]), (a[5], b[5]), (a[6], b[6]))


def _figures(sa: ModelSummary, sb: ModelSummary) -> Figures:
    pair = lambda f: (f(sa), f(sb))  # noqa: E731
    return Figures(pair(lambda s: s.params), pair(lambda s: s.active_params), pair(lambda s: s.flops.forward),
                   pair(lambda s: s.memory.training_bytes), pair(lambda s: s.memory.serving_bytes),
                   pair(lambda s: sum(s.outside.values())))


# -- flattening ------------------------------------------------------------------------------------
def flatten(model: Model, stacks: list[Stack]) -> list[Entry]:
    """One entry per place of an op node, in graph order (see the module docstring)."""
    bases = sorted({s.base for s in stacks}, key=len, reverse=True)
    found: dict[str, Entry] = {}
    for inner, node, times, own in _ops(model.graph, "", 1, 1):
        key = place(inner, bases)
        stack = next((b for b in bases if key == b or key.startswith(b + ".")), "")
        entry = found.get(key)
        if entry is None:
            entry = found[key] = Entry(key, stack, {}, node.category, {}, {}, 0, 0)
        _add(entry.op, node.op.op_name, times)
        for name in type(node.op).hyperparameters():
            _add(entry.fields.setdefault(name, {}), _plain(getattr(node.op, name)), times)
        for t in node.op.params():
            tied = " (tied)" if t.name in node.ties else ""
            _add(entry.tensors.setdefault(t.name, {}), f"{list(t.shape)}{tied}", times)
        for t in node.op.buffers():
            _add(entry.tensors.setdefault(f"{t.name} (buffer)", {}), f"{list(t.shape)} {t.dtype}", times)
        entry.params += op_totals(node).total * own
        entry.layers += times
    return list(found.values())


def _ops(graph: Graph, prefix: str, times: int, own: int) -> Iterator[tuple[str, OpNode, int, int]]:
    """(path without repetition indices, node, evaluations, evaluations with tensors of their own) of
    each op node."""
    for name, node in graph.nodes.items():
        if isinstance(node, OpNode):
            yield join(prefix, name), node, times, own
        elif isinstance(node, BlockNode) and node.repeat:
            inner_own = own * (1 if node.shared else node.repeat)
            yield from _ops(node.body, join(prefix, node.segment), times * node.repeat, inner_own)


def _inside(entry: Entry) -> str:
    """Its path inside its stack (the whole path outside any)."""
    return entry.path[len(entry.stack):].lstrip(".") if entry.stack else entry.path


def _add(values: Values, value: Any, times: int) -> None:
    values[value] = values.get(value, 0) + times


def _plain(value: Any) -> Any:
    """A hyperparameter as a comparable, printable value (a symbolic size as its text)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return str(value)


def _frozen(values: dict[str, Values]) -> tuple:
    return tuple(sorted((k, tuple(sorted(v.items(), key=repr))) for k, v in values.items()))


def _name(ops: Values) -> str:
    return "/".join(ops)


def _details(a: Entry, b: Entry) -> list[tuple[str, Values, Values]]:
    """(what, A's values, B's values) for the op, each hyperparameter and each tensor that differ;
    the layer counts are left out when the stacks differ only in depth (32 -> 40 layers)."""
    scale = _scale(a, b)
    out: list[tuple[str, Values, Values]] = []
    if set(a.op) != set(b.op):
        out.append(("op", a.op, b.op))
    for group_a, group_b, suffix in ((a.fields, b.fields, ""), (a.tensors, b.tensors, " shape")):
        for name in dict.fromkeys([*group_a, *group_b]):
            va, vb = group_a.get(name, {}), group_b.get(name, {})
            if _norm(va, scale[0]) != _norm(vb, scale[1]):
                out.append((name + suffix, va, vb))
    return out


def _scale(a: Entry, b: Entry) -> tuple[int, int]:
    return a.layers or 1, b.layers or 1


def _norm(values: Values, layers: int) -> tuple:
    """Values with their share of the layers (equal in a 32- and a 40-layer stack of equal layers)."""
    return tuple(sorted(((v, n / layers) for v, n in values.items()), key=repr))


def _by_role(left_a: list[Entry], left_b: list[Entry], scope: dict, scope_b: dict
             ) -> tuple[list[Change], list[Design]]:
    """Unpaired nodes: equal ones of one role in one stack are renamed; the rest, by role, are
    added, removed, or (a role both have) a design difference."""
    changes: list[Change] = []
    groups: dict[tuple[str, str], tuple[list[Entry], list[Entry]]] = {}
    for e in left_a:
        groups.setdefault((scope.get(e.stack, e.stack), e.category), ([], []))[0].append(e)
    for e in left_b:
        groups.setdefault((scope_b.get(e.stack, e.stack), e.category), ([], []))[1].append(e)
    designs: list[Design] = []
    for (stack, role), (xs, ys) in groups.items():
        for x in list(xs):
            y = next((y for y in ys if y.signature() == x.signature()), None)
            if y is not None:
                changes.append(Change("renamed", x.path, y.path, _name(x.op), stack, [], (x.params, y.params)))
                xs.remove(x)
                ys.remove(y)
        if xs and ys:
            designs.append(Design(stack, role, [(e.path, _name(e.op)) for e in xs], [(e.path, _name(e.op)) for e in ys],
                                  (sum(e.params for e in xs), sum(e.params for e in ys))))
            continue
        changes += [Change("removed", e.path, None, _name(e.op), stack, [], (e.params, 0)) for e in xs]
        changes += [Change("added", None, e.path, _name(e.op), stack, [], (0, e.params)) for e in ys]
    return changes, designs


def diff_marks(d: DiffReport) -> list[dict[str, str]]:
    """For each side, A then B: a node's path (layer indices left out) -> how it differs
    (changed, only, design, renamed): what a page marks on the two models' drawings."""
    marks: list[dict[str, str]] = [{}, {}]
    for c in d.changes:
        kind = "only" if c.kind in ("added", "removed") else c.kind
        for side, path in enumerate((c.a, c.b)):
            if path is not None:
                marks[side][path] = kind
    for x in d.designs:
        for side, nodes in enumerate((x.a, x.b)):
            for path, _ in nodes:
                marks[side][path] = "design"
    return marks
