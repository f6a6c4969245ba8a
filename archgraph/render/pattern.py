"""Layer schedules that repeat a pattern, for drawing them once.

A call whose repetitions differ is built as one BlockNode per run of equal repetitions
(`layers#0`, `layers#1`, ..., `layers`).  When the runs repeat with a period (Jamba: Mamba and
MLP, Mamba and MoE, ..., attention every eighth layer), a diagram draws the first period and
says how often it repeats, instead of one box per run.

>>> from archgraph import load
>>> repeating(load("gpt2").graph)
{}
"""
from __future__ import annotations

from dataclasses import dataclass

from ..graph import BlockNode, Graph


@dataclass(frozen=True)
class Pattern:
    """The runs `drawn` (one period) stand for those in `skipped`; `layers` repetitions in all,
    `period` of them in one period."""

    drawn: tuple[str, ...]
    skipped: tuple[str, ...]
    segment: str
    start: int
    layers: int
    period: int

    @property
    def label(self) -> str:
        """`layers.0..31: the 8 layers of layers.0..7 repeat (4 × 8)`."""
        whole, rest = divmod(self.layers, self.period)
        times = f"{whole} × {self.period}" + (f" + {rest}" if rest else "")
        first, last = self.start, self.start + self.layers - 1
        return (f"{self.segment}.{first}..{last}: the {self.period} layers of "
                f"{self.segment}.{first}..{first + self.period - 1} repeat ({times})")


def repeating(graph: Graph) -> dict[str, Pattern]:
    """The first run of each schedule of `graph` whose runs repeat with a period of at least two
    runs, covered twice or more (the last period may be cut short) -> its Pattern."""
    out: dict[str, Pattern] = {}
    for runs in _schedules(graph):
        period = _period([(id(n.body), n.repeat) for n in runs])
        if period is None:
            continue
        layers = sum(n.repeat for n in runs)
        out[runs[0].name] = Pattern(tuple(n.name for n in runs[:period]), tuple(n.name for n in runs[period:]),
                                    runs[0].segment, runs[0].start, layers, sum(n.repeat for n in runs[:period]))
    return out


def _schedules(graph: Graph) -> list[list[BlockNode]]:
    """The runs of each scheduled call, in order (consecutive nodes of one segment, start after start)."""
    groups: list[list[BlockNode]] = []
    for node in graph.nodes.values():
        if not (isinstance(node, BlockNode) and node.scheduled):
            continue
        last = groups[-1][-1] if groups else None
        if last is not None and last.segment == node.segment and last.block == node.block \
                and last.start + last.repeat == node.start:
            groups[-1].append(node)
        else:
            groups.append([node])
    return groups


