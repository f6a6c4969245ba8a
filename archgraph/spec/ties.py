"""Weight tying: find the tensor a `tie:` names and check that the shapes agree.

A tie names a tensor by its absolute path (`transformer.wte.weight`), or, with one
leading dot, relative to the block instance the tying node is in (`.attn.q.weight`: the
`attn.q` of the same repetition), as a Python relative import names its own package.
"""
from __future__ import annotations

from typing import NamedTuple

from ..errors import SpecError, did_you_mean
from ..graph import BlockNode, Graph, Model, OpNode, join
from ..ops.base import Tensor


class Found(NamedTuple):
    path: str        # the owner node's path (from where the search began)
    node: OpNode
    tensor: Tensor
    graph: Graph     # the graph holding the owner, and that graph instance's path
    prefix: str


def find_tensor(graph: Graph, path: str) -> tuple[str, OpNode, Tensor]:
    """(owner node path, node, tensor) for an absolute tensor path such as `transformer.wte.weight`."""
    return _locate(graph, path)[:3]


def _locate(graph: Graph, path: str, prefix: str = "") -> Found:
    found = _find(graph, path, prefix)
    if isinstance(found, SpecError):
        raise found
    return found


def is_relative(target: str) -> bool:
    return target.startswith(".")


def _relative_part(target: str) -> str:
    rest = target[1:]
    if not rest or rest.startswith("."):
        raise SpecError(f"tie: '{target}': a relative tie is one '.' and a tensor of the enclosing block "
                        "instance ('.attn.q_proj.weight')",
                        hint="name a tensor of a block further out by its absolute path")
    return rest


def absolute(target: str, graph: Graph, prefix: str) -> str:
    """The absolute path of a tie's target; `.rest` is the tensor `rest` of the block instance whose
    body is `graph`, at `prefix`."""
    if not is_relative(target):
        return target
    found = _locate_relative(graph, target, prefix)
    return join(found.path, found.tensor.name)


def _locate_relative(graph: Graph, target: str, prefix: str) -> Found:
    try:
        return _locate(graph, _relative_part(target), prefix)
    except SpecError as exc:
        if exc.message.startswith("tie:"):
            raise
        raise SpecError(f"tie: '{target}' (relative to the enclosing block): {exc.message}", hint=exc.hint) from None


def _find(graph: Graph, rest: str, prefix: str) -> Found | SpecError:
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
                return Found(here, node, tensors[tail], graph, prefix)
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
    segments = graph.segments
    groups = []
    dot = rest.find(".")
    while dot > 0:
        groups.append(segments.get(rest[:dot], ()))
        dot = rest.find(".", dot + 1)
    groups.append([m for m in segments.get(rest, ()) if isinstance(m[1], OpNode)])
    return [m for group in reversed(groups) for m in group] + [
        m for m in segments.get("", ()) if isinstance(m[1], BlockNode)]


def tie_owner(model: Model, target: str, graph: Graph | None = None, prefix: str = "") -> str:
    """The absolute path of the tensor at the end of a chain of ties from `target` (a relative one
    tied by a node of `graph`, the body of the block instance at `prefix`); a chain that comes back
    is an error."""
    return _owner(model.graph, target, graph or model.graph, prefix)


def _owner(root: Graph, target: str, graph: Graph, prefix: str) -> str:
    seen: list[str] = []
    while True:
        target = absolute(target, graph, prefix)
        if target in seen:
            raise SpecError(f"tie: the ties form a cycle ({' -> '.join(seen + [target])}), so no node holds "
                            "the values", hint="one node of the cycle must own its tensor (drop its 'tie')")
        seen.append(target)
        found = _locate(root, target)
        nxt = found.node.ties.get(found.tensor.name)
        if nxt is None:
            return target
        target, graph, prefix = nxt, found.graph, found.prefix


def resolve_ties(model: Model) -> None:
    """Check every tie of every body once: target exists, local tensor exists, shapes agree (a
    relative target in the body that ties to it, its chain within that body)."""
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
                relative = is_relative(target)
                root = graph if relative else model.graph
                _, owner, tensor = (_locate_relative(graph, target, "") if relative else _locate(root, target))[:3]
                if owner is node:
                    raise SpecError(f"tie: '{target}' is this node's own tensor",
                                    hint="tie the tensor to another node's tensor")
                if not relative or not _leaves(graph):
                    _owner(root, target, graph, "")
                if tensor.shape != own[local].shape:
                    raise SpecError(f"tie: '{local}' has shape {list(own[local].shape)} but '{target}' "
                                    f"has shape {list(tensor.shape)}",
                                    hint="tied tensors must have the same shape")
            except SpecError as exc:
                raise exc.with_context(loc=node.loc, node=node.name)


def _leaves(graph: Graph) -> bool:
    """Whether a node of `graph` (or of the blocks in it) ties to an absolute path: a chain of ties
    from a relative target may then leave the body, and is followed where instances are known."""
    return any(not is_relative(t) for t in _all_ties(graph, set()))


def _all_ties(graph: Graph, seen: set[int]):
    if id(graph) in seen:
        return
    seen.add(id(graph))
    for node in graph.nodes.values():
        if isinstance(node, BlockNode):
            yield from _all_ties(node.body, seen)
        else:
            yield from node.ties.values()
