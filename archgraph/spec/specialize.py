"""A spec specialised to its variables' values: the spec a template is for one configuration.

`specialize(spec, var_locs, settings)` takes a merged spec (`extends:` applied) and the
values some variables are set to, and gives the same model as plain data: every `when:`
decided (a node that does not exist is left out, `a|b` reads the one that does), every
switch folded into the expressions that read it (`partial.residual`), and only the
variables the model still reads kept: the whole and real numbers a setting gives (sizes,
epsilons, rates) and those computed from them.  A block argument every call passes the
same constant is folded into the block, one passed as the spec's variable of its name is
left to the variable (blocks read the spec's variables); the rest stay arguments.
Hyperparameters at their op's default are left out.  Symbolic sizes (B, S) stay symbols.
Values are ready for YAML: an expression is its text, a word in an expression `'word'`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import expr
from ..errors import Loc
from ..ops import REGISTRY
from ..record import MISSING
from .blocks import block_params
from .compose import is_spec_block
from .graphs import _alternatives, check_repeat
from .partial import Expr, residual, source
from .prune import drop_unread_inputs, names_in
from .schedule import run_calls, schedule
from .variants import variants
from .values import _admits_text, _element_type, evaluate_variables
from .walkdata import CALL_KEYS, _MISSING, _Default, _Pending, _Scope, _text




@dataclass
class Specialized:
    variables: dict[str, Any]          # kept variable -> its value (a setting) or expression text
    spec: dict[str, Any]               # the rest of the spec, as YAML data, without 'variables'
    locs: dict[str, Loc] = field(default_factory=dict)  # where each kept variable was declared


@expr.budget()  # the template's expressions share one budget of list items and steps, as a build's
def specialize(spec: Mapping[str, Any], var_locs: Mapping[str, Loc], settings: Mapping[str, Any],
               load_spec=None) -> Specialized:
    """`load_spec(name, at, relative_to)` reads a spec a block uses (`{spec: NAME, inherit: true}`:
    the variables the call inherits are written out)."""
    raw_vars = spec.get("variables") or {}
    values = evaluate_variables(raw_vars, var_locs, {}, settings)
    sizes = _input_sizes(spec.get("inputs") or {}, raw_vars)
    kept = _kept(raw_vars, values, settings, sizes)
    walker = _Walker(spec.get("blocks") or {}, {k: v for k, v in values.items() if k not in kept},
                     {k: values[k] for k in kept})
    walker.open = _following(raw_vars, {k for k in sizes if k not in settings}) & kept
    walker.load_spec = load_spec
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key in ("variables", "extends", "edit", "blocks", "nodes", "outputs"):
            continue
        out[key] = _inputs(value, walker) if key == "inputs" else \
            _constraints(value, walker) if key == "constraints" else value
    inputs = tuple((spec.get("inputs") or {}).keys())
    nodes, scope = walker.graph(spec.get("nodes") or [], inputs, _Scope({}, set()))
    blocks = walker.finish()
    if blocks:
        out["blocks"] = blocks
    out["nodes"] = nodes
    if "outputs" in spec:
        out["outputs"] = walker.outputs(spec["outputs"], scope, _Scope({}, set()))
    decide = {k: v for k, v in walker.values.items() if k not in walker.open}  # conditions decided, sizes kept
    variables = {k: _elements(settings[k]) if k in settings else
                 _text(residual(raw_vars[k], walker.known, walker.values, None, decide))
                 for k in raw_vars if k in kept}
    drop_unread_inputs(blocks, walker.calls, out, variables, _callers_first)
    used = _used(out, variables)
    variables = {k: v for k, v in variables.items() if k in used}
    return Specialized(variables, out, {k: var_locs[k] for k in variables if k in var_locs})


LONG_LIST = 200   # characters: a list longer than this as text stays a variable (expressions stop at 1,000)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kept(raw_vars: Mapping[str, Any], values: Mapping[str, Any], settings: Mapping[str, Any],
          sizes: set[str] = frozenset()) -> set[str]:
    """The variables that stay variables: numbers a setting gives, lists it gives too long to write
    into each expression that reads them (a 64-layer layer_types), the numbers an input's shape is
    made of (`sizes`: Qwen2-VL's image of IH x IW pixels, which `--set` may change), and the numbers,
    lists and truths computed from kept ones (Gemma 4's per-layer head sizes from layer_types, LLaVA-NeXT's
    grid of tiles from the image's size and whether the image is wide)."""
    kept = {k for k in raw_vars if k in settings and (_number(values.get(k)) or _long_list(values.get(k)))}
    kept |= {k for k in sizes if _number(values.get(k))}
    changed = True
    while changed:
        changed = False
        known = {k: v for k, v in values.items() if k not in kept}
        for k, raw in raw_vars.items():
            if k not in kept and isinstance(values.get(k), (int, float, list)) and \
                    isinstance(residual(raw, known), Expr):
                kept.add(k)
                changed = True
    return kept


def _following(raw_vars: Mapping[str, Any], roots: set[str]) -> set[str]:
    """`roots` and the variables computed from them."""
    out = set(roots)
    changed = True
    while changed:
        changed = False
        for k, raw in raw_vars.items():
            if k not in out and isinstance(raw, str) and out & set(expr.names(raw)):
                out.add(k)
                changed = True
    return out


def _input_sizes(inputs: Mapping[str, Any], raw_vars: Mapping[str, Any]) -> set[str]:
    """The variables the inputs' shapes are made of, and those they are computed from (NP = GH * GW,
    GH from IH): the sizes of the inputs a spec lets `--set` choose."""
    todo = [d for value in inputs.values() for d in
            ((value.get("shape") if isinstance(value, Mapping) else value) or []) if isinstance(d, str)]
    names: set[str] = set()
    while todo:
        for name in expr.names(todo.pop()):
            if name in raw_vars and name not in names:
                names.add(name)
                if isinstance(raw_vars[name], str):
                    todo.append(raw_vars[name])
    return names


def _long_list(value: Any) -> bool:
    return isinstance(value, list) and len(source(value)) > LONG_LIST


def _elements(value: Any) -> Any:
    """A setting as a spec's variable holds it: a list element by element (each word quoted)."""
    return [_elements(v) for v in value] if isinstance(value, list) else _text(value)


class _Walker:
    def __init__(self, blocks: Mapping[str, Any], known: dict, values: dict) -> None:
        self.blocks, self.known, self.values = blocks, known, values
        self.calls: dict[str, list] = {}    # block -> [(call dict, folded args, caller's free names)]
        self.load_spec = None
        self.open: set = set()              # kept variables a `when:` does not decide (input sizes)
        self.done: dict[str, Any] = {}
        self.decisions: dict[str, dict] = {}   # block -> id(a mapping holding `when:`) -> its value
        self.current: str | None = None        # the block being specialised

    # -- expressions ------------------------------------------------------------------
    def fold(self, value: Any, scope: _Scope, index=None, decide: bool = False) -> Any:
        """`value` with the folded names in; `decide`: the kept variables' values too, but for the input
        sizes the spec leaves to `--set` and what follows from them (`open`: a `when:` on them stays)."""
        decided = {k: v for k, v in self.values.items() if k not in self.open}
        known = {**self.known, **(decided if decide else {}), **scope.known}
        for name in scope.free:
            known.pop(name, None)
            decided.pop(name, None)
        return residual(value, known, self.values, index, None if decide else decided)

    def _when(self, holder: Mapping, scope: _Scope) -> Any:
        """A `when:` as the block's calls decide it (`variants`), else as the values decide it."""
        decided = self.decisions.get(self.current, {}).get(id(holder))
        return decided if decided is not None else self.fold(holder["when"], scope, decide=True)

    # -- graphs -----------------------------------------------------------------------
    def graph(self, raw_nodes: list, inputs: tuple, scope: _Scope) -> tuple[list, dict]:
        """The nodes that exist, and the names they make (True: surely, False: by a `when:` left open)."""
        made = dict.fromkeys(inputs, True)
        out = []
        for raw in raw_nodes:
            node: dict[str, Any] = {}
            sure = True
            if "when" in raw:
                keep = self._when(raw, scope)
                if keep is False:
                    continue
                if keep is not True:
                    node["when"], sure = _text(keep), False
            if "in" in raw:
                node["in"] = _refs(self._inputs(raw["in"], scope), made)
            made_now = self._call(raw, scope, node) if "block" in raw else self._op(raw, scope, node)
            for one in made_now if isinstance(made_now, list) else [made_now]:
                out.append(one)
                made[one["name"]] = made.get(one["name"], False) or sure
        return out, made

    def _op(self, raw: Mapping, scope: _Scope, given: dict) -> dict:
        cls = REGISTRY.get(raw["op"])
        fields = cls.hyperparameters() if cls else {}
        types = cls.types() if cls else {}
        node = {}
        for key, value in raw.items():
            if key in ("when", "in"):
                if key in given:
                    node[key] = given[key]
                continue
            if key in fields:
                folded, plain = self._typed(value, types[key], scope)
                default = fields[key].default
                if default is not MISSING and not isinstance(plain, Expr) and _same(plain, default):
                    continue
                node[key] = folded
            elif key == "unused":
                node[key] = _text(self.fold(value, scope, decide=True))
            else:
                node[key] = value
        return node

    def _typed(self, value: Any, typ: Any, scope: _Scope) -> tuple[Any, Any]:
        """(the value as the spec writes it, the folded value)."""
        if isinstance(value, str) and _admits_text(typ, value):
            return value, value  # a word the op reads as it is
        if isinstance(value, list):
            inner = _element_type(typ)
            parts = [self._typed(v, inner, scope) for v in value]
            plain = [p for _, p in parts]
            return [w for w, _ in parts], Expr("[...]") if any(isinstance(p, Expr) for p in plain) else plain
        folded = self.fold(value, scope)
        if isinstance(folded, str) and not isinstance(folded, Expr) and _admits_text(typ, folded):
            return folded, folded
        return _text(folded), folded

    def _call(self, raw: Mapping, scope: _Scope, given: dict) -> dict | list:
        """A block call as the spec writes it; a repeated call whose arguments give its repetitions
        different values (a layer schedule) as one call per run of equal repetitions, each run's
        values evaluated (Gemma 3's sliding and full layers: `window: W` on the first five, none on
        the sixth)."""
        index = raw.get("index", "i")
        steps = None
        if "repeat" in raw:
            repeat = self.fold(raw["repeat"], scope, decide=True)
            start = self.fold(raw.get("start", 0), scope, decide=True)
            if isinstance(repeat, int) and isinstance(start, int):
                check_repeat(raw, repeat, scope.known)
                steps = range(start, start + repeat)
        runs = schedule(self, raw, scope, index, steps) if steps else None
        if runs is None:
            return self._one_call(raw, scope, given, index, steps)
        if len(runs) == 1:
            return self._one_call(raw, scope, given, index, None, runs[0][2])
        return run_calls(self, raw, scope, given, index, runs)

    def _one_call(self, raw: Mapping, scope: _Scope, given: dict, index: str, steps, fixed=None) -> dict:
        """One call; `fixed`: the index-reading arguments' values (one run of a schedule)."""
        block = raw["block"]
        definition = self.blocks.get(block)
        spec_block = is_spec_block(definition)
        params = {} if spec_block else block_params(definition, block)
        node, args = {}, {}
        for key, value in raw.items():
            if key in ("when", "in"):
                if key in given:
                    node[key] = given[key]
                continue
            if key in ("repeat", "start", "path", "unused"):
                node[key] = _text(self.fold(value, scope))
            elif key == "group" and isinstance(value, dict):
                local = _Scope(scope.known, scope.free | {index})
                node[key] = {k: _text(self.fold(v, local, (index, steps) if steps else None))
                             for k, v in value.items()}
            elif key == "tied_to":  # like an argument, it may use the repetition index
                local = _Scope(scope.known, scope.free | {index})
                node[key] = _text(self.fold(value, local, (index, steps) if steps else None))
            elif key in CALL_KEYS:
                node[key] = value
            elif fixed is not None and key in fixed:
                args[key] = fixed[key]
                node[key] = _Pending()
            else:  # an argument
                uses_index = isinstance(value, str) and index in expr.names(value) and "repeat" in raw
                idx = (index, steps) if uses_index and steps else None
                local = _Scope(scope.known, scope.free | ({index} if uses_index else set()))
                args[key] = self.fold(value, local, idx) if not (isinstance(value, str) and value.isidentifier()
                                                                 and value not in self._names(local)) else value
                node[key] = _Pending()
        if not spec_block:
            for p, default in params.items():
                if p not in args and default is not None:
                    args[p] = _Default(self.fold(default, _Scope({}, set())))
        self.calls.setdefault(block, []).append((node, args, set(scope.free), index))
        return node

    def _inputs(self, value: Any, scope: _Scope) -> Any:
        """`in:` with each `{from: ref, when: cond}` decided: the reference, or left out; an input
        sliced per repetition keeps its `each:` (folded)."""
        if not isinstance(value, dict):
            return value
        out = {}
        for key, item in value.items():
            if _alternatives(item):   # the first whose condition holds: those decided false go, a true one ends it
                kept = []
                for alternative in item:
                    keep = self._when(alternative, scope) if "when" in alternative else True
                    if keep is not False:
                        kept.append({"from": alternative["from"], **({} if keep is True else {"when": _text(keep)})})
                    if keep is True:
                        break
                if not kept:
                    continue
                item = kept[0]["from"] if len(kept) == 1 and "when" not in kept[0] else \
                    kept[0] if len(kept) == 1 else kept
            if isinstance(item, dict) and "from" in item:
                keep = self._when(item, scope) if "when" in item else True
                if keep is False:
                    continue
                each = {"each": _text(self.fold(item["each"], scope))} if "each" in item else {}
                item = item["from"] if keep is True and not each else \
                    {"from": item["from"], **({} if keep is True else {"when": _text(keep)}), **each}
            out[key] = item
        return out

    def _names(self, scope: _Scope) -> set:
        return set(self.known) | set(self.values) | set(scope.known) | scope.free

    # -- blocks -----------------------------------------------------------------------
    def finish(self) -> dict:
        """Each called block specialised to its calls (callers first), and its calls completed; a
        block its calls switch differently, one block per way (`variants`)."""
        order: dict[str, list] = {}
        for block in _callers_first(self.blocks):
            if block in self.calls:
                split = variants(self, block) if not is_spec_block(self.blocks[block]) else {block: None}
                order[block] = list(split)
                if block not in split:
                    del self.calls[block]
                for name, calls in split.items():
                    if calls is not None:
                        self.calls[name] = calls
                for name in split:
                    self.done[name] = self._block(name)
        return {name: self.done[name] for b in self.blocks if b in order for name in order[b]}

    def _block(self, block: str) -> Any:
        self.current = block
        definition = self.blocks[block]
        calls = self.calls[block]
        if is_spec_block(definition):
            inherited = self._inherited(definition)
            for node, args, free, _ in calls:
                _complete(node, args)
                for name in inherited:  # written out: the spec's switches are no variables any more
                    if name in node:
                        continue
                    if name in free or name in self.values:
                        node[name] = name
                    elif name in self.known:
                        node[name] = _text(self.known[name])
            return {k: v for k, v in definition.items() if k != "inherit"}
        params = block_params(definition, block)
        scope = _Scope({}, set())
        keep = []
        own = set(params) | set(definition.get("variables") or {})
        for p, default in params.items():
            given = [args.get(p, _MISSING) for _, args, _, _ in calls]
            given = [g.value if isinstance(g, _Default) else g for g in given]
            if all(g is not _MISSING and not isinstance(g, Expr) for g in given) and \
                    len({repr(g) for g in given}) == 1:
                scope.known[p] = given[0]
            elif all(isinstance(g, Expr) and g == p and p in self.values and p not in free
                     for g, (_, _, free, _) in zip(given, calls)):
                pass  # the spec's variable of the same name: the block reads it
            elif isinstance(given[0], Expr) and all(g == given[0] for g in given) and \
                    not any(expr.names(given[0]) & (free | {index} | own)
                            for (_, _, free, index) in calls):
                scope.known[p] = given[0]  # one expression of the spec's variables: written in its place
            else:
                keep.append(p)
                scope.free.add(p)
        for node, args, _, index in calls:
            _complete(node, {k: v for k, v in args.items() if k in keep and not isinstance(v, _Default)})
            if not any(isinstance(node.get(k), str) and index in expr.names(node[k]) for k in keep
                       if k in node):
                node.pop("index", None)
                node.pop("group", None)
        out: dict[str, Any] = {}
        for key, value in definition.items():
            if key == "args":
                if keep:
                    defaults = {p: None if params[p] is None else _text(self.fold(params[p], _Scope({}, set())))
                                for p in keep}
                    out["args"] = keep if all(d is None for d in defaults.values()) else defaults
            elif key == "variables":
                own = {}
                for name, raw in (value or {}).items():
                    folded = self.fold(raw, scope)
                    if isinstance(folded, Expr):
                        own[name] = str(folded)
                        scope.free.add(name)
                    else:
                        scope.known[name] = folded
                if own:
                    out["variables"] = own
            elif key == "nodes":
                inputs = tuple(definition.get("inputs") or ["x"])
                out["nodes"], made = self.graph(value, inputs, scope)
                if "outputs" in definition:
                    out["outputs"] = self.outputs(definition["outputs"], made, scope)
            elif key != "outputs":
                out[key] = value
        return out

    def _inherited(self, definition: Mapping) -> list:
        """The variables of a used spec that inherits its caller's (none unless `inherit: true`)."""
        if definition.get("inherit") is not True or self.load_spec is None:
            return []
        from .extends import merge_extends
        used = self.load_spec(str(definition["spec"]), definition.key_loc("spec"), definition.loc)
        return list(merge_extends(used, self.load_spec)[0].get("variables") or {})

    def outputs(self, raw: Any, made: dict, scope: _Scope) -> Any:
        if not isinstance(raw, dict):
            return [_refs(r, made) for r in raw] if isinstance(raw, list) else _refs(raw, made)
        out = {}
        for name, item in raw.items():
            if isinstance(item, dict):
                entry = {}
                if "when" in item:
                    keep = self._when(item, scope)
                    if keep is False:
                        continue
                    if keep is not True:
                        entry["when"] = _text(keep)
                ref = _refs(item.get("from"), made)
                out[name] = {"from": ref, **entry} if entry else ref
            else:
                out[name] = _refs(item, made)
        return out


def _complete(node: dict, args: dict) -> None:
    for key in list(node):
        if isinstance(node[key], _Pending):
            if key in args:
                node[key] = _text(args[key])
            else:
                del node[key]


def _callers_first(blocks: Mapping[str, Any]) -> list:
    """The blocks, each after every block whose nodes may call it."""
    calls = {b: {n.get("block") for n in (d.get("nodes") or []) if isinstance(n, dict) and "block" in n}
             for b, d in blocks.items() if isinstance(d, dict) and not is_spec_block(d)}
    order: list = []
    seen: set = set()

    def visit(b):
        if b in seen:
            return
        seen.add(b)
        for caller, callees in calls.items():
            if b in callees:
                visit(caller)
        order.append(b)
    for b in blocks:
        visit(b)
    return order


def _refs(value: Any, made: dict) -> Any:
    """`in:` with each `a|b|c` narrowed to what exists: the ones that may, up to one that surely does."""
    if isinstance(value, dict):
        if "from" in value:  # an input that exists only when its condition holds
            return {**value, "from": _refs(value["from"], made)}
        return {k: _refs(v, made) for k, v in value.items()}
    if isinstance(value, list):
        return [_refs(v, made) for v in value]
    if not isinstance(value, str) or "|" not in value:
        return value
    options = []
    for option in (o.strip() for o in value.split("|")):
        base = option.split(":")[0].strip()
        if base in made:
            options.append(option)
            if made[base]:
                break
    return "|".join(options) if options else value


def _same(value: Any, default: Any) -> bool:
    return type(value) is type(default) and value == default or (value is None and default is None)


def _inputs(raw: Mapping, walker: _Walker) -> dict:
    out = {}
    for name, value in raw.items():
        if isinstance(value, dict):
            entry = dict(value)
            if isinstance(entry.get("shape"), list):
                entry["shape"] = [_dim(d, walker) for d in entry["shape"]]
            out[name] = entry
        else:
            out[name] = [_dim(d, walker) for d in value] if isinstance(value, list) else value
    return out


def _dim(dim: Any, walker: _Walker) -> Any:
    if not isinstance(dim, str):
        return dim
    folded = walker.fold(dim, _Scope({}, set()))
    return str(folded) if isinstance(folded, Expr) else folded


def _constraints(raw: Any, walker: _Walker) -> Any:
    if not isinstance(raw, list):
        return raw
    out = []
    for item in raw:
        check = item.get("check") if isinstance(item, dict) else item
        folded = walker.fold(check, _Scope({}, set()))
        if folded is True:
            continue
        out.append({**item, "check": _text(folded)} if isinstance(item, dict) else _text(folded))
    return out


def _used(spec: Any, variables: Mapping[str, Any]) -> set:
    """The variables the spec reads, and those they read in turn."""
    names = names_in(spec)
    todo = [n for n in names if n in variables]
    while todo:
        more = names_in(variables[todo.pop()]) - names
        names |= more
        todo.extend(n for n in more if n in variables)
    return names & set(variables)