def _period(seq: list[tuple[int, int]]) -> int | None:
    """The smallest p >= 2 with seq[i] == seq[i - p] for every i >= p (the last item may hold fewer
    repetitions) and len(seq) >= 2p; None when there is none."""
    for p in range(2, len(seq) // 2 + 1):
        if all(seq[i] == seq[i - p] or (i == len(seq) - 1 and seq[i][0] == seq[i - p][0]
                                        and seq[i][1] < seq[i - p][1]) for i in range(p, len(seq))):
            return p
    return None


def kinds(graph: Graph) -> list[str]:
    """The ops of a block's body that hold parameters, norms and embeddings aside, each once, in
    order (`mamba_mixer`, `moe`): what tells the runs of a layer schedule apart."""
    found: list[str] = []
    for node in graph.nodes.values():
        if isinstance(node, BlockNode):
            found += [k for k in kinds(node.body) if k not in found]
        elif node.op.category not in ("norm", "embedding") and any(True for _ in node.op.params()) \
                and node.op.op_name not in found:
            found.append(node.op.op_name)
    return found


def places(runs: list[BlockNode], j: int, period: int) -> str:
    """Where run `j` of a period comes again, as a table names it: `0, 2 .. 10` (runs 0, 2, ..., 10),
    `0..1, 8..9 .. 24..25` (runs of two layers)."""
    found = [runs[k].label[len(runs[k].segment) + 1:] if runs[k].segment else runs[k].label
             for k in range(j, len(runs), period)]
    return found[0] + ("" if len(found) == 1 else f", {found[1]}" + (f" .. {found[-1]}" if len(found) > 2 else ""))


def call_name(node: BlockNode, name: str) -> str:
    """What a block's box, frame or chart part is called: a run of a schedule by its layers
    (`layers.2..5`, not its key), a stack's layers after one made apart by theirs (T5's
    `encoder.block.1..5` beside `encoder.block.0`), else its name in the graph."""
    return node.label if node.scheduled or (node.indexed and node.start) else name


def picked(dim: int, rank: int, index: str = "i") -> str:
    """How a repetition's slice of an input it reads `each: dim` of is written, as in PyTorch:
    `[:, :, i]` (dim 2), `[3]` (dim 0 of repetition 3).

    >>> picked(2, 4), picked(-1, 3, "5")
    ('[:, :, i]', '[:, :, 5]')
    """
    return "[" + ", ".join([":"] * (dim % rank) + [index]) + "]"


def call_inputs(node: BlockNode, shapes: list) -> list[str]:
    """A block call's inputs as tables show them: `per_layer_inputs[:, :, i]` for one it slices."""
    each = node.each or (None,) * len(node.inputs)
    return [str(ref) if dim is None or not isinstance(shape, tuple) else f"{ref}{picked(dim, len(shape))}"
            for ref, dim, shape in zip(node.inputs, each, shapes)]


def differing(runs: list[BlockNode]) -> dict[str, dict[str, list]] | None:
    """When the runs' bodies hold the same nodes (names, ops, inputs, calls) with as many parameters
    each and differ only in op hyperparameters (a WaveNet's eight kinds of layer, by dilation):
    {node path in the body: {hyperparameter: its value in each run}}; None when they differ in more.

    >>> from archgraph.graph import Graph
    >>> differing([]) is None
    True
    """
    if len(runs) < 2 or len({id(r.body) for r in runs}) < 2:
        return None
    found: dict[str, dict[str, list]] = {}
    return found if _same_but_args([r.body for r in runs], "", found) else None


def _same_but_args(bodies: list[Graph], prefix: str, found: dict) -> bool:
    names = list(bodies[0].nodes)
    if any(list(b.nodes) != names or b.outputs != bodies[0].outputs for b in bodies[1:]):
        return False
    for name in names:
        nodes = [b.nodes[name] for b in bodies]
        first = nodes[0]
        if any(type(n) is not type(first) or n.inputs != first.inputs for n in nodes[1:]):
            return False
        path = f"{prefix}{name}"
        if isinstance(first, BlockNode):
            if any((n.block, n.repeat, n.shared) != (first.block, first.repeat, first.shared) for n in nodes[1:]) \
                    or not _same_but_args([n.body for n in nodes], path + ".", found):
                return False
            continue
        if any(type(n.op) is not type(first.op) or (n.category, n.trainable, n.ties) !=
               (first.category, first.trainable, first.ties) or _count(n) != _count(first) for n in nodes[1:]):
            return False
        values = [n.op.hparams() for n in nodes]
        for key in values[0]:
            if any(v[key] != values[0][key] for v in values[1:]):
                found.setdefault(path, {})[key] = [v[key] for v in values]
    return True


def _count(node) -> int:
    return sum(t.count for t in node.op.params())


def values_text(values: list) -> str:
    """A hyperparameter's value in each kind, in order: `1, 2, 4 .. 128`, or each when few.

    >>> values_text([1, 2, 4, 8, 16, 32, 64, 128]), values_text([3, 5])
    ('1, 2, 4 .. 128', '3, 5')
    """
    shown = [str(v) for v in values]
    return ", ".join(shown) if len(shown) <= 4 else ", ".join(shown[:3]) + f" .. {shown[-1]}"
