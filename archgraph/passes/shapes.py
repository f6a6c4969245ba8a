"""Shape propagation: every node's output shapes, symbolic or concrete.

>>> from archgraph import load
>>> report = load("gpt2").shapes(B=2, S=16)
>>> report.shape_of("transformer.h.0.attn.c_attn")
[(2, 16, 2304)]
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from .. import expr
from ..dims import Poly, Shape, assuming, fmt, fmt_shape, norm, provably_le, symbol
from ..errors import ArchgraphError, Fallback, ShapeError, SpecError, did_you_mean, shortened
from ..graph import BlockNode, Model, OpNode, join
from ..limits import MAX_ELEMENTS, MAX_RANK
from ..spec.constraints import bounds, check_constraints, divisors, least
from ..spec.settings import size_names
from .walk import Run, call_op, walk
from ..record import Record


class ShapeReport(Record):
    """The shape pass's result: the input and output shapes, and every node's on request."""

    model: Model
    inputs: dict[str, Shape]
    run: Run
    bindings: dict[str, int]

    def nodes(self) -> Iterator[tuple[str, OpNode, list[Shape]]]:
        """(path, node, output shapes) for every op node, repetitions expanded."""
        for path, node, _, outputs in _expand(self.run, ""):
            yield path, node, outputs

    def io(self) -> Iterator[tuple[str, OpNode, list[Shape], list[Shape]]]:
        """(path, node, input shapes, output shapes) for every op node, repetitions expanded."""
        yield from _expand(self.run, "")

    def shape_of(self, path: str) -> list[Shape]:
        for p, _, outs in self.nodes():
            if p == path:
                return outs
        raise KeyError(path)

    @property
    def outputs(self) -> dict[str, Shape]:
        return dict(zip(self.model.output_names, self.run.outputs))


def _expand(run: Run, prefix: str):
    for name, node in run.graph.nodes.items():
        value = run.nodes[name]
        if isinstance(node, OpNode):
            yield join(prefix, name), node, run.input_values(node), list(value)
            continue
        index = 0
        for segment in value:
            for _ in range(segment.count):
                yield from _expand(segment.run, node.rep_path(prefix, index))
                index += 1


def input_shapes(model: Model, bindings: Mapping[str, int]) -> dict[str, Shape]:
    """Evaluate the declared input shapes; unbound names become symbols."""
    out = {}
    for name, spec in model.inputs.items():
        dims = []
        if len(spec.shape) > MAX_RANK:
            raise SpecError(f"input '{name}' has {len(spec.shape):,} dimensions; a tensor has at most {MAX_RANK}",
                            loc=spec.loc, hint="declare the input with fewer dimensions")
        for dim in spec.shape:
            if isinstance(dim, int):
                dims.append(dim)
                continue
            env = {**model.variables, **bindings}
            env.update({n: symbol(n) for n in expr.names(dim) if n not in env})  # only unbound names
            try:
                value = norm(expr.evaluate(dim, env))
            except ArchgraphError as exc:
                raise exc.with_context(loc=spec.loc)
            dims.append(_size(value, name, dim, spec))
        try:
            out[name] = check_size(tuple(dims), f"input '{name}'")
        except ShapeError as exc:
            raise exc.with_context(loc=spec.loc)
    return out


def check_size(shape: Shape, what: str) -> Shape:
    """`shape` when a tensor of it is one archgraph can count: at most MAX_RANK dimensions and, at
    concrete sizes, MAX_ELEMENTS elements (so its bytes and FLOPs stay finite as floats)."""
    if len(shape) > MAX_RANK:
        raise ShapeError(f"{what} would have {len(shape):,} dimensions; a tensor has at most {MAX_RANK}",
                         hint="check the ops that add dimensions (unsqueeze, reshape, view)")
    elements = 1
    for dim in shape:
        if not isinstance(dim, int):
            return shape
        elements *= dim
    if elements > MAX_ELEMENTS:
        raise ShapeError(f"{what} {shortened(fmt_shape(shape))} would hold more than 10**{len(str(MAX_ELEMENTS)) - 1} "
                         "elements",
                         hint="check the sizes (--set and the spec's variables) that make it")
    return shape


def _size(value, name: str, dim: str, spec) -> object:
    """A declared input size must be a positive whole number or a symbolic size."""
    if isinstance(value, Poly) or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        return value
    raise SpecError(f"input '{name}': dimension '{dim}' is {value!r}; a size must be a positive whole number "
                    "or a name such as B or S", loc=spec.loc,
                    hint='give a positive whole number or a name such as B or S')


def infer_shapes(model: Model, bindings: Mapping[str, int] | None = None) -> ShapeReport:
    """Propagate shapes through the model with `bindings` for symbolic dims (B, S, ...)."""
    bindings = {**model.bindings, **(bindings or {})}
    _check_bindings(model, bindings)
    inputs = input_shapes(model, bindings)
    sizes = {n: bindings.get(n, symbol(n)) for n in size_names(model.inputs, model.variables)}
    check_constraints(model.constraints, {**model.variables, **sizes})
    fresh = {k: v for k, v in bindings.items() if k not in model.bindings}  # sizes the build left symbolic
    seen: dict = {}  # (op, input names, input shapes) -> outputs: equal nodes are one evaluation

    def visit(node: OpNode, args: list[Shape], path: str) -> tuple[Shape, ...]:
        key = (id(node.op), node.keywords, tuple(args))
        result = seen.get(key)
        if result is not None:
            return result
        op = node.op.with_sizes(fresh)
        out = call_op(node, args, path, lambda *xs: _checked(node, op, list(xs)))
        seen[key] = result = tuple(out) if isinstance(out, list) else (out,)
        return result

    with assuming(divisors(model.constraints, bindings), bounds(model.constraints, bindings),
                  least(model.constraints, bindings)):
        run = walk(model.graph, tuple(inputs[n] for n in model.graph.inputs), visit, select=each_slice)
    return ShapeReport(model, inputs, run, dict(bindings))


def each_slice(call: BlockNode, path: str, shape: Shape, dim: int, index: int, position: int) -> Shape:
    """The shape repetition `index` of a call reads of an input it slices (`each: dim`): the
    input's without that dim, once the dim exists and is long enough for every repetition."""
    name = call.body.inputs[position]
    last = call.start + call.repeat - 1
    if not -len(shape) <= dim < len(shape):
        raise SpecError(f"input '{name}' is sliced along dim {dim} (each: {dim}), but it has {len(shape)} dims "
                        f"{fmt_shape(shape)}", loc=call.loc, node=path,
                        hint=f"each: counts the input's dims from 0 (negative from the end): 0 to {len(shape) - 1}")
    size = shape[dim % len(shape)]
    if provably_le(last + 1, size) is not True:
        reads = f"repetitions {call.start}..{last} read its indices up to {last}" if last > call.start else \
            f"repetition {last} reads its index {last}"
        raise SpecError(f"input '{name}' {fmt_shape(shape)} is sliced along dim {dim} (each: {dim}), of size "
                        f"{fmt(size)}, but {reads}", loc=call.loc,
                        node=path, hint="repeat the call at most as many times as the dim is long (index "
                        "start + repeat - 1 must exist), or slice another dim")
    d = dim % len(shape)
    return (*shape[:d], *shape[d + 1:])


