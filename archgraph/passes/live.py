"""What serving holds at once: a forward without gradients, each op's output made while its inputs
live and freed once the last op reading it ran, as PyTorch frees a tensor with its last reference.

A block's inputs live until it returns (its caller holds them, as a module's caller does); a view
shares its input's storage; an op made of parts (attention, an MLP) holds its intermediates as its
`held()` declares them, so it holds what the block of its parts (lib.attention) holds.  A model's
figure is its largest layer's: the layer's inputs and the most of its own tensors alive at once.
Tensor parallelism splits what lies between a column- and a row-parallel projection (places as
passes/plan_activations.py reads them); the residual stream stays whole on every rank.

>>> from archgraph import load
>>> layer_peak(load("llama-2-7b"), {"B": 1, "S": 4096}) == 4096 * (4096 + 2 * 128 + 2 * 4096 + 3 * 11008)
True
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from ..graph import BlockNode, Model, OpNode
from .plan_activations import COLUMN_OR_ROW, MERGES, VIEWS as PLAN_VIEWS, _arranged, _numel
from .shapes import infer_shapes
from .stacks import find_stacks
from .walk import Run, call_op

VIEWS = PLAN_VIEWS | {"split", "select", "dropout", "view_as_complex", "view_as_real"}  # dropout: serving's identity


class _Tensor(NamedTuple):
    key: Any
    values: int
    place: str   # "seq" (whole on every tensor-parallel rank) or "heads" (split)


class _Own(NamedTuple):
    """One evaluation of a graph: the most values of its own alive at once (its outputs included)
    and its outputs, each an input of its own (the index) or a tensor it made."""

    peak: int
    outputs: list


def layer_peak(model: Model, bindings: Mapping[str, Any], tp: int = 1) -> int:
    """Values one of `tp` ranks holds at once while the model's largest layer runs (its inputs
    included) at `bindings`; a model without stacks of layers: while the whole model runs."""
    shapes = infer_shapes(model, bindings)
    calls = {id(call) for stack in find_stacks(model) for call in stack.calls}
    runs = list(_layer_runs(shapes.run, calls)) or [shapes.run]
    best = 0
    for run in runs:
        inputs = [_input(i, shape, None) for i, shape in enumerate(run.inputs)]
        own = _walk(run, inputs, tp, {})
        best = max(best, sum(t.values for t in inputs if t is not None) + own.peak)
    return best


def _layer_runs(run: Run, calls: set):
    """The runs of the stacks' layer calls (the first segment of each), found through wrappers."""
    for name, node in run.graph.nodes.items():
        if isinstance(node, BlockNode):
            segments = run.nodes[name]
            if id(node) in calls:
                yield from (segment.run for segment in segments[:1])
            else:
                for segment in segments:
                    yield from _layer_runs(segment.run, calls)


def _input(i: int, shape, given: _Tensor | None) -> _Tensor | None:
    """Input i of a graph at `shape` (`each:` slices a block's input), placed as the tensor `given` it;
    none where a size is left unbound (an input no op reads: GPT-2's encoder states when it has no
    cross-attention)."""
    if shape is None:
        return given and _Tensor((None, i), given.values, given.place)
    if not all(isinstance(d, int) for d in shape):
        return None
    return _Tensor((None, i), _numel(shape), given.place if given else "seq")


