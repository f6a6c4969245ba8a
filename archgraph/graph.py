"""The model as data: a hierarchy of graphs whose nodes are ops or calls of blocks.

A `Graph` holds its nodes in topological order and a networkx DiGraph of their
wiring.  A `BlockNode` calls a body graph, possibly `repeat` times; bodies with
the same arguments are one object, so analysing a repeated block costs one body.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import networkx as nx

from .errors import Loc
from .ops.base import Op


@dataclass(frozen=True)
class Ref:
    """An edge's source: output `index` of node (or graph input) `node`."""

    node: str
    index: int = 0

    def __str__(self) -> str:
        return self.node if self.index == 0 else f"{self.node}:{self.index}"


@dataclass(eq=False)
class OpNode:
    name: str
    op: Op
    inputs: tuple[Ref, ...]
    category: str
    trainable: bool = True
    ties: dict[str, str] = field(default_factory=dict)  # local tensor -> absolute tensor path
    loc: Loc = Loc()
    keywords: tuple[str, ...] = ()  # when 'in' is a mapping: the rule's parameter for each input
    dtype: str | None = None  # `dtype:` in the spec: this node's weights are stored so (memory pass)

    def bind(self, values: list[Any]) -> tuple[list[Any], dict[str, Any]]:
        """Split input values into the positional and keyword arguments of the op's rules."""
        if not self.keywords:
            return values, {}
        return [], dict(zip(self.keywords, values))


@dataclass(eq=False)
class BlockNode:
    name: str
    block: str
    body: "Graph"
    inputs: tuple[Ref, ...]
    repeat: int = 1
    start: int = 0
    indexed: bool = False  # paths carry the repetition index (`layer.3.x`)
    shared: bool = False   # every repetition reuses the weights of the first
    loc: Loc = Loc()
    path: str | None = None  # the segment tensor paths use, when not the name ('' adds none)

    @property
    def segment(self) -> str:
        """What this call adds to the paths of the tensors inside it."""
        return self.name if self.path is None else self.path

    def rep_path(self, prefix: str, i: int) -> str:
        base = join(prefix, self.segment)
        return f"{base}.{self.start + i}" if self.indexed else base


Node = Union[OpNode, BlockNode]


@dataclass(eq=False)
class Graph:
    name: str
    inputs: tuple[str, ...]
    nodes: dict[str, Node]  # topological order
    outputs: tuple[Ref, ...]
    dag: nx.DiGraph
    loc: Loc = Loc()


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[Any, ...]  # ints or expression texts (symbolic names allowed)
    dtype: str
    loc: Loc = Loc()


@dataclass(eq=False)
class Model:
    name: str
    graph: Graph
    inputs: dict[str, InputSpec]
    variables: dict[str, Any]
    output_names: tuple[str, ...]
    description: str = ""
    source: str = "<spec>"
    bindings: dict[str, Any] = field(default_factory=dict)  # --set values that are not variables

    def params(self):
        """Parameter report (see `archgraph.passes.params`)."""
        from .passes.params import count_params
        return count_params(self)

    def shapes(self, **bindings: int):
        """Shape report with symbolic dims bound to the given values."""
        from .passes.shapes import infer_shapes
        return infer_shapes(self, bindings)

    def _repr_svg_(self) -> str | None:
        """The diagram, shown inline by Jupyter (None without Graphviz's dot: Jupyter shows the repr)."""
        from .render.diagram import diagram_svg
        return diagram_svg(self)


def join(prefix: str, name: str) -> str:
    """`prefix.name`; either may be empty (a block call with `path: ''` adds no segment)."""
    return f"{prefix}.{name}" if prefix and name else prefix or name


def instance_count(graph: Graph, cache: dict | None = None) -> int:
    """Op nodes once every repetition is expanded (what a node listing holds)."""
    cache = {} if cache is None else cache
    if id(graph) not in cache:
        cache[id(graph)] = sum(1 if isinstance(n, OpNode) else n.repeat * instance_count(n.body, cache)
                               for n in graph.nodes.values())
    return cache[id(graph)]


def call_count(graph: Graph, cache: dict | None = None) -> int:
    """Block calls in the tree of calls, a repeated call once (the rows of the block table)."""
    cache = {} if cache is None else cache
    if id(graph) not in cache:
        cache[id(graph)] = sum(1 + call_count(n.body, cache) for n in graph.nodes.values()
                               if isinstance(n, BlockNode))
    return cache[id(graph)]
