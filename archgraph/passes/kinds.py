"""What tells the kinds of a layer schedule apart: the hyperparameters that differ between the
bodies of its runs (a WaveNet's dilation), node by node.

A scheduled call is one BlockNode per run of equal repetitions; its kinds are its distinct bodies.
When the kinds hold the same nodes, ops and wiring and differ only in op hyperparameters,
`differences` lists them, so a table or diagram can show one stack with each value's range
(`dilation 1, 2, 4, ..., 128`); kinds that differ otherwise (a dense layer and a MoE layer) give
None: they are different layers.

>>> from archgraph import load
>>> schedules(load("gpt2").graph)
[]
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ..graph import BlockNode, Graph, OpNode, join


class Difference(NamedTuple):
    """Hyperparameter `field` of op node `node` (its path in the body) takes `values`, one per kind
    (in the order the kinds first occur)."""

    node: str
    field: str
    values: tuple


def schedules(graph: Graph) -> list[list[BlockNode]]:
    """The runs of each scheduled call of `graph` (not inside its blocks), in order."""
    groups: list[list[BlockNode]] = []
    for node in graph.nodes.values():
        if not (isinstance(node, BlockNode) and node.scheduled):
            continue
        last = groups[-1][-1] if groups else None
        if last is not None and last.segment == node.segment and last.block == node.block \
                and last.start + last.repeat == node.start and last.group == node.group:
            groups[-1].append(node)
        else:
            groups.append([node])
    return groups


def kinds_of(runs: list[BlockNode]) -> list[Graph]:
    """The distinct bodies of `runs`, in the order they first occur."""
    seen: dict[int, Graph] = {}
    for run in runs:
        seen.setdefault(id(run.body), run.body)
    return list(seen.values())


def differences(runs: list[BlockNode]) -> list[Difference] | None:
    """The hyperparameters in which the kinds of `runs` differ, when the kinds differ in nothing
    else; None when they differ in their nodes, ops or wiring ([] for a single kind)."""
    bodies = kinds_of(runs)
    found: list[Difference] = []
    for other in bodies[1:]:
        if not _alike(bodies[0], other, ""):
            return None
    _collect(bodies, "", found)
    return found


def _alike(a: Graph, b: Graph, prefix: str) -> bool:
    if (a.inputs, a.outputs, a.output_names, list(a.nodes)) != (b.inputs, b.outputs, b.output_names, list(b.nodes)):
        return False
    for name, x in a.nodes.items():
        y = b.nodes[name]
        if type(x) is not type(y):
            return False
        if isinstance(x, OpNode):
            if type(x.op) is not type(y.op) or (x.inputs, x.category, x.trainable, dict(x.ties), x.keywords,
                                                  x.dtype, x.unused) != (y.inputs, y.category, y.trainable,
                                                                         dict(y.ties), y.keywords, y.dtype, y.unused):
                return False
        elif _call(x) != _call(y) or not _alike(x.body, y.body, join(prefix, name)):
            return False
    return True


def _call(node: BlockNode) -> tuple:
    return (node.block, node.inputs, node.repeat, node.start, node.indexed, node.shared, node.path, node.scheduled,
            node.group, node.each)


def _collect(bodies: list[Graph], prefix: str, found: list[Difference]) -> None:
    for name, node in bodies[0].nodes.items():
        path = join(prefix, name)
        if isinstance(node, BlockNode):
            _collect([b.nodes[name].body for b in bodies], path, found)
            continue
        for field in type(node.op)._fields:
            values = tuple(getattr(b.nodes[name].op, field) for b in bodies)
            if any(_text(v) != _text(values[0]) for v in values[1:]):
                found.append(Difference(path, field, values))


def _text(value: Any) -> str:
    return f"{type(value).__name__}:{value!r}"
