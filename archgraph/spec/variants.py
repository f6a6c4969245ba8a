"""A block whose calls decide its `when:`s differently, split into one block per way they decide
them: a helper of `specialize.py`.

Gemma 3's template reads one `decoder_layer` whose attention is written twice, `when: local` and
`when: not local`, and one `rotary_tables` block with three `when: kind == ...` tables; the model
a config gives has sliding layers and full ones, and one table of each kind.  `variants` groups a
block's calls by the value each gives every `when:` of the block (its nodes', its inputs' and its
outputs'), evaluated at the call's arguments and the spec's values, and names each group's block by
the arguments that decide them (`decoder_layer_local`, `rotary_tables_full`); a group's `when:`s
are then decided (`decisions`), so each block holds its nodes once and no condition.
"""
from __future__ import annotations

from typing import Any, Mapping

from .. import expr
from .blocks import block_params
from .partial import Expr
from .walkdata import _MISSING, _Default, _Scope

UNDECIDED = "?"


def holders(definition: Mapping) -> list:
    """The mappings of a block that may hold a `when:` (nodes, mapped inputs and their alternatives,
    outputs)."""
    out = []
    for node in definition.get("nodes") or []:
        if not isinstance(node, Mapping):
            continue
        out.append(node)
        if isinstance(node.get("in"), Mapping):
            for v in node["in"].values():   # an input under a condition, or a list of alternatives
                out.extend([v] if isinstance(v, Mapping) else [a for a in v if isinstance(a, Mapping)]
                           if isinstance(v, list) else [])
    outputs = definition.get("outputs")
    if isinstance(outputs, Mapping):
        out.extend(v for v in outputs.values() if isinstance(v, Mapping))
    return [h for h in out if "when" in h]


def variants(walker, block: str) -> dict[str, list]:
    """Block name -> its calls: `block` alone when its calls decide every `when:` alike (recorded
    in `walker.decisions`), else one new block per way of deciding them."""
    definition = walker.blocks[block]
    calls = walker.calls[block]
    conditions = holders(definition)
    if not conditions:
        return {block: calls}
    profiles = [tuple(decision(walker, definition, block, call, h) for h in conditions) for call in calls]
    groups: dict[tuple, list] = {}
    for profile, call in zip(profiles, calls):
        groups.setdefault(profile, []).append(call)
    if len(groups) == 1:
        walker.decisions[block] = _decided(conditions, profiles[0])
        return {block: calls}
    if any(UNDECIDED in p for p in groups):  # a call the spec's values do not decide: keep the switch
        return {block: calls}
    names = _names(walker, block, definition, list(groups.values()), conditions)
    out = {}
    for name, (profile, group) in zip(names, groups.items()):
        walker.blocks[name] = definition
        walker.decisions[name] = _decided(conditions, profile)
        for call in group:
            call[0]["block"] = name
        out[name] = group
    return out


def _decided(conditions: list, profile: tuple) -> dict:
    return {id(h): d for h, d in zip(conditions, profile) if d is not UNDECIDED}


def _arguments(walker, definition: Mapping, block: str, call: tuple) -> dict | None:
    """A call's arguments as values (the spec's values in), and the block's variables at them."""
    _, args, free, _ = call
    known = {}
    for p, default in block_params(definition, block).items():
        given = args.get(p, _MISSING)
        given = given.value if isinstance(given, _Default) else given
        if given is _MISSING:
            continue
        if isinstance(given, Expr):
            given = walker.fold(given, _Scope({}, set(free)), decide=True)
            if isinstance(given, Expr):
                continue
        known[p] = given
    for name, raw in (definition.get("variables") or {}).items():
        value = walker.fold(raw, _Scope(known, set()), decide=True)
        if not isinstance(value, Expr):
            known[name] = value
    return known


def decision(walker, definition: Mapping, block: str, call: tuple, holder: Mapping) -> Any:
    known = _arguments(walker, definition, block, call)
    params = set(block_params(definition, block)) | set(definition.get("variables") or {})
    missing = (params - set(known)) & set(expr.names(holder["when"])) if isinstance(holder["when"], str) else set()
    if missing:
        return UNDECIDED
    value = walker.fold(holder["when"], _Scope(known, set()), decide=True)
    return value if isinstance(value, bool) else UNDECIDED


def _names(walker, block: str, definition: Mapping, groups: list, conditions: list) -> list[str]:
    """Each group's block named by the arguments its `when:`s read that tell the groups apart."""
    read: set = set()
    for h in conditions:
        if isinstance(h["when"], str):
            read |= set(expr.names(h["when"]))
    for name, raw in (definition.get("variables") or {}).items():
        if name in read and isinstance(raw, str):
            read |= set(expr.names(raw))
    values = [_arguments(walker, definition, block, group[0]) for group in groups]
    telling = [p for p in block_params(definition, block) if p in read and
               len({repr(v.get(p)) for v in values}) > 1]
    telling = _fewest(telling, values)
    out: list[str] = []
    for k, known in enumerate(values):
        parts = [_part(p, known.get(p)) for p in telling]
        name = "_".join([block] + [x for x in parts if x])
        while name in out or name != block and name in walker.blocks:
            name = f"{block}_{k + 1}" if name != f"{block}_{k + 1}" else f"{name}_"
        out.append(name)
    return out


def _fewest(telling: list[str], values: list[dict]) -> list[str]:
    """The arguments a name needs: switches and words first (Swin's stages are `stage_down` and
    `stage`, not `stage_RH_8_RW_8_down`), numbers only while two groups would share a name."""
    def numeric(p: str) -> bool:
        return any(not (isinstance(v.get(p), (bool, str)) or v.get(p) is None) for v in values)
    chosen: list[str] = []
    for p in sorted(telling, key=numeric):
        if len({tuple(_part(q, v.get(q)) for q in chosen) for v in values}) == len(values):
            break
        chosen.append(p)
    return [p for p in telling if p in chosen]


def _part(param: str, value: Any) -> str:
    """What a block's name says of an argument's value: a word itself, true the argument's name,
    false or null nothing, a number after the argument's name."""
    if isinstance(value, str) and value.isidentifier():
        return value
    if value is True:
        return param
    if value is False or value is None:
        return ""
    text = "".join(c if c.isalnum() else "_" for c in str(value))
    return f"{param}_{text}"
