"""The model as a Graphviz diagram (DOT source; images through `archgraph.render.dot`).

Nodes show the op, its key hyperparameters and its parameter count; edges carry
the tensor shapes of a shape pass; a repeated block is one cluster labelled
"× N" (every repetition with `expand=True`); blocks nested deeper than `depth`
are one box.  The source is deterministic: the same model and options give the
same bytes, so tests compare it with golden files.

>>> from archgraph import load
>>> "transformer.h × 12" in diagram_dot(load("gpt2"))
True
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from ..names import dot_html
from typing import Any, Literal

import graphviz

from ..dims import fmt_shape
from ..errors import ArchgraphError
from ..graph import BlockNode, Graph, Model, OpNode, join, read_inputs
from ..passes.params import ParamReport, call_totals, count_params, graph_totals, node_tensors
from ..passes.shapes import ShapeReport, infer_shapes
from ..passes.kinds import differences, schedules
from ..passes.walk import Run
from ..record import MISSING
from ..spec.ties import find_tensor, tie_owner
from .palette import SHARE_BINS, category_color, human, share_bin
from .pattern import Pattern, call_name, kinds, picked, repeating, values_text

# Hyperparameters that are noise in a figure (naming and numerics, not architecture).
HIDDEN_HPARAMS = frozenset({"eps", "weight_layout", "names", "momentum", "track_running_stats"})
FONT = "Helvetica"
End = tuple[str, Any]  # (DOT node id, shape of the tensor it hands on)


@dataclass(frozen=True)
class DiagramOptions:
    expand: bool = False          # draw every repetition of a repeated block
    depth: int | None = None      # blocks nested deeper than this are one box (0: every block)
    color_by: Literal["share", "category"] = "share"
    rankdir: Literal["TB", "LR"] = "TB"
    collapsed: bool = False       # `depth` was chosen to keep the diagram readable (the title says so)


@dataclass
class _Scope:
    """One drawn graph: a model's top level, or one (drawn) repetition of a block's body."""

    graph: Graph
    run: Run
    prefix: str                   # path of this repetition (`transformer.h.0`)
    inputs: dict[str, End]        # graph input name -> what feeds it
    level: int                    # block nesting: 0 at the top
    times: int                    # how often these weights occur in the model (0: shared copy)
    outs: dict[str, list[End]] = field(default_factory=dict)

    def end(self, ref) -> End | None:
        """What feeds `ref`; None for an input its call left out (one the body never reads)."""
        if ref.node in self.graph.inputs:
            return self.inputs.get(ref.node)
        return self.outs[ref.node][ref.index]


MAX_BOXES = 5_000  # boxes a diagram may have: Graphviz takes minutes, and no one reads, beyond


def drawn_boxes(graph: Graph, options: DiagramOptions, level: int = 0, cache: dict | None = None) -> int:
    """How many boxes the diagram of `graph` has with these options (ops, and blocks drawn as one)."""
    cache = {} if cache is None else cache
    key = (id(graph), level)
    if key not in cache:
        count = 0
        skipped = set() if options.expand else {n for p in repeating(graph).values() for n in p.skipped}
        for name, node in graph.nodes.items():
            if name in skipped:
                continue
            if isinstance(node, OpNode):
                count += 1
            elif node.repeat == 0:
                continue
            elif options.depth is not None and level + 1 > options.depth:
                count += 1
            else:
                count += (node.repeat if options.expand else 1) * drawn_boxes(node.body, options, level + 1, cache)
        cache[key] = count
    return cache[key]


READABLE_BOXES = 40  # boxes a diagram has by default: nested blocks beyond that are drawn as one box


def readable(model: Model, options: DiagramOptions) -> DiagramOptions:
    """The one collapsing rule: without --depth or --expand, draw blocks as deep as fits in
    READABLE_BOXES boxes, and the deeper ones as single boxes (a ResNet's stages, a T5's layers),
    each with its repeat count, its parameters and its output shape on the edge."""
    if options.depth is not None or options.expand or drawn_boxes(model.graph, options) <= READABLE_BOXES:
        return options
    depth = 0
    while drawn_boxes(model.graph, dataclasses.replace(options, depth=depth + 1)) <= READABLE_BOXES:
        depth += 1
    return dataclasses.replace(options, depth=depth, collapsed=True)


def check_drawable(model: Model, options: DiagramOptions) -> None:
    """Refuse a diagram of more than MAX_BOXES boxes, saying what would draw instead."""
    boxes = drawn_boxes(model.graph, options)
    if boxes <= MAX_BOXES:
        return
    hint = "group the nodes into blocks (a block called with 'repeat:' is drawn once) and draw again"
    if options.expand and drawn_boxes(model.graph, dataclasses.replace(options, expand=False)) <= MAX_BOXES:
        hint = "draw each repeated block once: leave out --expand"
    elif any(isinstance(n, BlockNode) for n in model.graph.nodes.values()):
        for depth in range(0, 4):
            if drawn_boxes(model.graph, dataclasses.replace(options, expand=False, depth=depth)) <= MAX_BOXES:
                hint = f"draw nested blocks as single boxes: --depth {depth}"
                break
    raise ArchgraphError(f"the diagram would have {boxes:,} boxes; archgraph draws at most {MAX_BOXES:,} "
                         "(Graphviz would take minutes, and the picture could not be read)", hint=hint)


def diagram(model: Model, options: DiagramOptions = DiagramOptions(),
            params: ParamReport | None = None, shapes: ShapeReport | None = None) -> graphviz.Digraph:
    """The diagram of `model` as a graphviz.Digraph (shapes from `model.shapes()` unless given);
    a diagram of more than MAX_BOXES boxes is refused (ArchgraphError)."""
    options = readable(model, options)
    check_drawable(model, options)
    return _Drawer(model, params or count_params(model), shapes or infer_shapes(model), options).draw()


def diagram_dot(model: Model, options: DiagramOptions = DiagramOptions(), **reports) -> str:
    """DOT source of the diagram."""
    return diagram(model, options, **reports).source


def diagram_image(model: Model, options: DiagramOptions = DiagramOptions(), fmt: str = "svg", **reports) -> bytes:
    """The diagram laid out by Graphviz's dot, as `fmt` (svg, png or pdf) bytes.  When dot fails (crashes,
    refuses the source, takes too long) the ArchgraphError names the model and the option that draws it
    with fewer boxes."""
    from .image import DotFailed, dot_image
    source = diagram_dot(model, options, **reports)
    try:
        return dot_image(source, fmt)
    except DotFailed as failure:
        raise ArchgraphError(f"cannot draw {model.name}: {failure.message}",
                             hint=coarser(model, options)) from None


def coarser(model: Model, options: DiagramOptions) -> str:
    """What to type to draw `model` with fewer boxes than `options` give (a way round a Graphviz failure)."""
    drawn = readable(model, options)
    source = "write the DOT source with -o FILE.dot (no Graphviz needed) and lay it out elsewhere"
    if drawn.expand:
        return f"draw each repeated block once: leave out --expand; or {source}"
    boxes, depth = drawn_boxes(model.graph, drawn), None
    for level in range(drawn.depth if drawn.depth is not None else 64):
        if drawn_boxes(model.graph, dataclasses.replace(drawn, depth=level)) >= boxes:
            break
        depth = level
    if depth is None:
        return source
    return f"draw blocks nested deeper than {depth} as one box: --depth {depth}; or {source}"


class _Drawer:
    def __init__(self, model: Model, params: ParamReport, shapes: ShapeReport, options: DiagramOptions):
        self.model, self.params, self.shapes, self.options = model, params, shapes, options
        self.total = params.total
        self.ids: dict[str, str] = {}                     # node path -> DOT id (of the first node drawn there)
        self.redirects: list[tuple[str, int | None, str | None]] = []  # see _find
        self.edges: dict[tuple[str, str, str], None] = {}  # in drawing order, emitted last
        self.used: set[str] = set()                       # legend entries in use
        self.ties: list[tuple[str, str, str]] = []        # (node id, tensor, owner tensor path)
        self.taken: set[str] = set()                      # DOT ids of the nodes and clusters drawn (see _unique)
        self.reads: dict = {}                             # read_inputs' cache: the inputs each graph reads
        self.ranges: dict[str, dict[str, str]] = {}        # op path -> hyperparameter -> its values across kinds
        title = f"<b>{dot_html(_short(model.name))}</b> · {human(self.total)} parameters"
        if options.collapsed:
            title += (f'<br/><font point-size="11" color="#59636e">blocks nested deeper than {options.depth} '
                      f'drawn as one box; --depth N draws more</font>')
        title = f"<{title}>"
        self.dot = _SafeDigraph(
            name=_dot_id(model.name),
            graph_attr={"rankdir": options.rankdir, "label": title, "labelloc": "t", "fontsize": "18",
                        "fontname": FONT, "newrank": "true", "nodesep": "0.3", "ranksep": "0.35",
                        "compound": "true", "bgcolor": "white"},
            node_attr={"shape": "box", "style": "rounded,filled", "fontname": FONT, "fontsize": "11",
                       "color": "#555555", "margin": "0.12,0.04"},
            edge_attr={"fontname": FONT, "fontsize": "9", "fontcolor": "#444444", "color": "#555555",
                       "arrowsize": "0.6"})

    # -- the walk -------------------------------------------------------------------
    def draw(self) -> graphviz.Digraph:
        inputs = {}
        read = read_inputs(self.model.graph, self.reads)
        for name, shape in self.shapes.inputs.items():
            if name not in read:  # an optional input nothing reads (GPT-2's encoder_hidden_states) is not drawn
                continue
            node_id = f"(input) {name}"
            dtype = self.model.inputs[name].dtype
            self.dot.node(node_id, label=_html(f"<b>{dot_html(_short(name))}</b>", _small(f"{fmt_shape(shape)} {dtype}")),
                          shape="oval", style="filled", fillcolor="#f0f0f0")
            inputs[name] = (node_id, shape)
        top = _Scope(self.model.graph, self.shapes.run, "", inputs, 0, 1)
        self._graph(self.dot, top)
        for name, ref in zip(self.model.output_names, self.model.graph.outputs):
            node_id = f"(output) {name}"
            source, shape = top.end(ref)
            self.dot.node(node_id, label=_html(f"<b>{dot_html(_short(name))}</b>", _small(fmt_shape(shape))),
                          shape="oval", style="filled", fillcolor="#f0f0f0")
            self._edge(source, node_id, shape)
        for source, target, label in self.edges:  # at the top level: an edge inside a cluster pulls
            self.dot.edge(source, target, label=f" {label} " if label else "")  # its ends into it
        self._tie_edges()
        self._legend()
        return self.dot

    def _graph(self, container, scope: _Scope) -> None:
        patterns = {} if self.options.expand else repeating(scope.graph)
        alike = {} if self.options.expand else alike_kinds(scope.graph, self.params.cache)
        done: set[str] = set()
        for name, node in scope.graph.nodes.items():
            path = join(scope.prefix, name)
            if name in done:
                continue
            if isinstance(node, OpNode):
                node_id = self._op(container, scope, name, node, path)
                scope.outs[name] = [(node_id, s) for s in scope.run.values[name]]
            elif name in alike:
                done |= self._alike(container, scope, *alike[name])
            elif name in patterns:
                done |= self._pattern(container, scope, patterns[name])
            elif node.group is not None:
                done |= self._group(container, scope, name, node)
            else:
                scope.outs[name] = self._block(container, scope, name, node)

    def _group(self, container, scope: _Scope, name: str, node: BlockNode) -> set[str]:
        """The consecutive runs of a schedule that share its `group` value (a stage), in one cluster
        labelled by it, with their repetitions and parameters."""
        names = list(scope.graph.nodes)
        members = []
        for other in names[names.index(name):]:
            run = scope.graph.nodes[other]
            if not (isinstance(run, BlockNode) and run.segment == node.segment and run.group == node.group):
                break
            members.append(other)
        runs = [scope.graph.nodes[m] for m in members]
        count = sum(r.repeat for r in runs)
        params = sum(call_totals(r, graph_totals(r.body, self.params.cache)).total for r in runs)
        first, last = runs[0].start, runs[-1].start + runs[-1].repeat - 1
        where = f"{node.segment}.{first}" if first == last else f"{node.segment}.{first}..{last}"
        title = f"<b>{dot_html(str(node.group[0]))} {dot_html(str(node.group[1]))}</b>  {dot_html(where)}"
        counts = _small(f"{count} × {dot_html(node.block)} · {human(params * scope.times)} params")
        if self.options.depth is not None and scope.level + 1 > self.options.depth:  # the group as one box
            ins = [end for run in runs for ref, end in zip(run.inputs, self._read(run, _sliced(run, [
                None if r.node in members else scope.end(r) for r in run.inputs]))) if ref.node not in members]
            box = self._box_node(container, join(scope.prefix, f"{name} (group)"), [title, counts],
                                 graph_totals(runs[0].body, self.params.cache), params, scope.times, count > 1, ins)
            for index in range(first, last + 1):  # a tensor of any repetition points at the box
                self.redirects.append((join(scope.prefix, f"{node.segment}.{index}"), None, box))
            for member in members:
                scope.outs[member] = [(box, shape) for shape in scope.run.values[member]]
            return set(members)
        with container.subgraph(name=f"cluster_{join(scope.prefix, name)} (group)") as sub:
            sub.attr(label=_html(title, counts, align="left"), style="rounded,dashed", color="#777777", fontname=FONT,
                     fontsize="11", labeljust="l", margin="10")
            for member in members:
                scope.outs[member] = self._block(sub, scope, member, scope.graph.nodes[member])
        return set(members)

    def _alike(self, container, scope: _Scope, runs: list[BlockNode], found: list) -> set[str]:
        """A schedule whose kinds differ only in hyperparameters (a WaveNet's dilation), drawn as one
        stack: its first run's body, each differing value shown as its range across the kinds."""
        first, count = runs[0], sum(r.repeat for r in runs)
        segments = scope.run.nodes[first.name]
        ins = _sliced(first, [scope.end(ref) for ref in first.inputs], segments[0].run.inputs)
        rep = first.rep_path(scope.prefix, 0)
        where = f"{first.segment}.{first.start}..{first.start + count - 1} × {count}"
        kinds = len({id(r.body) for r in runs})
        per = graph_totals(first.body, self.params.cache)
        total = sum(call_totals(r, graph_totals(r.body, self.params.cache)).total for r in runs)
        ranges: dict[str, dict[str, str]] = {}
        for diff in found:
            ranges.setdefault(join(rep, diff.node), {})[diff.field] = values_text(diff.values)
        varied = sorted({f"{d.field} {values_text(d.values)}" for d in found})
        lines = [f"{kinds} kinds alike but for " + "; ".join(varied), f"{human(total * scope.times)} params"]
        for run in runs:
            if run.indexed:
                self.redirects.append((join(scope.prefix, run.segment), run.start, None))
        if self.options.depth is not None and scope.level + 1 > self.options.depth:
            box = self._box_node(container, join(scope.prefix, first.segment), [
                f"<b>{dot_html(_short(where))}</b>", _small(f"<i>{dot_html(first.block)}</i>"),
                *[_small(dot_html(t)) for t in lines]], per, total, scope.times, True, self._read(first, ins))
            self.redirects.append((join(scope.prefix, first.segment), None, box))
            outs = [(box, None)] * len(first.body.outputs)
        else:
            self.ranges.update(ranges)
            title = _html(f"<b>{dot_html(_short(where))}</b>  <i>{dot_html(first.block)}</i>",
                          *[_small(dot_html(t)) for t in lines], align="left")
            outs = self._cluster(container, scope, first, segments[0].run, rep, ins, scope.level + 1,
                                 scope.times * count, title)
        final = scope.run.values[runs[-1].name]
        for run in runs:
            scope.outs[run.name] = [(end[0], shape) for end, shape in zip(outs, final)]
        return {r.name for r in runs}

    def _pattern(self, container, scope: _Scope, pattern: Pattern) -> set[str]:
        """One period of a repeating schedule, in a dashed cluster that says how often it repeats; the
        runs it stands for hand on what its last run gives."""
        with container.subgraph(name=f"cluster_{join(scope.prefix, pattern.drawn[0])} (pattern)") as sub:
            sub.attr(label=_html(f"<b>{dot_html(_short(pattern.label))}</b>", align="left"), style="rounded,dashed",
                     color="#777777", fontname=FONT, fontsize="11", labeljust="l", margin="10")
            runs = [scope.graph.nodes[n] for n in (*pattern.drawn, *pattern.skipped)]
            for j, name in enumerate(pattern.drawn):  # shaded by every layer it stands for, not one period's
                stands = sum(r.repeat for r in runs[j::len(pattern.drawn)]) / max(runs[j].repeat, 1)
                scope.outs[name] = self._block(sub, dataclasses.replace(scope, times=scope.times * stands), name,
                                               runs[j])
        last = scope.outs[pattern.drawn[-1]]
        for name in pattern.skipped:
            scope.outs[name] = [(end[0], shape) for end, shape in zip(last, scope.run.values[name])]
        return set(pattern.drawn) | set(pattern.skipped)

    def _op(self, container, scope: _Scope, name: str, node: OpNode, path: str) -> str:
        """Draw one op node at `path`; returns its DOT id."""
        rows = node_tensors(node)
        new = sum(r.count for r in rows if not r.buffer and r.name not in node.ties)
        has_params = bool(node.op.params())
        lines = [f"<b>{dot_html(_short(name))}</b>", _small(dot_html(_op_text(node, self.ranges.get(path))))]
        if new:
            lines.append(_small(f"{human(new)} params"))
        tied = [r.name for r in rows if r.name in node.ties]
        if tied:
            lines.append(_small(f"tied: {dot_html(', '.join(tied))}"))
        if scope.times == 0 and has_params:
            lines.append(_small("shared with the first repetition"))
        buffers = sum(r.count for r in rows if r.buffer)
        if buffers:
            lines.append(_small(f"+ {human(buffers)} buffer values"))
        fill, ink = self._fill(node.category, new * scope.times, has_params and new > 0)
        node_id = self._unique(path)
        container.node(node_id, label=_html(*lines, ink=ink), fillcolor=fill)
        self.ids.setdefault(path, node_id)
        for ref in node.inputs:
            source, shape = scope.end(ref)
            self._edge(source, node_id, shape)
        for tensor, target in sorted(node.ties.items()):
            self.ties.append((node_id, tensor, tie_owner(self.model, target, scope.graph, scope.prefix)))
        return node_id

    def _block(self, container, scope: _Scope, name: str, node: BlockNode) -> list[End]:
        ins = [scope.end(ref) for ref in node.inputs]
        final = scope.run.values[name]
        if node.repeat == 0:  # an empty stack hands its inputs on
            return ins[:len(node.body.outputs)]
        level = scope.level + 1
        base = join(scope.prefix, name)
        if self.options.depth is not None and level > self.options.depth:
            return self._box(container, scope, name, node, base, _sliced(node, ins), final)
        segments = scope.run.nodes[name]
        if not self.options.expand:
            first = node.rep_path(scope.prefix, 0)
            if node.indexed:
                self.redirects.append((base, node.start, None))
            times = scope.times * (1 if node.shared else node.repeat)
            given = _sliced(node, ins, segments[0].run.inputs)
            outs = self._cluster(container, scope, node, segments[0].run, first, given, level, times,
                                 self._cluster_label(node, call_name(node, name), collapsed=True))
            return [(end[0], shape) for end, shape in zip(outs, final)]
        current, index = ins, 0
        for segment in segments:
            for _ in range(segment.count):
                rep = node.rep_path(scope.prefix, index)
                times = scope.times if index == 0 or not node.shared else 0
                local = (rep[len(scope.prefix) + 1:] if scope.prefix else rep) or name  # `path: ''`: its name
                given = _sliced(node, current, segment.run.inputs, str(node.start + index))
                outs = self._cluster(container, scope, node, segment.run, rep, given, level, times,
                                     self._cluster_label(node, local, collapsed=False))
                current = outs + current[len(outs):]
                index += 1
        return current[:len(node.body.outputs)]

    def _cluster(self, container, scope, node: BlockNode, run: Run, prefix: str, ins: list[End],
                 level: int, times: int, label: str) -> list[End]:
        with container.subgraph(name=self._unique(f"cluster_{prefix}")) as sub:
            sub.attr(label=label, style="rounded,filled", fillcolor="#f7f7f7" if level % 2 else "#ececec",
                     color="#999999", fontname=FONT, fontsize="11", labeljust="l", margin="10")
            inner = _Scope(node.body, run, prefix, dict(zip(node.body.inputs, ins)), level, times)
            self._graph(sub, inner)
            return [inner.end(ref) for ref in node.body.outputs]

    def _box(self, container, scope, name: str, node: BlockNode, base: str, ins: list[End], final) -> list[End]:
        """A block drawn as one node (below the depth limit)."""
        per = graph_totals(node.body, self.params.cache)
        total = call_totals(node, per).total
        shown = call_name(node, name)
        lines = [f"<b>{dot_html(_short(shown))}{_times(node)}</b>",
                 _small(f"<i>{dot_html(node.block)}</i>")]
        lines += [_small(dot_html(t)) for t in _count_lines(node, per.total, total)]
        if node.scheduled:  # which kind of layer this run is: the ops that hold its parameters
            lines.append(_small(dot_html(" + ".join(kinds(node.body)))))
        box = self._box_node(container, base, lines, per, total, scope.times, node.repeat > 1,
                             self._read(node, ins))
        self.redirects.append((base, None, box))
        return [(box, shape) for shape in final]

    def _box_node(self, container, box: str, lines: list[str], per, total: int, times: int, stacked: bool,
                  ins: list[End | None]) -> str:
        """One node for blocks drawn whole (a call, or a group of runs), shaded by its parameters'
        main category and share; `stacked` (repeated) draws it as a 3-D box; edges from `ins`.
        Returns its DOT id."""
        fill, ink = self._fill(max(per.by_category, key=per.by_category.get, default="other"),
                               total * times, total > 0)
        node_id = self._unique(box)
        container.node(node_id, label=_html(*lines, ink=ink), fillcolor=fill, shape="box3d" if stacked else "box",
                       style="filled")
        self.ids.setdefault(box, node_id)
        for end in filter(None, ins):
            self._edge(end[0], node_id, end[1])
        return node_id

    def _read(self, node: BlockNode, ins: list[End | None]) -> list[End | None]:
        """`ins` of a call drawn as a box, None for each its body never reads (no edge is drawn from it)."""
        read = read_inputs(node.body, self.reads)
        return [end if name in read else None for name, end in zip(node.body.inputs, ins)]

    def _unique(self, name: str) -> str:
        """A DOT id for a node or cluster at path `name` that no other has: two nodes may have one path
        (a block called with `path: ''`, twice, draws its nodes at its caller's path), and Graphviz would
        take one id in two clusters for one node, and crash."""
        node_id = name
        while node_id in self.taken:
            node_id += "'"
        self.taken.add(node_id)
        return node_id

    # -- labels, colours and edges -------------------------------------------------------
    def _cluster_label(self, node: BlockNode, path: str, collapsed: bool) -> str:
        """`transformer.h × 12  gpt2_block` and the counts; `path` is relative to the enclosing block."""
        per = graph_totals(node.body, self.params.cache).total
        total = call_totals(node, graph_totals(node.body, self.params.cache)).total
        title = f"<b>{dot_html(_short(path))}{_times(node) if collapsed else ''}</b>  <i>{dot_html(node.block)}</i>"
        counts = _count_lines(node, per, total) if collapsed else [f"{human(per)} params"]
        return _html(title, *[_small(dot_html(c)) for c in counts], align="left")

    def _fill(self, category: str, weight: int, has_params: bool) -> tuple[str, str]:
        if self.options.color_by == "category":
            if not has_params:
                self.used.add("none")
                return "#ffffff", "#000000"
            self.used.add(category)
            return category_color(category), "#000000"
        label, fill, ink = share_bin(weight / self.total if self.total else 0.0, has_params)
        self.used.add(label)
        return fill, ink

    def _edge(self, source: str, target: str, shape) -> None:
        label = fmt_shape(shape) if isinstance(shape, tuple) else shape if isinstance(shape, str) else ""
        self.edges.setdefault((source, target, label), None)

    def _tie_edges(self) -> None:
        for node_id, tensor, target in self.ties:
            owner_path = find_tensor(self.model.graph, target)[0]
            owner = self._find(owner_path)
            if owner is None or owner == node_id:
                continue
            self.used.add("tie")
            self.dot.edge(owner, node_id, label=f" tied {tensor} ", style="dashed", dir="none",
                          constraint="false", color="#b2182b", fontcolor="#b2182b")

    def _find(self, path: str) -> str | None:
        """The DOT id drawing the node at `path` (a later repetition maps to the drawn one)."""
        for _ in range(64):
            if path in self.ids:
                return self.ids[path]
            for base, first, box in self.redirects:
                if not path.startswith(base + "."):
                    continue
                if box is not None:
                    return box
                index, _, rest = path[len(base) + 1:].partition(".")
                if index.isdigit() and int(index) != first:
                    path = f"{base}.{first}.{rest}"
                    break
            else:
                return None
        return None

    def _legend(self) -> None:
        if self.options.color_by == "category":
            title = "parameters by category"
            entries = [(category_color(c), "#000000", c) for c in sorted(self.used - {"none", "tie"})]
            if "none" in self.used:
                entries.append(("#ffffff", "#000000", "no parameters"))
        else:
            title = "share of all parameters"
            entries = [(fill, ink, label) for _, label, fill, ink in SHARE_BINS if label in self.used]
            if "no parameters" in self.used:
                entries.append(("#ffffff", "#000000", "no parameters"))
        cells = "".join(f'<tr><td bgcolor="{fill}" border="1" width="14"> </td>'
                        f'<td align="left"><font point-size="9">{dot_html(label)}</font></td></tr>'
                        for fill, _, label in entries)
        tie = ('<tr><td colspan="2" align="left"><font point-size="9" color="#b2182b">- - -  tied tensor'
               '</font></td></tr>') if "tie" in self.used else ""
        label = (f'<<table border="0" cellborder="0" cellspacing="2" cellpadding="2">'
                 f'<tr><td colspan="2" align="left"><b>{dot_html(title)}</b></td></tr>{cells}{tie}</table>>')
        self.dot.node("(legend)", label=label, shape="plaintext", style="", fontsize="10")


def _dot_id(name: str) -> str:
    """A DOT id for any node name: backslashes kept literal (graphviz reads `\\` as an escape),
    `<...>` never taken for HTML, and a name too long for Graphviz replaced by a digest that keeps it unique."""
    if len(name) > MAX_ID:
        import hashlib
        prefix = "cluster_" if name.startswith("cluster_") else ""
        return f"{prefix}id_{hashlib.sha1(name.encode()).hexdigest()}"
    return graphviz.nohtml(name.replace("\\", "\\\\"))  # '<b>x</b>' is a name, not an HTML string


MAX_ID = 200  # characters of a DOT id; longer names are labels only
MAX_LABEL = 60  # characters of a name in a box; longer ones lose their middle


def _short(name: str) -> str:
    """A name as a box shows it: whole, or its two ends around an ellipsis."""
    if len(name) <= MAX_LABEL:
        return name
    half = (MAX_LABEL - 1) // 2
    return f"{name[:half]}…{name[-half:]}"


class _SafeDigraph(graphviz.Digraph):
    """A Digraph whose node, edge and cluster ids may be any spec name (see _dot_id): an edge's ends
    are quoted as a node's are, so a ':' in a name is never read as a port (graphviz.Digraph.edge
    splits 'a:b' into node a, port b, and dot then drew a box 'a' of its own)."""

    _quote_edge = staticmethod(graphviz.quoting.quote)

    def node(self, name, label=None, **attrs):
        super().node(_dot_id(name), label, **attrs)

    def edge(self, tail_name, head_name, label=None, **attrs):
        super().edge(_dot_id(tail_name), _dot_id(head_name), label, **attrs)

    def subgraph(self, graph=None, name=None, **kwargs):
        return super().subgraph(graph, name=_dot_id(name) if name is not None else None, **kwargs)



def _sliced(node: BlockNode, ends: list, given: tuple | None = None, index: str = "i") -> list:
    """`ends` as the repetitions of `node` get them: an input it slices (`each: dim`) labelled with the
    slice, `[B, S, 42, 256][:, :, i]` into a box, `[B, S, 256] = [:, :, 3]` inside a drawn repetition
    (`given`: the shapes the repetition's body received)."""
    out = list(ends)
    for k, dim in enumerate(node.each):
        if dim is None or out[k] is None or not isinstance(out[k][1], tuple):
            continue
        source, shape = out[k]
        pick = picked(dim, len(shape), index)
        label = f"{fmt_shape(shape)}{pick}" if given is None else f"{fmt_shape(given[k])} = {pick}"
        out[k] = (source, label)
    return out


def alike_kinds(graph: Graph, cache: dict) -> dict[str, tuple[list[BlockNode], list]]:
    """The schedules of `graph` whose kinds differ only in hyperparameters that leave their parameters
    as they are (a dilation, a window; not a bias), by their first run's name: (the runs, the differences)."""
    out = {}
    for runs in schedules(graph):
        found = differences(runs)
        if found and runs[0].group is None and len({graph_totals(r.body, cache).total for r in runs}) == 1:
            out[runs[0].name] = (runs, found)
    return out


def _times(node: BlockNode) -> str:
    shared = " shared" if node.shared else ""
    return f" × {node.repeat}{shared}" if node.repeat > 1 or node.indexed else shared


def _count_lines(node: BlockNode, per: int, total: int) -> list[str]:
    if node.repeat == 1:
        return [f"{human(total)} params"]
    if node.shared:
        return [f"{human(per)} params, shared by all {node.repeat}"]
    return [f"{human(per)} params each · {human(total)} total"]


def _op_text(node: OpNode, ranges: dict[str, str] | None = None) -> str:
    """`linear  in_features=768, out_features=2304`: the op and its non-default hyperparameters;
    `ranges` gives the values a hyperparameter takes across the kinds of a schedule drawn once."""
    op = node.op
    parts = []
    for f in op.hyperparameters().values():
        value = getattr(op, f.name)
        if ranges and f.name in ranges:
            parts.append(f"{f.name}={ranges[f.name]}")
            continue
        if f.name in HIDDEN_HPARAMS or (f.default is not MISSING and value == f.default):
            continue
        if isinstance(value, tuple):
            value = "(" + ", ".join(map(str, value)) + ")"
        parts.append(f"{f.name}={value if value != '' else repr(value)}")
    return "\n".join([op.op_name] + _wrap(parts, 34))


def _wrap(parts: list[str], width: int) -> list[str]:
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(part) + 2 <= width:
            lines[-1] += ", " + part
        else:
            lines.append(part)
    return lines


def _small(text: str) -> str:
    return f'<font point-size="9">{text}</font>'


def _html(*lines: str, ink: str = "#000000", align: str = "center") -> str:
    """An HTML-like label: one table row per line (lines are already escaped)."""
    rows = "".join(f'<tr><td align="{align}">{line.replace(chr(10), "<br/>")}</td></tr>' for line in lines)
    return (f'<<table border="0" cellborder="0" cellspacing="0" cellpadding="1">'
            f'{rows}</table>>') if ink == "#000000" else (
        f'<<font color="{ink}"><table border="0" cellborder="0" cellspacing="0" cellpadding="1">'
        f'{rows}</table></font>>')


def diagram_svg(model: Model, options: DiagramOptions = DiagramOptions()) -> str | None:
    """The diagram as SVG text, or None when Graphviz's dot is not installed (for Jupyter)."""
    from ..errors import ArchgraphError
    from .image import dot_image
    try:
        return dot_image(diagram_dot(model, options), "svg").decode("utf-8")
    except ArchgraphError:
        return None
