"""The model as data: a hierarchy of graphs whose nodes are ops or calls of blocks.

A `Graph` holds its nodes in topological order; `Graph.dag` gives their wiring as a
networkx DiGraph, made when first asked for (counting never needs it).  A
`BlockNode` calls a body graph, possibly `repeat` times; bodies with the same
arguments are one object, so analysing a repeated block costs one body.  This
module holds data only: the analyses are functions in `archgraph.passes`.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Union

from .errors import Loc
from .ops.base import Op
from .record import Record, factory


NO_TIES: Mapping[str, str] = MappingProxyType({})  # what most nodes tie: one shared, read-only mapping


class Ref(NamedTuple):
    """An edge's source: output `index` of node (or graph input) `node` (a tuple: cheap to make)."""

    node: str
    index: int = 0

    def __str__(self) -> str:
        return self.node if self.index == 0 else f"{self.node}:{self.index}"


class OpNode:
    """A node that applies one op to the outputs it reads (`inputs`), its tensors counted under `category`.
    Slots and a written __init__: a graph built in Python may hold a million of them."""

    __slots__ = ("name", "op", "inputs", "category", "trainable", "ties", "loc", "keywords", "dtype", "unused")
    name: str
    op: Op
    inputs: tuple[Ref, ...]
    category: str
    trainable: bool  # default True
    ties: Mapping[str, str]  # local tensor -> absolute tensor path
    loc: Loc
    keywords: tuple[str, ...]  # when 'in' is a mapping: the rule's parameter for each input
    dtype: str | None  # `dtype:` in the spec: this node's weights are stored so (memory pass)
    unused: bool  # nothing reads it, on purpose (`unused: true`)

    def __init__(self, name: str, op: Op, inputs: tuple[Ref, ...], category: str, trainable: bool = True,
                 ties: Mapping[str, str] = NO_TIES, loc: Loc = Loc(), keywords: tuple[str, ...] = (),
                 dtype: str | None = None, unused: bool = False) -> None:
        self.name, self.op, self.inputs, self.category = name, op, inputs, category
        self.trainable, self.ties, self.loc, self.keywords = trainable, ties, loc, keywords
        self.dtype, self.unused = dtype, unused

    def __repr__(self) -> str:
        return _slots_repr(self)

    def bind(self, values: list[Any]) -> tuple[list[Any], dict[str, Any]]:
        """Split input values into the positional and keyword arguments of the op's rules."""
        if not self.keywords:
            return values, {}
        return [], dict(zip(self.keywords, values))

    def arranged(self, values: list[Any]) -> list[Any]:
        """Input values in the order of the op's inputs, None for an optional one not given (what
        `flops(inputs, outputs)` receives)."""
        if not self.keywords:
            return list(values)
        given = dict(zip(self.keywords, values))
        return [given.get(name) for name in self.op.input_names()[0]]


class BlockNode:
    """A call of a block: its body graph, run `repeat` times (shared: one set of tensors for all)."""

    __slots__ = ("name", "block", "body", "inputs", "repeat", "start", "indexed", "shared", "loc", "path",
                 "unused", "scheduled", "group", "each")
    name: str
    block: str
    body: "Graph"
    inputs: tuple[Ref, ...]
    repeat: int  # default 1
    start: int  # default 0
    indexed: bool  # paths carry the repetition index (`layer.3.x`)
    shared: bool   # every repetition reuses the weights of the first
    loc: Loc
    path: str | None  # the segment tensor paths use, when not the name ('' adds none)
    unused: bool  # nothing reads it, on purpose (`unused: true`)
    scheduled: bool  # one run of a call whose repetitions differ (a layer schedule)
    group: tuple[str, Any] | None  # (name, value) its repetitions share (`group: {stage: ...}`)
    each: tuple[int | None, ...]  # () or per input: the dim repetition k reads index start + k of (`each:`), or None

    def __init__(self, name: str, block: str, body: "Graph", inputs: tuple[Ref, ...], repeat: int = 1,
                 start: int = 0, indexed: bool = False, shared: bool = False, loc: Loc = Loc(),
                 path: str | None = None, unused: bool = False, scheduled: bool = False,
                 group: tuple[str, Any] | None = None, each: tuple[int | None, ...] = ()) -> None:
        self.name, self.block, self.body, self.inputs = name, block, body, inputs
        self.each = each
        self.repeat, self.start, self.indexed, self.shared, self.loc = repeat, start, indexed, shared, loc
        self.path, self.unused, self.scheduled, self.group = path, unused, scheduled, group

    def __repr__(self) -> str:
        return _slots_repr(self)

    @property
    def segment(self) -> str:
        """What this call adds to the paths of the tensors inside it."""
        return self.name if self.path is None else self.path

    @property
    def label(self) -> str:
        """How tables name the call: its path segment, with the repetitions it covers when it is one
        run of a layer schedule (`layers.2..5`, `layers.6`) or a stack's layers after one made apart
        (T5's `encoder.block.1..5` beside `encoder.block.0`, which holds the relative bias)."""
        base = self.segment or self.name
        if not self.scheduled and not (self.indexed and self.start > 0):
            return base
        last = self.start + self.repeat - 1
        return f"{base}.{self.start}" if last == self.start else f"{base}.{self.start}..{last}"

    def sliced(self, values: tuple, i: int, select) -> tuple:
        """The inputs repetition i gets from the call's `values`: an input the call slices (`each:`)
        as `select(value, dim, self.start + i, position)` gives its index along that dim, the rest whole."""
        if not self.each:
            return values
        return tuple(value if dim is None else select(value, dim, self.start + i, k)
                     for k, (value, dim) in enumerate(zip(values, self.each)))

    def rep_path(self, prefix: str, i: int) -> str:
        base = join(prefix, self.segment)
        return f"{base}.{self.start + i}" if self.indexed else base


