"""The one graph walker: visits nodes in topological order, feeding each op the
values of its inputs and recursing into blocks.

A body is evaluated once per distinct tuple of input values (a cache), and a
repetition whose outputs equal its inputs is a fixed point: every later
repetition is the same evaluation, so a block repeated N times costs one body
evaluation, whatever N is.  A call that slices an input per repetition (`each:`) hands
repetition k `select(value, dim, index, position)` of it instead (the pass says what a
slice of its values is: a shape without that dim, a tensor's index); equal slices are
the same evaluation again, so its repetitions stay one run.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import ArchgraphError, ShapeError, SpecError
from ..graph import BlockNode, Graph, OpNode, Ref, join
from ..record import Record

Visit = Callable[[OpNode, list[Any], str], tuple[Any, ...]]
Select = Callable[[BlockNode, str, Any, int, int, int], Any]  # (call, path, value, dim, index, input) -> slice


class Segment(Record):
    """`count` consecutive repetitions of a block that are the same evaluation `run`."""

    run: "Run"
    count: int


class Run(Record, eq=False):
    """The values one evaluation of a graph produced.

    `nodes[name]` is the tuple of an op's outputs, or for a block the list of
    Segments of its repetitions; `values[name]` is what any node or input
    of the graph hands on (a block: its last repetition's outputs).
    """

    graph: Graph
    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]
    nodes: dict[str, Any]
    values: dict[str, tuple[Any, ...]]

    def input_values(self, node) -> list[Any]:
        return [self.values[ref.node][ref.index] for ref in node.inputs]


def walk(graph: Graph, inputs: tuple[Any, ...], visit: Visit, prefix: str = "",
         cache: dict | None = None, select: Select | None = None) -> Run:
    cache = {} if cache is None else cache
    key = (id(graph), inputs)
    if key in cache:
        return cache[key]
    # a call may leave out inputs its body never reads (at the end): they are None here
    padded = (*inputs, *(None,) * (len(graph.inputs) - len(inputs)))
    env: dict[str, tuple[Any, ...]] = {name: (value,) for name, value in zip(graph.inputs, padded)}
    results: dict[str, Any] = {}
    for name, node in graph.nodes.items():
        if node.__class__ is OpNode:  # the common case, written out (a flat graph may have a million)
            refs = node.inputs
            try:
                if len(refs) == 1:
                    ref = refs[0]
                    args = [env[ref.node][ref.index]]
                else:
                    args = [env[ref.node][ref.index] for ref in refs]
            except IndexError:  # `node:3` of a node with fewer outputs: the error
                args = [_pick(env, ref, node, prefix) for ref in refs]
            env[name] = results[name] = visit(node, args, join(prefix, name))
            continue
        args = [_pick(env, ref, node, prefix) for ref in node.inputs]  # a block call
        results[name], current = _repeat(node, tuple(args), visit, prefix, cache, select)
        env[name] = current[:len(node.body.outputs)]  # repeat 0 passes its inputs through
    outputs = tuple(_pick(env, ref, graph, prefix) for ref in graph.outputs)
    run = Run(graph, inputs, outputs, results, env)
    cache[key] = run
    return run


def _repeat(node: BlockNode, current: tuple, visit: Visit, prefix: str, cache: dict, select: Select | None):
    """Evaluate the repetitions of a block: (segments, inputs the next repetition would get)."""
    segments: list[Segment] = []
    done = 0
    path = join(prefix, node.label if node.scheduled else node.segment or node.name)  # errors name the spec's node
    while done < node.repeat:
        given = node.sliced(current, done, lambda v, d, k, j: select(node, path, v, d, k, j)) if node.each \
            else current
        run = walk(node.body, given, visit, node.rep_path(prefix, done), cache, select)
        if segments and segments[-1].run is run:
            segments[-1].count += 1
        else:
            segments.append(Segment(run, 1))
        done += 1
        following = run.outputs + current[len(run.outputs):]
        if following == current and not node.each:  # a fixed point: every remaining repetition is this evaluation
            segments[-1].count += node.repeat - done
            break
        current = following
    return segments, current


def _pick(env: dict, ref: Ref, reader, prefix: str) -> Any:
    """Output `ref.index` of `ref.node`; `reader` is the node (or, for outputs, the graph) asking."""
    values = env[ref.node]
    if ref.index >= len(values):
        node = join(prefix, reader.name) if isinstance(reader, (OpNode, BlockNode)) else None
        raise SpecError(f"'{ref}' asks for output {ref.index} of '{ref.node}', which has "
                        f"{len(values)} output(s) (numbered from 0)", loc=reader.loc, node=node,
                        hint="ask for an output the node has: 'node:0' for its first")
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
