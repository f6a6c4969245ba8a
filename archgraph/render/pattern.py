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
from ..passes.kinds import differences, kinds_of, schedules


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


def run_kinds(runs: list) -> list[str]:
    """What tells each run of a period apart: the parameter-holding ops not every run has
    (`mlp`, `moe`), or all of a run's own when it has none of those."""
    each = [kinds(n.body) for n in runs]
    common = set.intersection(*(set(k) for k in each)) if each else set()
    return ["+".join([k for k in ks if k not in common] or ks or [n.block]) for ks, n in zip(each, runs)]


def kinds_text(runs: list[BlockNode]) -> str:
    """A schedule's kinds of layer and how many layers each is, as the explorer's hover says it:
    `mlp: 6 layers (0, 2, 4, ..., 10); moe: 6 layers (1, 3, 5, ..., 11)`, or for kinds that differ
    only in arguments `48, one layer each, alike but for scale 0.25, 0.125, 0.08333, ..., 0.005208`.

    >>> kinds_text([])
    ''
    """
    bodies = kinds_of(runs)
    where: dict[int, list[int]] = {id(b): [] for b in bodies}
    for r in runs:
        where[id(r.body)] += range(r.start, r.start + r.repeat)
    counts = [len(where[id(b)]) for b in bodies]
    args = differing(runs)
    if args is not None:
        each = (f"{'one layer' if counts[0] == 1 else f'{counts[0]} layers'} each" if len(set(counts)) == 1
                else ", ".join(map(str, counts)) + " layers")
        values = "; ".join(dict.fromkeys(f"{k} {values_text(v)}" for found in args.values() for k, v in found.items()))
        return f"{len(bodies)}, {each}, alike but for {values}"
    names = dict(zip((id(r.body) for r in runs), run_kinds(runs)))
    return "; ".join(f"{names[id(b)]}: {n} layer{'s' if n > 1 else ''} ({indices_text(where[id(b)])})"
                     for b, n in zip(bodies, counts))


def places(runs: list[BlockNode], j: int, period: int) -> str:
    """Where run `j` of a period comes again, its layers as `indices_text` writes them: `0, 2, 4, ..., 10`
    (runs 0, 2, ..., 10), `0..1, 8..9, 16..17, 24..25` (runs of two layers)."""
    found: list[int] = []
    for k in range(j, len(runs), period):
        text = runs[k].label[len(runs[k].segment) + 1:] if runs[k].segment else runs[k].label
        first, _, last = text.partition("..")
        found += range(int(first), int(last or first) + 1)
    return indices_text(found)


def indices_text(indices: list[int]) -> str:
    """Layer indices as every table, the diagram and the page write them: ranges `0..2, 4..6` (at
    most five, then `0..4, 6..10, 12..16, ..., 60..61`), or every k-th as `0, 2, 4, ..., 22`.

    >>> indices_text([0, 1, 2, 4, 5, 6]), indices_text(list(range(0, 24, 2))), indices_text([5, 11])
    ('0..2, 4..6', '0, 2, 4, ..., 22', '5, 11')
    """
    steps = {b - a for a, b in zip(indices, indices[1:])}
    if len(steps) == 1 and len(indices) > 4 and steps != {1}:
        return ", ".join(map(str, indices[:3])) + f", ..., {indices[-1]}"
    ranges: list[list[int]] = []
    for i in indices:
        if ranges and i == ranges[-1][1] + 1:
            ranges[-1][1] = i
        else:
            ranges.append([i, i])
    shown = [f"{a}..{b}" if b > a else str(a) for a, b in ranges]
    return ", ".join(shown if len(shown) <= 5 else shown[:3] + ["...", shown[-1]])


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
    """When the runs' kinds (their distinct bodies) hold the same nodes, ops and wiring with as many
    parameters each and differ only in op hyperparameters (a WaveNet's eight kinds of layer, by
    dilation; GPT-2's attention scaled by the inverse layer index): {node path in the body:
    {hyperparameter: its value in each kind}}; None when they differ in more, or are one kind.

    >>> differing([]) is None
    True
    """
    bodies = kinds_of(runs)
    found = differences(runs) if len(bodies) > 1 else None
    if found is None or any(_counts(b) != _counts(bodies[0]) for b in bodies[1:]):
        return None
    out: dict[str, dict[str, list]] = {}
    for d in found:
        out.setdefault(d.node, {})[d.field] = list(d.values)
    return out


def alike(graph: Graph) -> dict[str, tuple[list[BlockNode], dict] | None]:
    """The schedules of `graph` whose kinds differ only in arguments (`differing`), periodic or not,
    each one row of a table: its first run -> (every run, the arguments), the others -> None."""
    out: dict[str, tuple[list[BlockNode], dict] | None] = {}
    for runs in schedules(graph):
        args = differing(runs)
        if args is not None:
            out.update({r.name: None for r in runs[1:]}, **{runs[0].name: (runs, args)})
    return out


def _counts(graph: Graph) -> list:
    return [_counts(n.body) if isinstance(n, BlockNode) else sum(t.count for t in n.op.params())
            for n in graph.nodes.values()]


def values_text(values: list) -> str:
    """The values an argument takes in a schedule's kinds, each once, in the order the kinds come, as
    `indices_text` writes indices: `1, 2, 4, ..., 128`, `3..7` (whole numbers one apart), each when
    at most four; a fraction to four significant digits (GPT-2's scale by inverse layer index).

    >>> values_text([1, 2, 4, 8, 16, 32, 64, 128]), values_text([3, 4, 5, 6, 7]), values_text([None, 256])
    ('1, 2, 4, ..., 128', '3..7', 'None, 256')
    >>> values_text([0.125 / (i + 1) for i in range(48)])
    '0.125, 0.0625, 0.04167, ..., 0.002604'
    """
    distinct = list({repr(v): v for v in values}.values())
    if len(distinct) > 2 and all(type(v) is int for v in distinct) and \
            distinct == list(range(distinct[0], distinct[0] + len(distinct))):
        return f"{distinct[0]}..{distinct[-1]}"
    shown = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in distinct]
    return ", ".join(shown) if len(shown) <= 4 else ", ".join(shown[:3]) + f", ..., {shown[-1]}"
