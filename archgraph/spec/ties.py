"""Weight tying: find the tensor a `tie:` names and check that the shapes agree."""
from __future__ import annotations

from ..errors import SpecError, did_you_mean
from ..graph import BlockNode, Graph, Model, OpNode
from ..ops.base import Tensor


def find_tensor(graph: Graph, path: str) -> tuple[str, OpNode, Tensor]:
    """(owner node path, node, tensor) for an absolute tensor path such as `transformer.wte.weight`."""
    prefix, rest = "", path
    while True:
        name = _longest_prefix(graph, rest)
        if name is None:
            hint = did_you_mean(rest.split(".")[0], graph.nodes)
            raise SpecError(f"no node owns the tensor '{path}' (nothing matches '{rest}')", hint=hint)
        node = graph.nodes[name]
        prefix = f"{prefix}.{name}" if prefix else name
        rest = rest[len(name) + 1:]
        if isinstance(node, OpNode):
            tensors = {t.name: t for t in node.op.params()}
            if rest not in tensors:
                hint = did_you_mean(rest, tensors)
                raise SpecError(f"node '{prefix}' ({node.op.op_name}) has no tensor '{rest}'",
                                hint=hint or f"its tensors: {', '.join(tensors) or 'none'}")
            return prefix, node, tensors[rest]
        if node.indexed:
            index, _, rest = rest.partition(".")
            if not (index.isascii() and index.isdigit()) or not node.start <= int(index) < node.start + node.repeat:
                raise SpecError(f"'{path}': block '{prefix}' has repetitions "
                                f"{node.start}..{node.start + node.repeat - 1}; received '{index}'")
            prefix = f"{prefix}.{index}"
        graph = node.body


def _longest_prefix(graph: Graph, rest: str) -> str | None:
    """The longest node name that `rest` continues with a dot (node names may hold dots)."""
    parts = rest.split(".")
    for k in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:k])
        if name in graph.nodes:
            return name
    return None


def tie_owner(model: Model, target: str) -> str:
    """The tensor at the end of a chain of ties from `target`; a chain that comes back is an error."""
    seen = []
    while target not in seen:
        seen.append(target)
        _, owner, tensor = find_tensor(model.graph, target)
        nxt = owner.ties.get(tensor.name)
        if nxt is None:
            return target
        target = nxt
    raise SpecError(f"tie: the ties form a cycle ({' -> '.join(seen + [target])}), so no node holds the "
                    "values", hint="one node of the cycle must own its tensor (drop its 'tie')")


def resolve_ties(model: Model) -> None:
    """Check every tie of every body once: target exists, local tensor exists, shapes agree."""
    seen: set[int] = set()
    _check(model.graph, model, seen)


def _check(graph: Graph, model: Model, seen: set[int]) -> None:
    if id(graph) in seen:
        return
    seen.add(id(graph))
    for node in graph.nodes.values():
        if isinstance(node, BlockNode):
            _check(node.body, model, seen)
            continue
        if not node.ties:
            continue
        own = {t.name: t for t in node.op.params()}
        for local, target in node.ties.items():
            try:
                if local not in own:
                    hint = did_you_mean(local, own)
                    raise SpecError(f"tie: this node has no tensor '{local}'",
                                    hint=hint or f"its tensors: {', '.join(own) or 'none'}")
                _, owner, tensor = find_tensor(model.graph, target)
                if owner is node:
                    raise SpecError(f"tie: '{target}' is this node's own tensor")
                tie_owner(model, target)
                if tensor.shape != own[local].shape:
                    raise SpecError(f"tie: '{local}' has shape {list(own[local].shape)} but '{target}' "
                                    f"has shape {list(tensor.shape)}",
                                    hint="tied tensors must have the same shape")
            except SpecError as exc:
                raise exc.with_context(loc=node.loc, node=node.name)
