"""`edit:`: a spec that extends another changes single nodes of a parent's node list.

An edit names nodes by name; every node of that name (alternatives switched by `when:`)
is one node of the model.  `drop` removes them, `replace` puts new nodes where the
first one was, `insert` with `before`/`after` adds nodes before the first or after the
last, `set` changes keys of each (null removes a key).  Edits apply in order, so a
later edit may name a node an earlier one inserted.  Nothing is mutated: a parent's
nodes are shared, a changed node is a copy whose new keys point at the child's lines.
"""
from __future__ import annotations

from typing import Any

from ..errors import Loc, SpecError, did_you_mean
from .values import check_keys, loc_of
from .yamlload import LocDict, LocList

EDIT_KEYS = {"drop", "replace", "with", "before", "after", "insert", "node", "set"}
_FORMS = (({"drop"}, "drop: NAME"), ({"replace", "with"}, "replace: NAME, with: NODE"),
          ({"before", "insert"}, "before: NAME, insert: NODE"), ({"after", "insert"}, "after: NAME, insert: NODE"),
          ({"node", "set"}, "node: NAME, set: {KEY: VALUE}"))


class Edited(LocDict):
    """A parent's node (or block) with keys a child set: each key's line is in the file that wrote it."""

    __slots__ = ("locs",)

    def key_loc(self, key: str) -> Loc:
        return self.locs.get(key) or LocDict.key_loc(self, key)


def apply_edits(nodes: Any, edits: Any, where: str, at: Loc) -> LocList:
    """`nodes` (a parent's list) changed by `edits` (the child's `edit:` list); `where` names the
    list in errors ("block 'decoder_layer' of llama.yaml")."""
    if not isinstance(nodes, list):
        raise SpecError(f"'edit' changes the nodes of {where}, which has no 'nodes:' list", loc=at,
                        hint="edit a block or spec that has a 'nodes:' list, or give 'nodes:' instead")
    if not isinstance(edits, list) or not edits:
        raise SpecError("'edit' must be a list of changes", loc=at,
                        hint="e.g. 'edit: [{drop: mlp_dropout}, {node: mlp, set: {bias: true}}]'")
    out = list(nodes)
    for edit in edits:
        out = _apply(out, edit, where, getattr(edits, "loc", at))
    result = LocList(out)
    result.loc = getattr(nodes, "loc", at)
    return result


def _apply(nodes: list, edit: Any, where: str, at: Loc) -> list:
    if not isinstance(edit, LocDict):
        raise SpecError(f"an edit must be a mapping; received {edit!r}", loc=at,
                        hint="write one of: " + "; ".join(f"{{{f}}}" for _, f in _FORMS))
    check_keys(edit, EDIT_KEYS, "an edit", edit.key_loc)
    form = next((keys for keys, _ in _FORMS if keys == set(edit)), None)
    if form is None:
        raise SpecError(f"an edit with the keys {', '.join(edit)} says no one change", loc=edit.loc,
                        hint="write one of: " + "; ".join(f"{{{f}}}" for _, f in _FORMS))
    if "drop" in edit:
        names = edit["drop"] if isinstance(edit["drop"], list) else [edit["drop"]]
        for name in names:
            _positions(nodes, name, edit, "drop", where)
        return [n for n in nodes if _name(n) not in names]
    if "set" in edit:
        changes = edit["set"]
        if not isinstance(changes, LocDict) or not changes:
            raise SpecError("'set' maps keys of the node to their new values", loc=edit.key_loc("set"),
                            hint="e.g. set: {bias: true, eps: 1e-5}; null removes a key")
        if "name" in changes:
            raise SpecError("'set' cannot rename a node (other nodes read it by name)", loc=changes.key_loc("name"),
                            hint="replace it: {replace: OLD, with: {name: NEW, ...}}")
        hits = set(_positions(nodes, edit["node"], edit, "node", where))
        return [_changed(n, changes) if i in hits else n for i, n in enumerate(nodes)]
    new = _new_nodes(edit, "with" if "with" in edit else "insert")
    key = next(k for k in ("replace", "before", "after") if k in edit)
    hits = _positions(nodes, edit[key], edit, key, where)
    if key == "replace":
        rest = [n for i, n in enumerate(nodes) if i not in hits[1:]]
        first = hits[0]
        return rest[:first] + new + rest[first + 1:]
    at_index = hits[0] if key == "before" else hits[-1] + 1
    return nodes[:at_index] + new + nodes[at_index:]


def _name(node: Any) -> Any:
    return node.get("name") if isinstance(node, dict) else None


def _positions(nodes: list, name: Any, edit: LocDict, key: str, where: str) -> list[int]:
    """The indices of the nodes called `name`; none is an error that names the edit's line."""
    hits = [i for i, n in enumerate(nodes) if _name(n) == name]
    if not hits:
        names = list(dict.fromkeys(str(_name(n)) for n in nodes))
        hint = did_you_mean(str(name), names)
        raise SpecError(f"{key}: {where} has no node '{name}'", loc=edit.key_loc(key),
                        hint=hint or f"its nodes: {', '.join(names)}")
    return hits


def _new_nodes(edit: LocDict, key: str) -> list:
    value = edit[key]
    new = value if isinstance(value, list) else [value]
    if not new or not all(isinstance(n, LocDict) and isinstance(n.get("name"), str) for n in new):
        raise SpecError(f"'{key}' gives a node (a mapping with 'name') or a list of them", loc=edit.key_loc(key),
                        hint=f"e.g. {key}: {{name: extra, op: relu}}")
    return new


def _changed(node: LocDict, changes: LocDict) -> Edited:
    merged = {k: changes.get(k, v) if k in changes else v for k, v in node.items()}
    merged.update({k: v for k, v in changes.items() if k not in node})
    # a null of the changes removes the key; a null the parent wrote stays (llama.yaml's window: null)
    out = Edited({k: v for k, v in merged.items() if not (v is None and k in changes)})
    out.loc, out.lines = node.loc, node.lines
    inherited = getattr(node, "locs", {})
    out.locs = {**inherited, **{k: loc_of(changes, k) for k in changes}}
    return out
