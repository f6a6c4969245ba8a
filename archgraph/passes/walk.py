"""The one graph walker: visits nodes in topological order, feeding each op the
values of its inputs and recursing into blocks.

A body is evaluated once per distinct tuple of input values (a cache), so a
block repeated 1,000 times whose output has its input's shape costs one body
evaluation and 999 lookups.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ArchgraphError, ShapeError, SpecError
from ..graph import Graph, OpNode, Ref, join

Visit = Callable[[OpNode, list[Any], str], tuple[Any, ...]]


@dataclass(eq=False)
class Run:
    """The values one evaluation of a graph produced.

    `nodes[name]` is the tuple of an op's outputs, or for a block the list of
    its repetitions' Runs (the same object where repetitions coincide).
    """

    graph: Graph
    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]
    nodes: dict[str, Any]


def walk(graph: Graph, inputs: tuple[Any, ...], visit: Visit, prefix: str = "",
         cache: dict | None = None) -> Run:
    cache = {} if cache is None else cache
    key = (id(graph), inputs)
    if key in cache:
        return cache[key]
    env: dict[str, tuple[Any, ...]] = {name: (value,) for name, value in zip(graph.inputs, inputs)}
    results: dict[str, Any] = {}
    for name, node in graph.nodes.items():
        args = [_pick(env, ref, node, prefix) for ref in node.inputs]
        if isinstance(node, OpNode):
            env[name] = results[name] = visit(node, args, join(prefix, name))
            continue
        reps, current = [], tuple(args)
        for i in range(node.repeat):
            run = walk(node.body, current, visit, node.rep_path(prefix, i), cache)
            reps.append(run)
            current = run.outputs + current[len(run.outputs):]
        results[name] = reps
        env[name] = current[:len(node.body.outputs)]  # repeat 0 passes its inputs through
    outputs = tuple(_pick(env, ref, None, prefix) for ref in graph.outputs)
    run = Run(graph, inputs, outputs, results)
    cache[key] = run
    return run


def _pick(env: dict, ref: Ref, node, prefix: str) -> Any:
    values = env[ref.node]
    if ref.index >= len(values):
        raise SpecError(f"'{ref}' asks for output {ref.index} of '{ref.node}', which has "
                        f"{len(values)} output(s) (numbered from 0)",
                        loc=getattr(node, "loc", None), node=join(prefix, node.name) if node else None)
    return values[ref.index]


def call_op(node: OpNode, args: list[Any], path: str, rule: Callable[..., Any]) -> Any:
    """Run one op rule, wrapping a user-caused failure with the node's context once."""
    try:
        return rule(*args)
    except ShapeError as exc:
        if exc.node is None:
            exc.message = f"{node.op.describe()}: {exc.message}"
        raise exc.with_context(loc=node.loc, node=path)
    except ArchgraphError as exc:
        raise exc.with_context(loc=node.loc, node=path)
