"""A block call's `tied_to:`: every tensor of the instance is the tensor of the same name under another
instance's path, as transformers ties a whole module by its prefix (`_tied_weights_keys =
{'layers.7.shared_transformer': 'layers.1.shared_transformer'}`: Zamba2's shared blocks).

The value is an expression evaluated where the call's arguments are (so with the repetition index:
`tied_to: "None if i < 2 else ['layers', i % 2, 'block']"`): a dotted path, a list of its segments
(words and whole numbers, empty words skipped) or null (no tie).  The call's body is copied with
each op node tying each of its tensors to `PATH.<node's path in the body>.<tensor>`; the ties are
then the op nodes' own (`tie:`), checked, counted once and shared by `to_module` as those are.
"""
from __future__ import annotations

from typing import Any

from ..errors import Loc, SpecError
from ..graph import BlockNode, Graph, OpNode, Ref, join
from .values import evaluate


def tie_path(value: Any, env, loc: Loc) -> str | None:
    """The absolute path a call's `tied_to:` names, or None (the call owns its tensors)."""
    path = evaluate(value, env, loc, "tied_to")
    if path is None or path == "":
        return None
    if isinstance(path, (list, tuple)) and all(isinstance(p, (str, int)) and not isinstance(p, bool) for p in path):
        path = ".".join(str(p) for p in path if p != "")
    if not isinstance(path, str) or not path or path.startswith(".") or ".." in path:
        raise SpecError(f"a block call's 'tied_to' names the instance whose tensors it uses by its absolute path "
                        f"(a word or a list of segments); received {path!r}", loc=loc,
                        hint="tied_to: \"['model', 'layers', 1, 'block']\" or tied_to: \"'encoder.block'\"")
    return path


def tied_copy(body: Graph, target: str, loc: Loc) -> Graph:
    """`body` with every tensor of its op nodes (and of the blocks in it) tied to the same path
    under `target`; a repeated block inside is split into one call per repetition, whose paths
    differ by the index."""
    nodes: dict[str, Any] = {}
    for name, node in body.nodes.items():
        if isinstance(node, OpNode):
            own = {t.name: join(join(target, name), t.name) for t in node.op.params()}
            nodes[name] = OpNode(node.name, node.op, node.inputs, node.category, node.trainable,
                                 {**own, **node.ties}, node.loc, node.keywords, node.dtype, node.unused)
        elif node.repeat == 0:  # a pass-through: no tensors
            nodes[name] = node
        elif not node.indexed:
            nodes[name] = _with_body(node, tied_copy(node.body, join(target, node.segment), loc))
        elif node.shared:
            raise SpecError(f"a block tied whole holds the shared block '{name}', whose repetitions are "
                            "not numbered", loc=loc, hint="tie the shared block's call itself")
        else:
            nodes.update(_split(node, target, loc))
    return Graph(body.name, body.inputs, nodes, body.outputs, body.loc, body.output_names)


def _split(node: BlockNode, target: str, loc: Loc) -> dict[str, BlockNode]:
    """One call per repetition of `node`, each tied to its own index (the last keeps the name, so
    what reads the call reads the last repetition)."""
    out: dict[str, BlockNode] = {}
    refs, previous = node.inputs, None
    for k in range(node.start, node.start + node.repeat):
        if previous is not None:
            refs = tuple(Ref(previous, j) for j in range(len(node.body.outputs))) + refs[len(node.body.outputs):]
        key = node.name if k == node.start + node.repeat - 1 else f"{node.name}#{k}"
        body = tied_copy(node.body, join(join(target, node.segment), str(k)), loc)
        out[key] = BlockNode(key, node.block, body, refs, 1, k, True, False, node.loc, node.segment,
                             node.unused, scheduled=node.repeat > 1 or node.scheduled, group=node.group, each=node.each)
        previous = key
    return out


def _with_body(node: BlockNode, body: Graph) -> BlockNode:
    return BlockNode(node.name, node.block, body, node.inputs, node.repeat, node.start, node.indexed,
                     node.shared, node.loc, node.path, node.unused, node.scheduled, node.group, node.each)
