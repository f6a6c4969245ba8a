"""A repeated block call whose arguments give its repetitions different values, written as the
model has them: a helper of `specialize.py`.

`schedule` evaluates each repetition's arguments (conditions decided, sizes kept as names) and
groups equal repetitions into runs; `run_calls` writes a few runs as one call each (Qwen2's
first 21 layers without a window, then 7 with one), and so does a schedule of layers of a few
kinds that switch the block's `when:`s (Gemma 3's five sliding layers, then one full), which
`variants` then splits into a block per kind.  A schedule of values (a stride per stage) or of
many runs stays one call reading the index.
"""
from __future__ import annotations

from typing import Any, Mapping

from .. import expr
from .compose import is_spec_block
from .partial import Expr
from .prune import names_in
from . import walkdata as sp
from .variants import decision, holders

FEW_RUNS = 3      # a schedule of more runs than this is written as one call, unless its runs are layers of kinds:
FEW_KINDS = 3     # at most this many (Gemma 3's sliding and full layers)
MANY_RUNS = 24    # and never more runs than this (Gemma 3 27B's 62 layers are 21 runs of 5 sliding or 1 full)


def schedule(walker, raw: Mapping, scope: "sp._Scope", index: str, steps: range) -> list | None:
    """[(start, count, arguments)] of a repeated call's runs of repetitions whose arguments are
    equal, each argument evaluated at its repetition (conditions decided, sizes kept as names);
    None when no argument reads the index, or the index is read beyond the arguments (`group:`,
    `tied_to:`, `shared: true`)."""
    args = {k: v for k, v in raw.items() if k not in sp.CALL_KEYS and k != "tied_to"}
    definition = walker.blocks.get(raw["block"])
    reads = [k for k, v in args.items() if isinstance(v, str) and index in expr.names(v)
             and (is_spec_block(definition) or _reads(walker, definition, k))]
    if not reads or raw.get("shared") is True or any(
            isinstance(raw.get(k), (str, dict)) and index in names_in(raw.get(k)) for k in ("group", "tied_to")):
        return None
    runs: list = []
    others = {k: walker.fold(v, scope) for k, v in args.items() if k not in reads}
    for i in steps:
        local = sp._Scope({**scope.known, index: i}, scope.free - {index})
        values = {k: walker.fold(args[k], local) for k in reads}
        decided = {k: walker.fold(v, local, decide=True) if isinstance(v, Expr) else v for k, v in values.items()}
        key = _body(walker, definition, {**others, **decided}, scope) or repr([(k, sp._text(v)) for k, v in decided.items()])
        if runs and runs[-1][3] == key:  # the same body: the run's first values build it
            runs[-1][1] += 1
            runs[-1][2] = {k: v if sp._text(v) == sp._text(values[k]) else
                           decided[k] if sp._text(runs[-1][4][k]) == sp._text(decided[k]) else v
                           for k, v in runs[-1][2].items()}
        else:
            runs.append([i, 1, values, key, decided])
    if len(runs) > MANY_RUNS or len(runs) > FEW_RUNS and (len({r[3] for r in runs}) > FEW_KINDS or
                                 _kinds(walker, raw["block"], definition, runs, scope, index, others) < 2):
        return None  # a schedule of values (a stride per stage), or of many kinds: its expression says it shorter
    return [tuple(r[:3]) for r in runs]

def _body(walker, definition: Any, args: dict, scope: "sp._Scope") -> str | None:
    """What a repetition's body is made of: every expression of the block at its arguments (GPT-Neo's
    first two layers, `layer: 0` and `layer: 1`, are both local: one body)."""
    if is_spec_block(definition):
        return None
    known = {k: v for k, v in args.items() if not isinstance(v, Expr)}
    local = sp._Scope({**scope.known, **known}, set())
    parts = [(k, str(v)) for k, v in args.items() if isinstance(v, Expr)]   # left to a name of the caller's
    for name, raw in (definition.get("variables") or {}).items():
        value = walker.fold(raw, local, decide=True)
        parts.append(sp._text(value))
        if not isinstance(value, Expr):
            local.known[name] = value
    for text in _texts({k: definition.get(k) for k in ("nodes", "outputs")}):
        try:
            parts.append(sp._text(walker.fold(text, local, decide=True)))
        except Exception:  # a word or a reference, not an expression
            parts.append(text)
    return repr(parts)


