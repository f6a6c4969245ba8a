"""Block calls: a block's arguments, a call's path segment, inputs by keyword, repetitions.

Helpers of `graphs.py` that do not recurse: reading a block definition's `args`,
evaluating a call's arguments, its `path:`, `repeat:` and `start:`.
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import Loc, SpecError, did_you_mean
from ..graph import Ref
from .values import check_keys, evaluate
from .yamlload import LocDict

BLOCK_KEYS = {"args", "variables", "inputs", "outputs", "nodes", "category", "trainable", "description"}
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")


def block_params(definition: Any, block: str) -> dict[str, Any]:
    """A block definition's `args`: name -> default (None: required)."""
    if not isinstance(definition, LocDict):
        raise SpecError(f"block '{block}' must be a mapping with 'nodes:'", loc=getattr(definition, "loc", None),
                        hint='write the block as a mapping: {inputs: [x], nodes: [...]}')
    check_keys(definition, BLOCK_KEYS, f"block '{block}'", definition.key_loc)
    args = definition.get("args") or {}
    if isinstance(args, list):
        args = {a: None for a in args if isinstance(a, str)} if all(isinstance(a, str) for a in args) else None
    elif not isinstance(args, dict):
        args = None
    if args is None or not all(isinstance(a, str) and a.isidentifier() for a in args):
        raise SpecError(f"'args' of block '{block}' must list names, or map names to defaults",
                        loc=definition.key_loc("args"), hint="e.g. 'args: [H, A]' or 'args: {H: null, A: 12}'")
    return dict(args)


def argument(value: Any, env, loc: Loc, what: str) -> Any:
    """A block argument: an expression, or a bare word (such as an activation name) kept as text."""
    if isinstance(value, str) and value.isidentifier() and value not in env:
        return value
    return evaluate(value, env, loc, f"argument '{what}'")


def whole_number(raw: LocDict, key: str, env, default: int, least: int = 1) -> int:
    """`repeat:` or `start:`: a whole number of at least `least`."""
    if key not in raw:
        return default
    value = evaluate(raw[key], env, raw.key_loc(key), key)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SpecError(f"'{key}' must be a whole number of at least {least}; received {value!r}",
                        loc=raw.key_loc(key), hint='give a whole number')
    return value


def call_path(raw: LocDict, env, indexed: bool) -> str | None:
    """A block call's `path:` (an expression giving a word): the segment its tensors' paths use
    instead of the call's name; '' adds none (how a bare `BertModel` names `embeddings.*`)."""
    if "path" not in raw:
        return None
    value = evaluate(raw["path"], env, raw.key_loc("path"), "path")
    if not isinstance(value, str) or (value and not _PATH.fullmatch(value)):
        raise SpecError(f"'path' must give a dotted name or '' (no segment); received {value!r}",
                        loc=raw.key_loc("path"),
                        hint="quote a literal word inside the expression: path: \"'bert'\"")
    if value == "" and indexed and raw.get("shared") is not True:  # shared repetitions are not numbered
        raise SpecError("a repeated block needs a path segment to number its repetitions",
                        loc=raw.key_loc("path"), hint="drop 'path: ...' or give it a name")
    return value


def keyword_inputs(block: str, inputs: tuple[str, ...], refs, keywords, raw: LocDict,
                   read: frozenset) -> tuple[Ref, ...]:
    """`in: {x: a, kv: b}` on a block call: the refs in the order of the block's inputs.  Inputs
    the body never reads (`read` holds those it does) may be left out, anywhere: one left out
    before the last given is bound to the first given input's value, which nothing then reads."""
    given = dict(zip(keywords, refs))
    for key in keywords:
        if key not in inputs:
            hint = did_you_mean(key, inputs)
            raise SpecError(f"block '{block}' has no input '{key}'", loc=raw.key_loc("in"),
                            hint=hint or f"its inputs: {', '.join(inputs)}")
    needed = max((i + 1 for i, name in enumerate(inputs) if name in read), default=0)
    count = max([needed, *(inputs.index(k) + 1 for k in given)])
    missing = [i for i in inputs[:count] if i not in given and i in read]
    if missing:
        raise SpecError(f"block '{block}' needs the input(s) {', '.join(missing)}", loc=raw.key_loc("in"),
                        hint=f"give each in 'in:' (its inputs: {', '.join(inputs)}), e.g. "
                             f"in: {{{', '.join(f'{i}: NODE' for i in inputs[:count])}}}")
    filler = refs[0] if refs else None
    return tuple(given.get(i, filler) for i in inputs[:count])


def instance_key(block: str, args: dict, category, trainable) -> tuple:
    """Calls with equal keys share one body (repr tells SymInts with other formulas apart)."""
    return (block, tuple(sorted((k, repr(v)) for k, v in args.items())), category, trainable)
