"""Inputs a specialised spec no longer reads (a switched-off feature's), and the names an
expression in spec data reads: helpers of `specialize.py`.
"""
from __future__ import annotations

from typing import Any

from .. import expr


def _read(nodes: list, inputs: list, outputs: Any) -> set:
    """The names a graph's nodes and outputs read (a node without `in:` reads the one before)."""
    read: set = set()
    prev = inputs[0] if inputs else None

    def refs(value):
        read.update(o.split(":")[0].strip() for text in _strings(value) for o in text.split("|"))
    for node in nodes:
        if "in" in node:
            refs(node["in"])
        elif prev is not None:
            read.add(prev)
        prev = node["name"]
    if outputs is None:
        read.add(prev)
    elif isinstance(outputs, dict):
        refs([v.get("from") if isinstance(v, dict) else v for v in outputs.values()])
    else:
        refs(outputs)
    return read


def drop_unread_inputs(blocks: dict, calls: dict, spec: dict, variables: dict, callers_first) -> None:
    """Inputs nothing reads any more (a switched-off feature's) leave the blocks, the calls that
    pass them and the spec: deepest blocks first, so that a caller's input the call no longer
    passes goes too.  A block called with `repeat` keeps the inputs its outputs feed."""
    for name in reversed(callers_first(blocks)):
        block = blocks.get(name)
        if not block or "spec" in block or not isinstance(block.get("inputs"), list):
            continue
        inputs = block["inputs"]
        made = [c[0] for c in calls.get(name, [])]
        outputs = block.get("outputs")
        fed = len(outputs) if isinstance(outputs, (list, dict)) else 1
        kept = inputs[:fed] if any("repeat" in c for c in made) else []   # a repetition's outputs feed them
        unread = [i for i in inputs if i not in _read(block.get("nodes") or [], inputs, outputs) and i not in kept]
        if not unread or len(unread) == len(inputs) or \
                any(not isinstance(c.get("in"), (dict, list)) for c in made):
            continue
        for call in made:
            if isinstance(call["in"], dict):
                call["in"] = {k: v for k, v in call["in"].items() if k not in unread}
            else:
                call["in"] = [r for r, i in zip(call["in"], inputs) if i not in unread] + call["in"][len(inputs):]
        block["inputs"] = [i for i in inputs if i not in unread]
    model_inputs = spec.get("inputs")
    if isinstance(model_inputs, dict):
        read = _read(spec["nodes"], list(model_inputs), spec.get("outputs"))
        sizes = names_in({k: v for k, v in spec.items() if k != "inputs"} | {"v": variables}) - set(variables)
        kept = {}
        for k, v in model_inputs.items():
            dims = names_in(v.get("shape") if isinstance(v, dict) else v)
            if k in read or dims & sizes - names_in([x for n, x in kept.items()]):
                kept[k] = v  # read, or the only input that names a size the spec uses (S)
        if kept:
            spec["inputs"] = kept


def names_in(value: Any) -> set:
    """The names the expressions in `value` (nested dicts and lists) read."""
    names: set = set()
    for text in _strings(value):
        try:
            names.update(expr.names(text))
        except Exception:  # a word or a reference, not an expression
            pass
    return names


def _strings(value: Any):
    """Every string in `value`, through nested dicts (their values) and lists."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value
