"""The parameter pass: every learnable tensor once, tied and shared tensors marked.

Totals are computed per body graph and multiplied by repetitions (a shared
repetition adds nothing), so a 1,000-layer stack costs what one layer does.

>>> from archgraph import load
>>> load("bert-base-uncased").params().total
109482240
"""
from __future__ import annotations

from collections import Counter
from typing import Iterator, NamedTuple

from ..dtypes import ELEMENT_BYTES
from ..graph import BlockNode, Graph, Model, OpNode, join
from ..spec.ties import is_relative, tie_owner
from ..record import Record, factory


class Totals(Record):
    """Counts of one graph (or one repetition of a block)."""

    total: int = 0          # learnable elements, each tensor once
    trainable: int = 0
    buffers: int = 0        # non-learnable tensors (running statistics, fixed tables)
    buffers_by_dtype: Counter = factory(Counter)  # their elements by element type (int64, bool, float32)
    tied: int = 0           # elements of tensors that reuse another tensor (not in total)
    complex: int = 0        # of total, complex elements (a complex64 parameter): two real values each
    complex_trainable: int = 0
    idle: int = 0           # parameters a token does not touch (experts a router does not pick)
    by_category: Counter = factory(Counter)
    tied_by_category: Counter = factory(Counter)

    @property
    def non_trainable(self) -> int:
        return self.total - self.trainable

    @property
    def buffer_bytes(self) -> int:
        """Bytes of the buffers, each at its own dtype (8 for an int64 position, 1 for a bool mask)."""
        return sum(n * ELEMENT_BYTES[dtype] for dtype, n in self.buffers_by_dtype.items())

    @property
    def values(self) -> int:
        """Real values of the learnable tensors: a complex element is two (its real and imaginary parts,
        each at the weights' dtype: complex64 beside float32)."""
        return self.total + self.complex

    @property
    def trainable_values(self) -> int:
        return self.trainable + self.complex_trainable

    @property
    def active(self) -> int:
        """Parameters one token touches: all but the routed experts it does not pick."""
        return self.total - self.idle

    def add(self, other: "Totals", times: int = 1) -> None:
        self.total += other.total * times
        self.trainable += other.trainable * times
        self.buffers += other.buffers * times
        self.tied += other.tied * times
        self.complex += other.complex * times
        self.complex_trainable += other.complex_trainable * times
        self.idle += other.idle * times
        for k, v in other.buffers_by_dtype.items():
            self.buffers_by_dtype[k] += v * times
        for k, v in other.by_category.items():
            self.by_category[k] += v * times
        for k, v in other.tied_by_category.items():
            self.tied_by_category[k] += v * times

    def as_shared_copy(self) -> "Totals":
        """What a repetition of a shared block adds: nothing new, all of it reused."""
        reused = Counter(self.by_category)
        reused.update(self.tied_by_category)
        return Totals(tied=self.total + self.tied, by_category=Counter({k: 0 for k in self.by_category}),
                      tied_by_category=reused)


class TensorRow(NamedTuple):
    """One tensor of a node: its local name, shape and element count, and what kind of tensor it is
    (a tuple: a node listing makes one per tensor of every layer)."""

    name: str                 # local name: weight, q_proj.bias
    shape: tuple[int, ...]
    count: int
    buffer: bool = False
    tied_to: str | None = None  # absolute path of the tensor this one reuses
    persistent: bool = True     # a buffer that state_dict() saves
    dtype: str = "float32"      # a buffer's element type (torch's name: int64, bool, complex64)


def node_tensors(node: OpNode, model: Model | None = None, where: tuple[Graph, str] | None = None) -> list[TensorRow]:
    """The node's tensors; with `model`, a tie as the absolute path of the tensor that holds the values
    (a relative tie needs `where`, the graph instance holding the node and its path: without it, a
    relative tie stays as written)."""
    rows = []
    for t in node.op.params():
        target = node.ties.get(t.name)
        if target is not None and model is not None and (where is not None or not is_relative(target)):
            target = tie_owner(model, target, *(where or ()))
        rows.append(TensorRow(t.name, t.shape, t.count, False, target))
    rows += [TensorRow(t.name, t.shape, t.count, True, persistent=t.persistent, dtype=t.dtype)
             for t in node.op.buffers()]
    return rows


