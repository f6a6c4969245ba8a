"""Forward FLOPs: each op's `flops(inputs, outputs)` (2 per multiply-accumulate) over the shape walk.

A block repeated N times is one evaluation times N (the walker's Segments), so
the total costs one body whatever the depth.  Attention counts its projections
and both score and value matmuls over the full S x T matrix (no causal halving),
T capped at what a sliding window or a chunk lets a query see;
a tied weight's matmul is counted (its parameters count once, its FLOPs do not).
Training is estimated as 3x forward (backward ~ 2x forward), stated as such.

>>> from archgraph import load
>>> report = count_flops(load("gpt2"), {"B": 1, "S": 1024})
>>> report.forward
292068261888
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from ..dims import exact_div, norm, prod
from ..errors import ShapeError
from ..graph import Model, OpNode, join
from .shapes import ShapeReport, infer_shapes
from .walk import Run, call_op

TRAINING_FACTOR = 3  # forward + backward (about 2x forward): the usual 6·N·tokens rule


@dataclass(frozen=True)
class NodeFlops:
    path: str
    op: str
    category: str
    flops: Any        # int, or a symbolic size expression (dims.Poly) when sizes are symbolic


@dataclass
class FlopsReport:
    model: Model
    bindings: dict[str, int]
    tokens: Any                      # B·S for token inputs (the first input's elements), else B
    unit: str                        # "token" or "sample"
    forward: Any
    by_category: Counter = field(default_factory=Counter)
    by_op: Counter = field(default_factory=Counter)
    shapes: ShapeReport | None = None
    _cache: dict = field(default_factory=dict)

    @property
    def per_token(self) -> Any:
        """Forward FLOPs per token (or per sample): exact when the sizes are symbolic."""
        if isinstance(self.forward, int) and isinstance(self.tokens, int):
            q, r = divmod(self.forward, self.tokens)
            return q if r == 0 else self.forward / self.tokens
        try:
            return exact_div(self.forward, self.tokens, "FLOPs per token")
        except ShapeError:
            return None  # not a polynomial in the sizes: give B and S values

    @property
    def training(self) -> Any:
        return TRAINING_FACTOR * self.forward

    def nodes(self) -> Iterator[NodeFlops]:
        """Every op node, repetitions expanded (`transformer.h.3.attn.c_attn`)."""
        yield from _expand(self.shapes.run, "", self._cache)


def op_flops(node: OpNode, inputs: list, outputs: list, path: str) -> Any:
    return norm(call_op(node, [node.arranged(inputs), outputs], path, node.op.flops))


def counted(run: Run, prefix: str = "", times: int = 1) -> Iterator[tuple[str, OpNode, list, list, int]]:
    """(path, node, input shapes, output shapes, repetitions) for each distinct evaluation of
    an op: a block's identical repetitions come once with their count (the path is the first's)."""
    for name, node in run.graph.nodes.items():
        value = run.nodes[name]
        if isinstance(node, OpNode):
            yield join(prefix, name), node, run.input_values(node), list(value), times
            continue
        index = 0
        for segment in value:
            yield from counted(segment.run, node.rep_path(prefix, index), times * segment.count)
            index += segment.count


def _expand(run: Run, prefix: str, cache: dict) -> Iterator[NodeFlops]:
    for name, node in run.graph.nodes.items():
        value = run.nodes[name]
        if isinstance(node, OpNode):
            key = (id(run), name)
            if key not in cache:
                cache[key] = op_flops(node, run.input_values(node), list(value), join(prefix, name))
            yield NodeFlops(join(prefix, name), node.op.op_name, node.category, cache[key])
            continue
        index = 0
        for segment in value:
            for _ in range(segment.count):
                yield from _expand(segment.run, node.rep_path(prefix, index), cache)
                index += 1


def count_flops(model: Model, bindings: Mapping[str, int] | None = None) -> FlopsReport:
    """Forward FLOPs of `model` with symbolic sizes bound by `bindings` (unbound ones stay symbols)."""
    shapes = infer_shapes(model, bindings)
    total: Any = 0
    by_category: Counter = Counter()
    by_op: Counter = Counter()
    for path, node, ins, outs, times in counted(shapes.run):
        flops = op_flops(node, ins, outs, path)
        total += flops * times
        by_category[node.category] += flops * times
        by_op[node.op.op_name] += flops * times
    tokens, unit = _tokens(model, shapes)
    return FlopsReport(model, shapes.bindings, tokens, unit, norm(total),
                       Counter({k: norm(v) for k, v in by_category.items()}),
                       Counter({k: norm(v) for k, v in by_op.items()}), shapes)


def token_input(model: Model) -> str:
    """The input `tokens` counts: the first one (input_ids)."""
    return next(iter(model.inputs))


def _tokens(model: Model, shapes: ShapeReport) -> tuple[Any, str]:
    """Tokens of the first input when it holds ids (integer dtype), else its batch (samples)."""
    first = next(iter(model.inputs.values()))
    shape = shapes.inputs[first.name]
    if first.dtype.startswith(("int", "uint", "long")):
        return prod(shape), "token"
    return shape[0], "sample"