def _size(t: _Tensor, tp: int) -> int:
    return -(-t.values // tp) if t.place == "heads" else t.values


def _walk(run: Run, inputs: list, tp: int, cache: dict) -> _Own:
    """The most of its own `run` holds at once given its inputs' places, and its outputs."""
    signature = (id(run), tuple(t and (t.values, t.place) for t in inputs))
    if signature in cache:
        return cache[signature]
    padded = [*inputs, *[None] * (len(run.graph.inputs) - len(inputs))]
    env: dict[str, list] = {name: [t] for name, t in zip(run.graph.inputs, padded)}
    steps = []   # (peak of the step above what is alive before it, tensors it makes, keys it reads)
    for name, node in run.graph.nodes.items():
        args = [env[ref.node][ref.index] for ref in node.inputs]
        if isinstance(node, OpNode):
            outs, peak = _op(node, name, args, run, tp)
        else:
            outs, peak = _call(node, name, args, run, tp, cache)
        env[name] = outs
        made = {t.key: t for t in outs if t is not None and not any(a is not None and a.key == t.key for a in args)}
        steps.append((peak, made, {a.key for a in args if a is not None}))
    outputs = [env[ref.node][ref.index] for ref in run.graph.outputs]
    last = {}
    for i, (_, _, reads) in enumerate(steps):
        for key in reads:
            last[key] = i
    for t in outputs:
        if t is not None:
            last[t.key] = len(steps)   # returned: alive to the end
    sizes: dict = {}
    alive = top = 0
    for i, (peak, made, reads) in enumerate(steps):
        top = max(top, alive + peak)
        for key, t in made.items():
            sizes[key] = _size(t, tp)
            alive += sizes[key]
        for key in list(made) + list(reads):
            if key in sizes and last.get(key, i) == i:
                alive -= sizes.pop(key)   # its last reader ran (or none reads it)
    result = _Own(top, [None if t is None else (t.key[1] if t.key[0] is None else t) for t in outputs])
    cache[signature] = result
    return result


def _op(node: OpNode, name: str, args: list, run: Run, tp: int) -> tuple[list, int]:
    """An op's outputs with their places, and the most it holds at once of its own (outputs included)."""
    op = node.op
    shapes_out = list(run.nodes[name])
    given = [t for t in args if t is not None]
    if op.op_name in VIEWS and given:
        return [given[0] for _ in shapes_out], 0
    first = given[0].place if given else "seq"
    if op.op_name in COLUMN_OR_ROW:
        place = "seq" if first == "heads" else "heads"
    elif op.op_name in MERGES or any(True for _ in op.params()):
        place = first   # an op with projections of its own gives its input's place back (attention, an MLP)
    else:
        place = "heads" if any(t.place == "heads" for t in given) else "seq"
    outs = [_Tensor((name, j), _numel(s), place) for j, s in enumerate(shapes_out)]
    held = call_op(node, [_arranged(node, run.input_values(node)), shapes_out], name, op.held)
    return outs, _held_peak(held, sum(_size(t, tp) for t in outs), tp)


def _held_peak(held: list, outputs: int, tp: int) -> int:
    """The most an op holds at once: its intermediates in order, each freed once the last one reading
    it ran (those no later one reads, once its outputs are made), then its outputs."""
    last = [len(held)] * len(held)
    for k, part in enumerate(held):
        for j in part.reads:
            last[j] = k
    alive = top = 0
    for k, part in enumerate(held):
        alive += -(-part.values // tp)
        top = max(top, alive)
        alive -= sum(-(-held[j].values // tp) for j in range(k) if last[j] == k)
    return max(top, alive + outputs)


def _call(node: BlockNode, name: str, args: list, run: Run, tp: int, cache: dict) -> tuple[list, int]:
    """A block call: its outputs, and the most it holds at once of its own: each repetition's on top
    of the tensors the one before handed it (the call's inputs are its caller's)."""
    current, chained = list(args), len(node.body.outputs)
    top = handed = 0
    called = False
    for segment in run.nodes[name]:
        given = [t and _input(i, shape, t) for i, (t, shape) in enumerate(zip(current, segment.run.inputs))]
        own = _walk(segment.run, given, tp, cache)
        made = {t.key: t for t in own.outputs if isinstance(t, _Tensor)}
        out = sum(_size(t, tp) for t in made.values())
        top = max(top, handed + own.peak, out + own.peak if segment.count > 1 else 0)
        handed = out
        current = [current[t] if isinstance(t, int) else
                   t and _Tensor((name, id(segment), t.key), t.values, t.place) for t in own.outputs] + current[chained:]
        called = True
    return (current[:chained], top) if called else (args[:chained], 0)
