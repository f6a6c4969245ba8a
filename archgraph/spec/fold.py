"""Bodies by what they compute: block bodies that are equal after evaluation are one object.

A call whose arguments use the repetition index (GPT-2's `layer: i`, read only when
`scale_attn_by_inverse_layer_idx` is set) builds one body per repetition; when those bodies hold
the same ops with the same hyperparameters, wired alike, they are the same layer, so
`canonical` returns the first one made and the call folds into one run (`h × 12`, not
`h.0 × 1 ... h.11 × 1`).  Equality is structural and conservative: a value this module cannot
compare by its text (an array, an object of its own) is equal only to itself.
"""
from __future__ import annotations

from typing import Any

from ..graph import BlockNode, Graph, OpNode

_PLAIN = (bool, int, str, type(None))


def canonical(folded: dict, body: Graph) -> Graph:
    """The body equal to `body` that `folded` already holds (the first made), else `body` itself.
    `folded` maps a body's id to its canonical body and a fingerprint to the body it names."""
    known = folded.get(id(body))
    if known is not None:
        return known[1]
    found = folded.setdefault(fingerprint(body), body)
    folded[id(body)] = (body, found)  # the body is kept alive with its id, so the id stays its own
    return found


def fingerprint(graph: Graph) -> tuple:
    """What `graph` computes: its inputs, outputs and every node's evaluated contents (a block call's
    body by identity: bodies inside are canonical already)."""
    return ("graph", graph.name, graph.inputs, graph.outputs, graph.output_names,
            tuple(_node_key(node) for node in graph.nodes.values()))


def _node_key(node: OpNode | BlockNode) -> tuple:
    if isinstance(node, OpNode):
        op = node.op
        return (node.name, type(op), tuple(_value(v) for v in op._values()), node.inputs, node.category,
                node.trainable, tuple(sorted(node.ties.items())), node.keywords, node.dtype, node.unused)
    return (node.name, node.block, id(node.body), node.inputs, node.repeat, node.start, node.indexed, node.shared,
            node.path, node.unused, node.scheduled, _value(node.group), node.each)


def _value(value: Any) -> Any:
    """A hyperparameter as a key: plain values as themselves (with their type: 1, 1.0 and True are
    different settings), floats and symbolic sizes by their text, containers item by item."""
    kind = value.__class__
    if kind in _PLAIN:
        return (kind, value)
    if kind is float:
        return (float, repr(value))
    if kind in (tuple, list):
        return (kind, tuple(_value(v) for v in value))
    if kind is dict:
        return (dict, tuple((_value(k), _value(v)) for k, v in value.items()))
    if isinstance(value, int):  # a SymInt: a number that may have a name
        return (kind, repr(value))
    return ("object", id(value))