def op_totals(node: OpNode) -> Totals:
    t = Totals()
    for tensor in node.op.params():
        if tensor.name in node.ties:
            t.tied += tensor.count
            t.by_category[node.category] += 0
            t.tied_by_category[node.category] += tensor.count
            continue
        t.total += tensor.count
        t.trainable += tensor.count if node.trainable else 0
        if tensor.dtype.startswith("complex"):
            t.complex += tensor.count
            t.complex_trainable += tensor.count if node.trainable else 0
        t.by_category[node.category] += tensor.count
    for b in node.op.buffers():
        t.buffers += b.count
        t.buffers_by_dtype[b.dtype] += b.count
    if not node.ties:
        t.idle = node.op.idle_params()
    return t


def graph_totals(graph: Graph, cache: dict | None = None) -> Totals:
    cache = {} if cache is None else cache
    if id(graph) in cache:
        return cache[id(graph)]
    out = Totals()
    same: Counter = Counter()  # (op, trainable, category) -> nodes: equal ops are counted once, then multiplied
    for node in graph.nodes.values():
        if node.__class__ is OpNode:
            if node.ties:
                out.add(op_totals(node))
                continue
            key = (id(node.op), node.trainable, node.category)
            if key not in cache:
                cache[key] = op_totals(node)
            same[key] += 1
        else:
            out.add(call_totals(node, graph_totals(node.body, cache)))
    for key, times in same.items():
        out.add(cache[key], times)
    cache[id(graph)] = out
    return out


def call_totals(node: BlockNode, body: Totals) -> Totals:
    """A block call's counts from one repetition's: shared repetitions add nothing new."""
    out = Totals()
    if node.repeat:
        out.add(body)
        out.add(body.as_shared_copy() if node.shared else body, node.repeat - 1)
    return out


class BlockRow(Record):
    """A block call: its path, repetitions and counts, with nested calls."""

    path: str
    block: str
    repeat: int
    shared: bool
    per_repetition: Totals
    total: Totals
    children: list["BlockRow"]


class ParamReport(Record):
    """The parameter pass's result: the totals, the block tree, and every node and tensor on request."""

    model: Model
    totals: Totals
    blocks: list[BlockRow]
    cache: dict  # graph id -> Totals, for renderers that show per-block counts

    @property
    def total(self) -> int:
        return self.totals.total

    def nodes(self) -> Iterator[tuple[str, OpNode, int, list[TensorRow]]]:
        """(path, node, new params, tensors) for every op node, repetitions expanded.

        Repetitions of a shared block after the first report 0 new params and
        their tensors as tied to the first repetition's.
        """
        yield from _expand(self.model, self.model.graph, "", None, {})

    def tensors(self) -> Iterator[tuple[str, TensorRow]]:
        """Every parameter by full name, as `named_parameters(remove_duplicate=False)` lists them:
        tied tensors under each name that uses them, a shared block's tensors once under its path."""
        yield from named_tensors(self.model)

    def shared(self) -> list["Shared"]:
        """Each tensor (or shared block) used more than once, counted once: where it is, its
        elements and how many times the model uses it; `totals.tied` is the sum of the uses not
        counted again, (uses - 1) x params."""
        return shared_tensors(self.model, self.cache)

    def state_dict(self) -> Iterator[tuple[str, TensorRow]]:
        """What PyTorch's `state_dict()` of the same model holds, by name: every parameter (tied ones
        under each name) and every persistent buffer; a shared block's once, under its path."""
        yield from named_tensors(self.model, buffers="persistent")


def _expand(model: Model, graph: Graph, prefix: str, copy_of: str | None, rows_of: dict):
    """`copy_of`: the path this subtree repeats when it is a later repetition of a shared block.
    `rows_of`: the tensors of each node without ties, made once for all its repetitions (the
    same list each time: callers read it)."""
    for name, node in graph.nodes.items():
        if isinstance(node, OpNode):
            rows = _rows(node, model, graph, prefix, rows_of)
            if copy_of is not None:
                first = join(copy_of, name)
                rows = [r if r.buffer or r.tied_to else r._replace(tied_to=join(first, r.name)) for r in rows]
            new = sum(r.count for r in rows if not r.buffer and r.tied_to is None)
            yield join(prefix, name), node, new, rows
            continue
        for i in range(node.repeat):
            if copy_of is not None:
                inner = node.rep_path(copy_of, 0 if node.shared else i)
            else:
                inner = node.rep_path(prefix, 0) if node.shared and i > 0 else None
            yield from _expand(model, node.body, node.rep_path(prefix, i), inner, rows_of)


def named_tensors(model: Model, buffers: str = "none") -> Iterator[tuple[str, TensorRow]]:
    """Every parameter by full name (tied ones under each name that uses them, a shared block's
    once, under its path), and the buffers: `none`, `persistent` (what state_dict() holds) or `all`."""
    yield from _named(model, model.graph, "", buffers, {})