def _kinds(walker, block: str, definition: Any, runs: list, scope: "sp._Scope", index: str, others: dict) -> int:
    """How many ways the runs' arguments switch the block's `when:`s (layers of kinds: 2)."""
    if is_spec_block(definition):
        return 1
    conditions = holders(definition)
    seen = set()
    for start, _, values, *_ in runs:
        local = sp._Scope({**scope.known, index: start}, scope.free - {index})
        args = {k: walker.fold(v, local, decide=True) if isinstance(v, Expr) else v
                for k, v in {**others, **values}.items()}
        seen.add(tuple(decision(walker, definition, block, (None, args, scope.free, index), h) for h in conditions))
    return len(seen)

def _reads(walker, definition: Mapping, param: str) -> bool:
    """Whether a block still reads its argument `param` at the spec's values (GPT-2's `layer`,
    read only when scale_attn_by_inverse_layer_idx is set, is not read otherwise)."""
    scope = sp._Scope({}, {param})
    for key in ("variables", "nodes", "outputs"):
        for text in _texts(definition.get(key)):
            try:
                folded = walker.fold(text, scope)
            except Exception:  # a word or a reference, not an expression
                continue
            if isinstance(folded, Expr) and param in expr.names(folded):
                return True
    return False

def run_calls(walker, raw: Mapping, scope: "sp._Scope", given: dict, index: str, runs: list) -> list:
    """One call per run: the last keeps the call's name (what reads the call reads the last
    repetition), the others are named by their first repetition; each reads the one before."""
    name = raw["name"]
    definition = walker.blocks.get(raw["block"]) or {}
    fed = list(definition.get("inputs") or ["x"])[:len(_outputs_of(definition))]
    path = raw.get("path", sp._text(name))
    nodes, previous = [], None
    for k, (start, count, values) in enumerate(runs):
        run = {**{key: v for key, v in raw.items() if key not in ("repeat", "start", "path", "index")},
               "name": name if k == len(runs) - 1 else f"{name}_{start}"}
        run = {"name": run.pop("name"), "block": run.pop("block"), **run}
        node = dict(given)
        if previous is not None and "in" in node:
            node["in"] = _fed(node["in"], fed, previous, len(_outputs_of(definition)))
        one = walker._one_call(run, scope, node, index, None, values)
        placed = {"name": one.pop("name"), "block": one.pop("block")}
        if "in" in one:
            placed["in"] = one.pop("in")
        placed.update({"path": path, "repeat": count, **({"start": start} if start else {}), **one})
        nodes.append(placed)
        _replace_call(walker, one, placed)
        previous = placed["name"]
    return nodes

def _replace_call(walker, old: dict, new: dict) -> None:
    for calls in walker.calls.values():
        for k, call in enumerate(calls):
            if call[0] is old:
                calls[k] = (new,) + call[1:]


def _texts(value: Any):
    """The strings of a block's data a call's argument may be read in (not names of nodes, ops or blocks)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k == "in" and isinstance(v, Mapping):  # an input's condition (an alternative's), not the references
                for item in v.values():
                    for one in item if isinstance(item, list) else [item]:
                        if isinstance(one, Mapping) and "when" in one:
                            yield one["when"]
            elif k not in ("name", "op", "block", "in", "category", "description"):
                yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)
    elif isinstance(value, str):
        yield value


def _outputs_of(definition: Mapping) -> list:
    outputs = definition.get("outputs") if isinstance(definition, Mapping) else None
    return list(outputs) if isinstance(outputs, (list, dict)) else [outputs or "last"]


def _fed(value: Any, fed: list, previous: str, count: int) -> Any:
    """A run's `in:` with the inputs the block's outputs feed read from the run before."""
    refs = [previous] if count == 1 else [f"{previous}:{q}" for q in range(count)]
    if isinstance(value, dict):
        return {k: refs[fed.index(k)] if k in fed else v for k, v in value.items()}
    if isinstance(value, list):
        return refs + value[count:]
    return refs[0] if count == 1 else refs
