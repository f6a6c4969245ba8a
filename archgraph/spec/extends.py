"""`extends:`: a spec that is another spec with some variables, blocks and nodes changed.

The child's variables and blocks win over the parent's, its other keys replace the
parent's; a parent's own `extends:` is resolved relative to the parent's file.  A
child's block with `edit:` (or the child's top-level `edit:`) changes single nodes of
the parent's block (or `nodes:`) instead (`edits.py`).
"""
from __future__ import annotations

from ..errors import Loc, SpecError, did_you_mean
from ..limits import MAX_EXTENDS
from .edits import Edited, apply_edits
from .values import check_keys, expect_mapping, loc_of
from .yamlload import TOP_KEYS, LocDict
LANGUAGE = 1  # the version of the spec language (`archgraph: 1`)
# top-level keys whose absence an indentation mistake explains: indented under another key's mapping, each is
# read as an entry of it (`nodes:` under `blocks:` is a block named 'nodes')
STRUCTURE_KEYS = ("nodes", "inputs", "outputs", "blocks", "variables", "constraints", "extends")
ENTRY = {"variables": "a variable", "blocks": "a block", "inputs": "an input", "outputs": "an output"}


def merge_extends(spec: LocDict, load_parent) -> tuple[LocDict, dict[str, Loc]]:
    """Apply `extends:` chains: the child's variables and blocks win, other keys replace.
    A parent's own `extends:` is resolved relative to the parent's file."""
    chain = [spec]
    while "extends" in chain[-1]:
        child = chain[-1]
        if load_parent is None or len(chain) > MAX_EXTENDS:
            raise SpecError("'extends' cannot be followed here" if load_parent is None
                            else f"'extends' is nested more than {MAX_EXTENDS} deep (a cycle?)",
                            loc=loc_of(child, "extends"),
                            hint='load the spec from a file (extends: needs its folder), or shorten the chain '
                                 'of extends:')
        chain.append(load_parent(str(child["extends"]), loc_of(child, "extends"), child.loc))
    merged: dict = {}
    var_locs: dict[str, Loc] = {}
    parent_file = None
    for level in reversed(chain):
        check_keys(level, TOP_KEYS, "the spec", level.key_loc)
        _check_language(level)
        for key, value in level.items():
            if key in ("variables", "blocks"):
                expect_mapping(value, level, key)
                merged.setdefault(key, {}).update(
                    _blocks(value, merged.get("blocks") or {}, parent_file) if key == "blocks" else value)
                if key == "variables":
                    var_locs.update({k: loc_of(value, k) for k in value})
            elif key not in ("extends", "edit"):
                merged[key] = value
        if "edit" in level:
            _need_parent(parent_file, level.key_loc("edit"))
            if "nodes" in level:
                raise SpecError("a spec gives either 'nodes:' (all of them) or 'edit:' (changes to its "
                                "parent's), not both", loc=level.key_loc("edit"),
                                hint="keep 'edit:' and drop 'nodes:', or the other way round")
            merged["nodes"] = apply_edits(merged.get("nodes"), level["edit"], f"the nodes of {parent_file}",
                                          level.key_loc("edit"))
        parent_file = _file_name(level)
    out = LocDict(merged)
    out.loc, out.lines = spec.loc, {**getattr(spec, "lines", {})}
    for level in chain:
        _refuse_misplaced(level, out)
        _check_definitions(level.get("blocks") or {})
    if "nodes" not in out:
        raise SpecError("the spec has no 'nodes:'", loc=spec.loc,
                        hint="list the model's nodes under 'nodes:' (see the README)")
    return out, var_locs


def _blocks(blocks: LocDict, parents: dict, parent_file: str | None) -> dict:
    """The child's blocks: a definition with `edit:` is the parent's block with those changes
    (and the other keys it gives replacing the parent's)."""
    out = {}
    for name, definition in blocks.items():
        if not (isinstance(definition, LocDict) and "edit" in definition):
            out[name] = definition
            continue
        at = definition.key_loc("edit")
        _need_parent(parent_file, at)
        if name not in parents:
            raise SpecError(f"edit: {parent_file} has no block '{name}' to change", loc=at,
                            hint=did_you_mean(name, parents) or f"its blocks: {', '.join(parents) or 'none'}")
        if "nodes" in definition:
            raise SpecError(f"block '{name}' gives either 'nodes:' (all of them) or 'edit:' (changes to the "
                            "parent's), not both", loc=at,
                            hint="keep 'edit:' and drop 'nodes:', or the other way round")
        parent = parents[name]
        edited = Edited({**parent, **{k: v for k, v in definition.items() if k != "edit"}})
        edited.loc, edited.lines = parent.loc, parent.lines
        edited.locs = {**getattr(parent, "locs", {}), **{k: definition.key_loc(k) for k in definition}}
        edited["nodes"] = apply_edits(parent.get("nodes"), definition["edit"],
                                      f"block '{name}' of {parent_file}", at)
        out[name] = edited
    return out


def _need_parent(parent_file: str | None, at: Loc) -> None:
    if parent_file is None:
        raise SpecError("'edit' changes the nodes of the spec this one extends, but it extends none", loc=at,
                        hint="add 'extends: PARENT.yaml', or write the nodes out under 'nodes:'")


def _file_name(level: LocDict) -> str:
    from pathlib import Path
    return Path(str(level.loc.file)).name


def _check_language(level: LocDict) -> None:
    """`archgraph:`, when given, names the language this archgraph reads."""
    version = level.get("archgraph", LANGUAGE)
    if version != LANGUAGE or isinstance(version, bool):
        raise SpecError(f"'archgraph: {str(version).lower()}' names a version of the spec language this archgraph "
                        "does not know", loc=level.key_loc("archgraph"),
                        hint=f"write 'archgraph: {LANGUAGE}' (the language the README describes), or leave it out")


def _check_definitions(blocks: LocDict) -> None:
    """Each block definition is a mapping (refused at its own line, not where it is called)."""
    for name, definition in blocks.items():
        if not isinstance(definition, dict):
            received = "a list" if isinstance(definition, list) else repr(definition)
            raise SpecError(f"block '{name}' must be a mapping with 'nodes:' (or 'spec:'); received {received}",
                            loc=loc_of(blocks, name),
                            hint=f"write '{name}:' with 'nodes:' (and 'args:', 'outputs:') indented under it")


def _refuse_misplaced(level: LocDict, merged: dict) -> None:
    """Refuse a top-level key the spec lacks that stands, indented, under another top-level key (`nodes:`
    under `blocks:`), at its own line: it is there by mistake, not a block or variable of that name."""
    for parent, what in ENTRY.items():
        entries = level.get(parent)
        if not isinstance(entries, LocDict):
            continue
        for key in STRUCTURE_KEYS:
            if key in entries and key not in merged:
                raise SpecError(f"'{key}:' is indented under '{parent}:', so it is read as {what} named '{key}' "
                                f"and the spec has no '{key}:'", loc=entries.key_loc(key),
                                hint=f"unindent '{key}:' and its entries so that it lines up with '{parent}:'")