def _rows(node: OpNode, model: Model, graph: Graph, prefix: str, rows_of: dict) -> list[TensorRow]:
    """node_tensors of `node` where it stands; once per node when it ties nothing (its tensors are then
    the same in every repetition: an 80-layer listing asks each layer's nodes 80 times)."""
    if node.ties:
        return node_tensors(node, model, (graph, prefix))
    rows = rows_of.get(id(node))
    if rows is None:
        rows = rows_of[id(node)] = node_tensors(node)
    return rows


def _named(model: Model, graph: Graph, prefix: str, buffers: str, rows_of: dict):
    for name, node in graph.nodes.items():
        if isinstance(node, OpNode):
            for row in _rows(node, model, graph, prefix, rows_of):
                if not row.buffer or buffers == "all" or (buffers == "persistent" and row.persistent):
                    yield join(join(prefix, name), row.name), row
        elif node.shared:
            if node.repeat:
                yield from _named(model, node.body, join(prefix, node.segment), buffers, rows_of)
        else:
            for i in range(node.repeat):
                yield from _named(model, node.body, node.rep_path(prefix, i), buffers, rows_of)


class Shared(NamedTuple):
    """A tensor that ties make other nodes use (`shared.weight`, used 4 times in t5-small), or a
    shared block whose every repetition reuses the first's tensors (`block: True`)."""

    path: str
    params: int     # elements of the one copy counted
    uses: int       # the copy counted and each reuse
    block: bool = False

    @property
    def reused(self) -> int:
        """The elements its reuses would add if they were counted: (uses - 1) x params."""
        return (self.uses - 1) * self.params


def shared_tensors(model: Model, cache: dict | None = None) -> list[Shared]:
    """Every tensor and shared block that is used more than once, most reused elements first
    (walks only the bodies that tie or share something, each repetition of those)."""
    cache = {} if cache is None else cache
    uses: Counter = Counter()
    sizes: dict[tuple[str, bool], int] = {}
    _uses(model, model.graph, "", 1, uses, sizes, cache, {})
    found = [Shared(path, sizes[path, block], n + 1, block) for (path, block), n in uses.items()]
    return sorted(found, key=lambda s: (-s.reused, s.path))


def _uses(model: Model, graph: Graph, prefix: str, times: int, uses: Counter, sizes: dict, cache: dict,
          reuses: dict) -> None:
    """Adds to `uses` the reuses in `graph` (at `prefix`, evaluated `times` times)."""
    for name, node in graph.nodes.items():
        if isinstance(node, OpNode):
            for t in node.op.params():
                if t.name in node.ties:
                    owner = tie_owner(model, node.ties[t.name], graph, prefix)
                    uses[owner, False] += times
                    sizes[owner, False] = t.count
            continue
        if not node.repeat or not (node.shared and node.repeat > 1 or _reuses(node.body, reuses)):
            continue
        if node.shared:
            first = join(prefix, node.segment)  # where state_dict() holds its tensors
            if node.repeat > 1:
                uses[first, True] += times * (node.repeat - 1)
                sizes[first, True] = graph_totals(node.body, cache).total
            _uses(model, node.body, first, times * node.repeat, uses, sizes, cache, reuses)
            continue
        for i in range(node.repeat):
            _uses(model, node.body, node.rep_path(prefix, i), times, uses, sizes, cache, reuses)


def _reuses(graph: Graph, memo: dict) -> bool:
    """Whether `graph` ties a tensor or calls a shared block anywhere inside it."""
    if id(graph) not in memo:
        memo[id(graph)] = any(node.ties if isinstance(node, OpNode) else
                              (node.shared and node.repeat > 1) or _reuses(node.body, memo)
                              for node in graph.nodes.values())
    return memo[id(graph)]


def count_params(model: Model) -> ParamReport:
    cache: dict = {}
    totals = graph_totals(model.graph, cache)
    return ParamReport(model, totals, _block_rows(model.graph, "", cache), cache)


def _block_rows(graph: Graph, prefix: str, cache: dict) -> list[BlockRow]:
    rows = []
    for name, node in graph.nodes.items():
        if not isinstance(node, BlockNode):
            continue
        per = graph_totals(node.body, cache)
        total = call_totals(node, per)
        path = join(prefix, node.segment)
        rows.append(BlockRow(path, node.block, node.repeat, node.shared, per, total,
                             _block_rows(node.body, path + (".*" if node.indexed else ""), cache)))
    return rows