def _checked(node: OpNode, op, shapes) -> Any:
    """The op's output shapes (`_rule`), each one a tensor archgraph can count (`check_size`)."""
    out = _rule(node, op, shapes)
    for i, shape in enumerate(out if isinstance(out, list) else [out]):
        if isinstance(shape, tuple):
            check_size(shape, "its output" if not isinstance(out, list) else f"its output {i}")
    return out


def _rule(node: OpNode, op, shapes) -> Any:
    try:
        positional, keywords = node.bind(shapes)
        return op.infer_shape(*positional, **keywords)
    except ShapeError as exc:
        received = ", ".join(f"{ref} {fmt_shape(s)}" for ref, s in zip(node.inputs, shapes))
        exc.message = f"{exc.message} (received {received})"
        exc.hint = exc.hint if exc.hint and not isinstance(exc.hint, Fallback) else (
            f"make the hyperparameters of '{node.name}' agree with its inputs, or change the node(s) that feed it")
        raise


def _check_bindings(model: Model, bindings: Mapping[str, int]) -> None:
    used = set(model.variables) | set(size_names(model.inputs, model.variables))
    for name, value in bindings.items():
        if name not in used:
            hint = did_you_mean(name, used)
            raise SpecError(f"--set {name}: the model has no variable or dimension named '{name}'",
                            hint=hint or f"names: {', '.join(sorted(used))}")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SpecError(f"--set {name}={value}: a dimension must be a positive whole number",
                            hint='give a positive whole number: --set NAME=8')