Node = Union[OpNode, BlockNode]


def _slots_repr(node: Node) -> str:
    return f"{type(node).__name__}({', '.join(f'{k}={getattr(node, k)!r}' for k in node.__slots__)})"


class Graph(Record, eq=False):
    """A graph's inputs, its nodes in topological order and its named outputs."""

    name: str
    inputs: tuple[str, ...]
    nodes: dict[str, Node]  # topological order
    outputs: tuple[Ref, ...]
    loc: Loc = Loc()
    output_names: tuple[str, ...] = ()  # the names `outputs:` gives them (a mapping), else their refs
    _dag: Any = None
    _segments: Any = None

    @property
    def dag(self):
        """The wiring as a networkx DiGraph (inputs and nodes; an edge per input read)."""
        if self._dag is None:
            self._dag = wiring(self.inputs, self.nodes)
        return self._dag

    @property
    def segments(self) -> dict[str, list[tuple[str, Node]]]:
        """The nodes by the path segment their tensors' names continue with (an op node's name, a block
        call's segment), in graph order; under '' the block calls adding no segment."""
        if self._segments is None:
            index: dict[str, list[tuple[str, Node]]] = {}
            for name, node in self.nodes.items():
                segment = node.segment if isinstance(node, BlockNode) else name
                index.setdefault(segment, []).append((segment, node))
            self._segments = index
        return self._segments


def wiring(inputs, nodes: dict[str, Node]):
    """A networkx DiGraph of `inputs` and `nodes` with an edge from each input a node reads."""
    import networkx as nx
    dag = nx.DiGraph()
    dag.add_nodes_from(inputs)
    dag.add_nodes_from(nodes)
    dag.add_edges_from((ref.node, name) for name, node in nodes.items() for ref in node.inputs)
    return dag


class InputSpec(Record, frozen=True):
    """An input of the model: its shape (sizes or names of sizes), dtype and default."""

    name: str
    shape: tuple[Any, ...]  # ints or expression texts (symbolic names allowed)
    dtype: str
    loc: Loc = Loc()
    default: str | None = None  # an optional input: what a call that leaves it out gets (INPUT_DEFAULTS)


# What an optional input holds when a call leaves it out (`default:` of an input): as transformers
# fills attention_mask (ones), token_type_ids (zeros) and position_ids (0..n-1 along the last dim).
INPUT_DEFAULTS = {"zeros": "every element 0", "ones": "every element 1",
                  "arange": "0, 1, ..., n-1 along the last dimension (positions)",
                  "none": "nothing: the op reading it computes its own (position_embedding its positions, from "
                          "the ids with `pad`: RoBERTa's position_ids)"}


class SpecWarning(Record, frozen=True):
    """Something valid but probably unintended (a node whose output nobody reads)."""

    message: str
    loc: Loc = Loc()
    node: str | None = None
    hint: str | None = None

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc else ""
        node = f"node '{self.node}': " if self.node else ""
        return f"{where}{node}{self.message}" + (f"\n  fix: {self.hint}" if self.hint else "")


class Model(Record, eq=False):
    """A built model as data (`archgraph.Model` adds the analyses as methods)."""

    name: str
    graph: Graph
    inputs: dict[str, InputSpec]
    variables: dict[str, Any]
    output_names: tuple[str, ...]
    description: str = ""
    source: str = "<spec>"
    bindings: dict[str, Any] = factory(dict)  # --set values that are not variables
    warnings: list[SpecWarning] = factory(list)
    constraints: list = factory(list)  # spec.constraints.Constraint: what sizes satisfy
    decided: set[str] = factory(set)  # symbolic build: names a choice depended on
    conditions: list = factory(list)  # symbolic build: relations the checks relied on
    overrides: str = ""  # what a spec that extends another sets there ("child.yaml sets H = 770 (child.yaml:5)")
    rebuild: Any = None  # settings -> the same spec built with them as well (passes.resize: another input size)
    files: tuple[str, ...] = ()  # the files the load read (the spec, those it extends or uses, a config.json)
    notes: list[str] = factory(list)  # what the load tells beside warnings (sizes it checked at)
    values: str = ""  # the file of buffer values `to_module` loads (`values:`, resolved beside the spec)
    stored: Any = None  # a GGUF file's weights as stored: ggml type -> (tensors, elements, bytes)


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


def read_inputs(graph: Graph, cache: dict | None = None) -> frozenset[str]:
    """The inputs of `graph` that reach an op or an output (the rest may be left out).

    A block call reads an argument only where its body reads the matching input, so an
    input that every call passes on to a switched-off sub-layer (BERT's
    `encoder_hidden_states` without cross-attention) is not read.
    """
    cache = {} if cache is None else cache
    if id(graph) in cache:
        return cache[id(graph)]
    read = {ref.node for ref in graph.outputs}
    for node in graph.nodes.values():
        if isinstance(node, OpNode):
            read.update(ref.node for ref in node.inputs)
            continue
        body_reads = read_inputs(node.body, cache)
        read.update(ref.node for ref, name in zip(node.inputs, node.body.inputs) if name in body_reads)
    cache[id(graph)] = result = frozenset(name for name in graph.inputs if name in read)
    return result
