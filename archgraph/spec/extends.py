"""`extends:`: a spec that is another spec with some variables and blocks changed.

The child's variables and blocks win over the parent's, its other keys replace the
parent's; a parent's own `extends:` is resolved relative to the parent's file.
"""
from __future__ import annotations

from ..errors import Loc, SpecError
from .values import check_keys, expect_mapping, loc_of
from .yamlload import LocDict

TOP_KEYS = {"archgraph", "name", "description", "extends", "variables", "inputs", "outputs",
            "blocks", "nodes", "constraints"}
MAX_EXTENDS = 8


def merge_extends(spec: LocDict, load_parent) -> tuple[LocDict, dict[str, Loc]]:
    """Apply `extends:` chains: the child's variables and blocks win, other keys replace.
    A parent's own `extends:` is resolved relative to the parent's file."""
    chain = [spec]
    while "extends" in chain[-1]:
        child = chain[-1]
        if load_parent is None or len(chain) > MAX_EXTENDS:
            raise SpecError("'extends' cannot be followed here" if load_parent is None
                            else f"'extends' is nested more than {MAX_EXTENDS} deep (a cycle?)",
                            loc=loc_of(child, "extends"))
        chain.append(load_parent(str(child["extends"]), loc_of(child, "extends"), child.loc))
    merged: dict = {}
    var_locs: dict[str, Loc] = {}
    for level in reversed(chain):
        check_keys(level, TOP_KEYS, "the spec", level.key_loc)
        for key, value in level.items():
            if key in ("variables", "blocks"):
                expect_mapping(value, level, key)
                merged.setdefault(key, {}).update(value)
                if key == "variables":
                    var_locs.update({k: loc_of(value, k) for k in value})
            elif key != "extends":
                merged[key] = value
    out = LocDict(merged)
    out.loc, out.lines = spec.loc, {**getattr(spec, "lines", {})}
    if "nodes" not in out:
        raise SpecError("the spec has no 'nodes:'", loc=spec.loc,
                        hint="list the model's nodes under 'nodes:' (see the README)")
    return out, var_locs


