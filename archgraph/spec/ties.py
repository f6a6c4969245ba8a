"""Weight tying: find the tensor a `tie:` names and check that the shapes agree."""
from __future__ import annotations

from ..errors import SpecError, did_you_mean
from ..graph import BlockNode, Graph, Model, OpNode
from ..ops.base import Tensor


def find_tensor(graph: Graph, path: str) -> tuple[str, OpNode, Tensor]:
    """(owner node path, node, tensor) for an absolute tensor path such as `transformer.wte.weight`."""
    found = _find(graph, path, "")
    if isinstance(found, SpecError):
        raise found
    return found


def _find(graph: Graph, rest: str, prefix: str) -> tuple[str, OpNode, Tensor] | SpecError:
    """Search `graph` for the tensor `rest`: the node whose path segment `rest` continues with a dot,
    longest first (segments may hold dots); blocks adding no segment are searched through."""
    full = f"{prefix}.{rest}" if prefix else rest
    failure: SpecError | None = None
    for segment, node in _candidates(graph, rest):
        here = f"{prefix}.{segment}" if prefix and segment else (prefix or segment)
        tail = rest[len(segment) + 1:] if segment else rest
        if isinstance(node, OpNode):
            tensors = {t.name: t for t in node.op.params()}
            if tail in tensors:
                return here, node, tensors[tail]
            hint = did_you_mean(tail, tensors)
            failure = failure or SpecError(f"node '{here}' ({node.op.op_name}) has no tensor '{tail}'",
                                           hint=hint or f"its tensors: {', '.join(tensors) or 'none'}")
            continue
        if node.indexed:
            index, _, tail = tail.partition(".")
            if not (index.isascii() and index.isdigit()) or not node.start <= int(index) < node.start + node.repeat:
                failure = failure or SpecError(
                    f"'{full}': block '{here}' has repetitions {node.start}..{node.start + node.repeat - 1}; "
                    f"received '{index}'")
                continue
            here = f"{here}.{index}"
        found = _find(node.body, tail, here)
        if not isinstance(found, SpecError):
            return found
        failure = failure or found
    if failure is None:
        names = [n.segment if isinstance(n, BlockNode) else n.name for n in graph.nodes.values()]
        failure = SpecError(f"no node owns the tensor '{full}' (nothing matches '{rest}')",
                            hint=did_you_mean(rest.split(".")[0], names))
    return failure


def _candidates(graph: Graph, rest: str):
    """(segment, node) pairs `rest` could continue: longest segment first, then blocks adding none."""
    matches = []
    for name, node in graph.nodes.items():
        segment = node.segment if isinstance(node, BlockNode) else name
        if segment and (rest.startswith(segment + ".") or (rest == segment and isinstance(node, OpNode))):
            matches.append((segment, node))
    matches.sort(key=lambda m: -len(m[0]))
    return matches + [("", n) for n in graph.nodes.values() if isinstance(n, BlockNode) and n.segment == ""]


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
