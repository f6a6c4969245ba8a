"""Nodes and graphs of a spec: op nodes, block calls (with their bodies), wiring and order.

A graph's nodes keep the order they are declared in when every `in:` names an
earlier node or an input (networkx sorts them, and finds any cycle, only when a
node reads a later one).  A node whose output nothing reads is a warning
(`Ctx.warnings`), not an error.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Mapping

from .. import expr
from ..errors import ArchgraphError, Loc, SpecError, did_you_mean
from ..names import check_name, name_ok
from ..graph import NO_TIES, BlockNode, Graph, OpNode, Ref, SpecWarning, read_inputs, wiring
from ..limits import MAX_BLOCK_DEPTH, MAX_BLOCK_INSTANCES, MAX_REPEAT
from ..numbers import decided, decided_names, plain
from ..ops import REGISTRY
from ..ops.base import REGISTRY as _LOADED_OPS  # a plain dict of the op classes imported so far
from .blocks import (
    argument,
    block_params,
    call_path,
    instance_key,
    keyword_inputs,
    whole_number,
)
from .compose import instantiate_spec, is_spec_block, spec_params
from .fold import canonical
from .wholetie import tie_path, tied_copy
from .values import (
    check_keys,
    evaluate,
    evaluate_variables,
    expect_mapping,
    hints,
    loc_of,
    typed,
)
from .yamlload import LocDict
from ..record import Record, factory

NODE_KEYS = {"name", "op", "block", "in", "category", "trainable", "tie", "repeat", "start", "shared",
             "when", "description", "dtype", "path", "unused", "index", "group"}
GENERIC_CATEGORIES = {"linear", "other"}  # a block's category replaces these, not 'norm' or 'embedding'
HEAD_NAMES = frozenset({"head", "lm_head", "classifier", "score", "qa_outputs", "cls"})


def named_like_head(name: str) -> bool:
    """Whether a node's name says it is (part of) a model's head: a dotted part of it is lm_head, head,
    classifier, score, qa_outputs or cls, or ends in `_head` (`mlm_head`); such a node with no category
    of its own or from its block reports its generic (`linear`) parameters under `head`.

    >>> named_like_head("lm_head"), named_like_head("cls.predictions.decoder"), named_like_head("mlp.c_fc")
    (True, True, False)
    """
    return any(part in HEAD_NAMES or part.endswith("_head") for part in name.split("."))


_REF = re.compile(r"([^:|]+?)\s*(?::\s*([0-9]+|[A-Za-z_][A-Za-z0-9_]*))?")


class Ctx(Record):
    """What building a graph reads: the block definitions and the spec's variables."""

    blocks: Mapping[str, Any]
    globals: Mapping[str, Any]
    cache: dict = factory(dict)
    stack: list = factory(list)
    warnings: list = factory(list)
    load_spec: Any = None          # (name, at, relative_to) -> LocDict: a spec used as a block
    ops: dict = factory(dict)  # id(env) -> (env, {(op class, values): op}): equal nodes share it
    specs: dict = factory(dict)  # block name -> (used spec, its variables' lines)
    folded: dict = factory(dict)  # bodies by what they compute (fold.canonical)


def _inner_ctx(blocks: Mapping[str, Any], env: Mapping[str, Any], outer: Ctx) -> Ctx:
    """The scope of a spec used as a block: its own blocks and variables, the same limits and warnings."""
    return Ctx(blocks, env, stack=outer.stack, warnings=outer.warnings, load_spec=outer.load_spec,
               folded=outer.folded)


def build_graph(ctx: Ctx, name: str, raw_nodes: Any, inputs: tuple[str, ...], env: Mapping,
                category: str | None, trainable: bool, raw_outputs: Any, loc: Loc) -> Graph:
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise SpecError(f"'nodes' of {name} must be a non-empty list of nodes", loc=loc,
                        hint="list them under 'nodes:', each as - {name: NAME, op: OP, ...}")
    nodes: dict[str, Any] = {}
    scope: dict[str, Any] = dict.fromkeys(inputs)  # what a node may read: the inputs, then earlier nodes
    prev = Ref(inputs[0]) if inputs else None
    for raw in raw_nodes:
        if not isinstance(raw, LocDict):
            raise SpecError(f"a node must be a mapping with 'name' and 'op' (or 'block'); received {raw!r}",
                            loc=getattr(raw_nodes, "loc", loc), hint="write '- {name: x, op: linear, ...}'")
        made = _node(ctx, raw, scope, env, category, trainable, prev)
        if made.__class__ is OpNode:  # the common case, without a list per node
            nodes[made.name] = scope[made.name] = made
            prev = Ref(made.name)
            continue
        for node in made if isinstance(made, list) else [made] if made is not None else []:
            nodes[node.name] = scope[node.name] = node
            prev = Ref(node.name)
    if not nodes:
        raise SpecError(f"every node of {name} is switched off by 'when:'", loc=loc,
                        hint="check the 'when:' conditions: at least one node must be left")
    named = outputs_of(raw_outputs, prev, loc, env, scope)
    outputs = tuple(ref for _, ref in named)
    ordered, read = _ordered(nodes, inputs, outputs)
    _warn_unread(ctx, name, ordered, read)
    return Graph(name, inputs, ordered, outputs, loc, output_names=tuple(n for n, _ in named))


def _ordered(nodes: dict, inputs: tuple[str, ...], outputs: tuple[Ref, ...]) -> tuple[dict, set]:
    """The nodes in an order where each comes after what it reads (as declared when that works),
    and the names something reads."""
    seen = set(inputs)
    read = {ref.node for ref in outputs}
    forward = False
    for name, node in nodes.items():
        for ref in node.inputs:
            if ref.node not in seen:  # read before it is declared, or not at all
                if ref.node not in nodes:
                    known = set(inputs) | set(nodes)
                    hint = did_you_mean(ref.node, known)
                    raise SpecError(f"input '{ref.node}' is not a node or an input here", loc=node.loc,
                                    node=name, hint=hint or f"known names: {', '.join(sorted(known))}")
                forward = True
            read.add(ref.node)
        seen.add(name)
    return (_sorted(nodes, inputs) if forward else nodes), read


def _sorted(nodes: dict, inputs: tuple[str, ...]) -> dict:
    """networkx's topological order, declaration order breaking ties; a cycle is an error."""
    import networkx as nx
    dag = wiring(inputs, nodes)
    try:
        cycle = nx.find_cycle(dag)
    except nx.NetworkXNoCycle:
        rank = {n: i for i, n in enumerate([*inputs, *nodes])}
        order = nx.lexicographical_topological_sort(dag, key=rank.__getitem__)
        return {n: nodes[n] for n in order if n in nodes}
    path = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
    first = nodes[cycle[0][1]]
    raise SpecError(f"the wiring has a cycle: {path}", loc=first.loc, node=first.name,
                    hint="a node cannot depend on its own output; check the 'in:' of these nodes")


def _warn_unread(ctx: Ctx, graph: str, nodes: dict, read: set) -> None:
    for name, node in nodes.items():
        if name not in read and not node.unused:
            where = "" if graph == "model" else f" in {graph}"
            ctx.warnings.append(SpecWarning(
                f"the output of '{name}'{where} is never read", node.loc, name,
                "read it in another node's 'in:', list it under 'outputs:', or remove it"))


def _node(ctx: Ctx, raw: Any, scope: dict, env, category, trainable, prev):
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError("a node needs a 'name'", loc=raw.loc, hint="add 'name: my_node'")
    if not name_ok(name):
        check_name(name, "name", raw.key_loc("name"))
    if "when" in raw and not _condition(raw["when"], env, raw.key_loc("when"), name):
        return None
    if name in scope:
        raise SpecError(f"the name '{name}' is used twice", loc=raw.key_loc("name"), node=name,
                        hint="give each node a unique name")
    if ("op" in raw) == ("block" in raw):
        raise SpecError("a node needs exactly one of 'op' or 'block'", loc=raw.loc, node=name,
                        hint="give 'op: NAME' ('archgraph ops' lists them) or 'block: NAME' (one of 'blocks:')")
    own_cat = _category(raw) if "category" in raw else None
    if own_cat is None and category is None and named_like_head(name):
        definition = ctx.blocks.get(raw["block"]) if isinstance(raw.get("block"), str) else None
        if not (isinstance(definition, dict) and definition.get("category")):  # a block's own category wins
            category = "head"
    train = raw.get("trainable", trainable) and trainable
    if not isinstance(train, bool):
        raise SpecError("'trainable' must be true or false", loc=raw.key_loc("trainable"), node=name,
                        hint="write trainable: false, or leave it out (true)")
    try:
        each = _each(raw, env)
        if "op" in raw:
            if each:
                key = next(iter(each))
                raise SpecError(f"input '{key}' takes 'each:', which slices a repeated block call's input per "
                                f"repetition; op '{raw['op']}' is not a block call", loc=each[key][1],
                                hint=f"select one index with an op (op: select, dim: ..., index: ...), or drop "
                                     f"'each:' ({key}: {{from: ...}})")
            return _op_node(ctx, raw, name, prev, scope, env, own_cat or category, own_cat is not None, train)
        refs, keywords = _refs(raw, prev, scope, env)
        return _block_node(ctx, raw, name, refs, keywords, env, own_cat or category, train, each)
    except ArchgraphError as exc:
        raise exc.with_context(loc=raw.loc, node=name)


def _category(mapping: LocDict) -> str | None:
    value = mapping.get("category")
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise SpecError(f"'category' must be a name such as attention or mlp; received {value!r}",
                        loc=mapping.key_loc("category"), hint='give a name such as attention or mlp')
    return value if value is None or name_ok(value) else check_name(value, "category", mapping.key_loc("category"))


def _refs(raw: LocDict, prev: Ref | None, known: dict, env: Mapping | None = None
          ) -> tuple[tuple[Ref, ...], tuple[str, ...]]:
    """The node's inputs, and their parameter names when 'in' is a mapping; `a|b` reads the first of
    a, b that exists here (a node switched off by `when:` does not); in a mapping, `rope: {from: r,
    when: cond}` is an input only when cond holds."""
    value = raw.get("in")
    if isinstance(value, dict) and any(isinstance(v, dict) or _alternatives(v) for v in value.values()):
        value = _conditional_inputs(value, env or {}, raw.key_loc("in"))
    if value is None:
        if prev is None:
            raise SpecError("this node has no 'in:' and there is no previous node to read from",
                            loc=raw.loc,
                            hint="give 'in: NAME': an input of the spec or a node before it")
        return (prev,), ()
    if value.__class__ is str and value in known and ":" not in value:  # the common case: one name
        return (Ref(value),), ()
    items = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else [value]
    refs = tuple(parse_ref(_first(item, known, raw, raw.key_loc("in")), "'in'", raw.key_loc("in"), known)
                 for item in items)
    return refs, tuple(value) if isinstance(value, dict) else ()


def _alternatives(item: Any) -> bool:
    """`rope: [{from: local_rope, when: local}, {from: rope}]`: an input read from the first
    alternative whose condition holds (one without `when:` always does)."""
    return isinstance(item, list) and bool(item) and all(isinstance(a, dict) and "from" in a for a in item)


def _conditional_inputs(value: dict, env: Mapping, loc: Loc) -> dict:
    """`in:` without the inputs whose `when:` is false, the others as plain references; of a list of
    alternatives, the first whose `when:` holds."""
    out = {}
    for key, item in value.items():
        if _alternatives(item):
            for alternative in item:
                check_keys(alternative, {"from", "when"}, f"input '{key}'",
                           getattr(alternative, "key_loc", lambda k: loc))
            item = next((a for a in item if "when" not in a or
                         _condition(a["when"], env, getattr(a, "loc", loc), None)), None)
            if item is None:
                continue
        if isinstance(item, dict):
            check_keys(item, {"from", "when", "each"}, f"input '{key}'", getattr(item, "key_loc", lambda k: loc))
            if "from" not in item:
                raise SpecError(f"input '{key}' names what it reads with 'from:'", loc=loc,
                                hint=f"write {key}: {{from: NODE, when: CONDITION}} or {{from: NODE, each: DIM}}")
            if "when" in item and not _condition(item["when"], env, getattr(item, "loc", loc), None):
                continue
            item = item["from"]
        out[key] = item
    return out


def _each(raw: LocDict, env: Mapping) -> dict[str, tuple[int, Loc]]:
    """`in: {ple: {from: per_layer_inputs, each: 2}}`: the inputs a repeated call slices per repetition
    (repetition k reads index start + k along that dim), by name: (dim, where it is written)."""
    value = raw.get("in")
    if not isinstance(value, dict):
        return {}
    out = {}
    for key, item in value.items():
        if not (isinstance(item, dict) and "each" in item):
            continue
        loc = item.key_loc("each") if isinstance(item, LocDict) else raw.key_loc("in")
        if "when" in item and not _condition(item["when"], env, loc, None):
            continue
        dim = evaluate(item["each"], env, loc, "each")
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise SpecError(f"input '{key}': 'each' is the dim each repetition takes its index along, a whole "
                            f"number; received {dim!r}", loc=loc, hint=f"write {key}: {{from: ..., each: 2}}")
        out[key] = (dim, loc)
    return out


def _first(item: Any, known: dict, raw: Any, loc: Loc) -> Any:
    """The first alternative of `a|b|c` that names an input or an earlier node."""
    if not isinstance(item, str) or "|" not in item:
        return item
    options = [o.strip() for o in item.split("|")]
    for option in options:
        if option.split(":")[0].strip() in known:
            return option
    raise SpecError(f"none of {', '.join(repr(o) for o in options)} is an input or an earlier node here",
                    loc=loc, hint="one of them must exist (its 'when:' true), and come before")


def parse_ref(item: Any, what: str, loc: Loc, known: dict | None = None) -> Ref:
    """`node`, `node:N` (output N of node) or `node:name` (a block's output by the name its
    `outputs:` gives it)."""
    match = _REF.fullmatch(item.strip()) if isinstance(item, str) else None
    if match is None:
        raise SpecError(f"{what} names a node or input, with ':N' for its output N; received {item!r}",
                        loc=loc, hint='name a node or an input: in: [x] or in: [split:1]')
    node, index = match.group(1), match.group(2) or "0"
    if index.isdigit():
        return Ref(node, int(index))
    target = (known or {}).get(node)
    names = target.body.output_names if isinstance(target, BlockNode) else ()
    if index not in names:
        hint = did_you_mean(index, names) or (f"its outputs: {', '.join(names)}" if names else
                                              "only a block call before this node has outputs with names")
        raise SpecError(f"{what}: '{node}' has no output named '{index}'", loc=loc, hint=hint)
    return Ref(node, names.index(index))


_NODE_EXTRAS = frozenset({"tie", "dtype", "unused"})


@functools.cache
def _field_names(cls) -> tuple[str, ...]:
    return tuple(cls.hyperparameters())


@functools.cache
def _op_keys(cls) -> frozenset[str]:
    """The keys a node of this op may have."""
    return frozenset(NODE_KEYS - {"block", "repeat", "start", "shared", "path", "group"} | set(cls.hyperparameters()))


_PLANS: dict[type, tuple] = {}


def _plan(cls) -> tuple[tuple[str, ...], frozenset[str], bool, bool, frozenset[str]]:
    """What building a node of this op needs to know of it, looked up once per node: its
    hyperparameters, the keys a node may have, whether it needs no input, whether it takes
    one, and the keys of a plain node (name, op, in, category, trainable, hyperparameters)."""
    allowed = _op_keys(cls)
    _PLANS[cls] = plan = (_field_names(cls), allowed, cls.arity()[0] == 0, _takes(cls, 1), allowed - _NODE_EXTRAS)
    return plan


def _frozen(value: Any) -> Any:
    """A spec value as a dictionary key (lists as tuples)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _op_node(ctx: Ctx, raw: LocDict, name: str, prev, known, env, category, explicit: bool,
             trainable: bool) -> OpNode:
    # This runs once per node of a spec: a generated graph may have a million.  Checks that cost
    # a call are made only when a cheap test says something is unusual.
    op_name = raw["op"]
    cls = _LOADED_OPS.get(op_name) if op_name.__class__ is str else None
    if cls is None:
        cls = REGISTRY.get(op_name) if isinstance(op_name, str) else None
    if cls is None:
        from ..ops.help import suggest
        raise SpecError(f"unknown op '{op_name}'", loc=raw.key_loc("op"), hint=suggest(str(op_name)))
    plan = _PLANS.get(cls) or _plan(cls)
    fields, allowed, takes_none, takes_one, plain = plan
    extras = not plain.issuperset(raw)  # keys beyond name, op, in and hyperparameters (tie, dtype, ...)
    if extras and not allowed.issuperset(raw):
        for key in cls.retired.keys() & raw.keys() - allowed:  # a field it once took: say what replaced it
            raise SpecError(f"op '{op_name}' no longer takes '{key}'", loc=raw.key_loc(key), hint=cls.retired[key])
        check_keys(raw, allowed, f"op '{op_name}'", raw.key_loc)
    key = (cls, *map(raw.get, fields))  # absent and null make the same op
    made = ctx.ops.get(id(env))
    if made is None or made[0] is not env:  # the env is kept alive with its ops: its id stays its own
        made = ctx.ops[id(env)] = (env, {})
    try:
        op = made[1].get(key)
    except TypeError:  # lists (as tuples, they are keys) or a mapping where a number belongs (build, and fail)
        key = tuple(_frozen(v) for v in key)
        try:
            op = made[1].get(key)
        except TypeError:
            op, key = None, None
    if op is None:  # nodes with the same hyperparameters in the same scope share one (frozen) op
        types = hints(cls)
        values = {k: typed(v, types[k], env, raw.key_loc(k), f"{op_name}.{k}") for k, v in raw.items() if k in fields}
        try:
            op = cls.build(values)
        except ArchgraphError as exc:
            bad = next((k for k in values if k in exc.message), None)
            raise exc.with_context(loc=raw.key_loc(bad) if bad else raw.loc)
        if key is not None:
            made[1][key] = op
    if "in" in raw:
        refs, keywords = _refs(raw, prev, known, env)
    elif takes_none:  # an op that needs no input never reads the previous node
        refs, keywords = (), ()
    elif prev is not None:
        refs, keywords = (prev,), ()
    else:
        refs, keywords = _refs(raw, prev, known)  # the error: nothing to read
    if keywords or not (takes_one if len(refs) == 1 else _takes(cls, len(refs))):
        _check_arity(cls, refs, keywords, raw)
    if not explicit and (category is None or op.category not in GENERIC_CATEGORIES):
        category = op.category
    if not extras or _NODE_EXTRAS.isdisjoint(raw):
        return OpNode(name, op, refs, category, trainable, NO_TIES, raw.loc, keywords)
    storage = None if "dtype" in fields else _dtype(raw)  # an op with its own dtype (arange) takes the key
    return OpNode(name, op, refs, category, trainable, _ties(raw, op), raw.loc, keywords, storage,
                  _unused(raw, env))


def _unused(raw: LocDict, env: Mapping) -> bool:
    """`unused: true`: nothing reads this node on purpose (a module kept for its tensors, such as
    T5's `shared` embedding whose tensor the stacks tie to); no warning.  An expression
    (`unused: not cross`) says when."""
    value = raw.get("unused", False)
    if isinstance(value, str):
        value = evaluate(value, env, raw.key_loc("unused"), "unused")
    if not isinstance(value, bool):
        raise SpecError("'unused' must be true or false", loc=raw.key_loc("unused"),
                        hint="write 'unused: true' or a condition such as 'unused: not cross'")
    return value


def _dtype(raw: LocDict) -> str | None:
    """`dtype: int8`: how this node's weights are stored (the memory pass reads it)."""
    if "dtype" not in raw:
        return None
    from ..dtypes import canonical
    try:
        return canonical(raw["dtype"], "'dtype'")
    except SpecError as exc:
        raise exc.with_context(loc=raw.key_loc("dtype"))


def _check_arity(cls, refs, keywords, raw: LocDict) -> None:
    if not keywords and _takes(cls, len(refs)):
        return
    where = raw.key_loc("in") if "in" in raw else raw.loc
    if keywords:
        names, required = cls.input_names()
        for key in keywords:
            if key not in names:
                hint = did_you_mean(key, names)
                raise SpecError(f"op '{cls.op_name}' has no input '{key}'", loc=where,
                                hint=hint or f"its inputs: {', '.join(names) or 'none'}")
        missing = [n for n in required if n not in keywords]
        if missing:
            raise SpecError(f"op '{cls.op_name}' needs the input(s) {', '.join(missing)}", loc=where,
                            hint=f"give each in 'in:' (its inputs: {', '.join(names)}; "
                                 f"'archgraph ops {cls.op_name}' describes them)")
        return
    least, most = cls.arity()
    if len(refs) < least or (most is not None and len(refs) > most):
        want = f"{least}" if least == most else f"{least} to {most}" if most else f"at least {least}"
        hint = "drop its 'in:'" if most == 0 else None
        raise SpecError(f"op '{cls.op_name}' takes {want} input(s); 'in' gives {len(refs)}", loc=where,
                        hint=hint)


@functools.cache
def _takes(cls, count: int) -> bool:
    """Whether the op takes `count` positional inputs."""
    least, most = cls.arity()
    return least <= count and (most is None or count <= most)


def _ties(raw: LocDict, op) -> Mapping[str, str]:
    tie = raw.get("tie")
    if tie is None:
        return NO_TIES
    if isinstance(tie, str):  # its weight, or the one tensor a node holds (a parameter named by the node: '')
        tensors = [t.name for t in op.params()]
        return {tensors[0] if len(tensors) == 1 else "weight": tie}
    if isinstance(tie, dict) and all(isinstance(v, str) for v in tie.values()):
        return dict(tie)
    raise SpecError("'tie' is a tensor path (ties 'weight', or the node's one tensor) or a mapping {local tensor: tensor path}",
                    loc=raw.key_loc("tie"), hint='write tie: weight, or tie: {weight: path.to.tensor}')


def _block_node(ctx: Ctx, raw: LocDict, name: str, refs, keywords, env, category, trainable, each=None):
    """A block call: one BlockNode, or, when its arguments depend on the repetition index, one per
    run of repetitions that make the same body (a layer schedule: dense × 3, then MoE × 58)."""
    block = raw["block"] if name_ok(raw["block"]) else check_name(raw["block"], "block name", raw.key_loc("block"))
    definition = ctx.blocks.get(block)
    if definition is None:
        hint = did_you_mean(str(block), ctx.blocks)
        raise SpecError(f"unknown block '{block}'", loc=raw.key_loc("block"),
                        hint=hint or ("blocks defined: " + ", ".join(ctx.blocks) if ctx.blocks
                                      else "define it under 'blocks:'"))
    params = spec_params(ctx, block, definition) if is_spec_block(definition) else block_params(definition, block)
    check_keys(raw, NODE_KEYS - {"op", "tie", "dtype"} | {"tied_to"} | set(params), f"a call of block '{block}'",
               raw.key_loc)
    repeat = whole_number(raw, "repeat", env, 1, least=0)
    check_repeat(raw, repeat, env)
    start = whole_number(raw, "start", env, 0, 0)
    shared = raw.get("shared", False)
    if not isinstance(shared, bool):
        raise SpecError("'shared' must be true or false", loc=raw.key_loc("shared"),
                        hint="write shared: true (one set of weights for every repetition), or leave it out")
    index = _index_name(raw, params)
    group = _group_rule(raw, index)
    bodies, groups = [], []
    inherit = is_spec_block(definition) and _inherits(definition, block)
    for i in range(start, start + repeat) if index else [None]:
        here = {**env, index: i} if index else env
        args = {k: argument(v, here, raw.key_loc(k), k) for k, v in raw.items() if k in params}
        if inherit:  # the used spec's variables the caller also has take the caller's values
            args = {**{p: here[p] for p in params if p in here}, **args}
        body = _instantiate(ctx, block, definition, params, args, category, trainable, raw.loc)
        target = tie_path(raw["tied_to"], here, raw.key_loc("tied_to")) if "tied_to" in raw else None
        bodies.append(canonical(ctx.folded, tied_copy(body, target, raw.key_loc("tied_to")) if target else body))
        if group:
            groups.append((group[0], argument(group[1], here, raw.key_loc("group"), "group")))
    if bodies:
        body = bodies[0]
    else:  # repeated 0 times: a pass-through; its body (built as repetition `start` would be) gives the arity
        here = {**env, index: start} if index else env
        args = {k: argument(v, here, raw.key_loc(k), k) for k, v in raw.items() if k in params} if index else {}
        body = canonical(ctx.folded, _instantiate(ctx, block, definition, params, args, category, trainable, raw.loc))
    # inputs the body never reads (a switched-off feature's) may be left out at the end of a call
    read = read_inputs(body)
    needed = max((i + 1 for i, name in enumerate(body.inputs) if name in read), default=0)
    if keywords:
        refs = keyword_inputs(block, body.inputs, refs, keywords, raw, read)
    if not needed <= len(refs) <= len(body.inputs):
        unread = f"; it never reads {', '.join(body.inputs[needed:])}, which may be left out" \
            if needed < len(body.inputs) else ""
        raise SpecError(f"block '{block}' takes {len(body.inputs)} input(s) ({', '.join(body.inputs)}); "
                        f"'in' gives {len(refs)}{unread}", loc=raw.key_loc("in") if "in" in raw else raw.loc,
                        hint=f"give a node for each of {', '.join(body.inputs[:max(needed, 1)])}, in that order "
                             f"or by name: in: {{{', '.join(f'{i}: NODE' for i in body.inputs[:max(needed, 1)])}}}")
    if repeat != 1 and len(body.outputs) > len(body.inputs):
        raise SpecError(f"block '{block}' is repeated, so its outputs feed its next repetition: it has "
                        f"{len(body.outputs)} outputs but only {len(body.inputs)} inputs", loc=raw.key_loc("repeat"),
                        hint="give the block as many inputs as outputs, or call it without 'repeat:'")
    slices = _slices(raw, block, body, len(refs), each or {})
    indexed = "repeat" in raw or "start" in raw
    path = call_path(raw, env, indexed)
    if not index or not bodies:
        if index:
            decided(repeat)
        return BlockNode(name, block, body, refs, repeat, start, indexed, shared, raw.loc, path, _unused(raw, env),
                         each=slices)
    if shared:
        raise SpecError(f"the repetitions of a shared block are one module, so its arguments cannot depend on "
                        f"'{index}'", loc=raw.key_loc("shared"), hint="drop 'shared: true', or the index")
    decided(repeat)  # the runs' lengths are numbers now
    return _runs(name, block, bodies, refs, start, raw, path if path is not None else name, _unused(raw, env),
                 groups or [None] * len(bodies), slices)


def _slices(raw: LocDict, block: str, body: Graph, given: int, each: dict) -> tuple[int | None, ...]:
    """The call's `each:` dims by input position (None: read whole), or () when it slices none."""
    if not each:
        return ()
    key, (dim, loc) = next(iter(each.items()))
    if "repeat" not in raw:
        raise SpecError(f"input '{key}' takes 'each: {dim}', which gives each repetition its own index of it, but "
                        f"this call of block '{block}' is not repeated", loc=loc,
                        hint=f"add 'repeat: N', or read the input whole ({key}: {{from: ...}})")
    dims: list[int | None] = [None] * given
    for key, (dim, loc) in each.items():
        position = body.inputs.index(key)
        if position < len(body.outputs):
            raise SpecError(f"input '{key}' takes 'each: {dim}', but it is the block's input {position}, which its "
                            f"output {position} feeds in the next repetition: only the inputs after the {len(body.outputs)} "
                            "fed ones can be sliced per repetition", loc=loc,
                            hint=f"put '{key}' after the inputs the block's outputs feed, in its 'inputs:'")
        dims[position] = dim
    return tuple(dims)


def _inherits(definition: LocDict, block: str) -> bool:
    """`{spec: NAME, inherit: true}`: a call passes the caller's variables of the used spec's names."""
    value = definition.get("inherit", False)
    if not isinstance(value, bool):
        raise SpecError(f"'inherit' of block '{block}' must be true or false", loc=definition.key_loc("inherit"),
                        hint="inherit: true passes the caller's variables of the used spec's names")
    return value


def _group_rule(raw: LocDict, index: str | None) -> tuple[str, Any] | None:
    """`group: {stage: EXPR}`: what the repetitions of a schedule are grouped by (diagrams draw each
    group, consecutive repetitions with one value, as a labelled box: EfficientNet's stages)."""
    if "group" not in raw:
        return None
    rule = raw["group"]
    if not (isinstance(rule, Mapping) and len(rule) == 1 and isinstance(next(iter(rule)), str)):
        raise SpecError("'group' names what the repetitions are grouped by and how: {stage: EXPR}",
                        loc=raw.key_loc("group"), hint="write group: {stage: \"stage_of[i]\"}")
    if index is None:
        raise SpecError("'group' groups the repetitions of a schedule, but no argument of this call uses the "
                        "repetition index", loc=raw.key_loc("group"),
                        hint="drop 'group', or pass the index to the block's arguments")
    return next(iter(rule.items()))


def _index_name(raw: LocDict, params) -> str | None:
    """The repetition index's name when the call's arguments use it (`index:`, default i), else None."""
    name = raw.get("index", "i")
    if not isinstance(name, str) or not name.isidentifier():
        raise SpecError(f"'index' names the repetition number, such as i; received {name!r}",
                        loc=raw.key_loc("index"),
                        hint="e.g. index: i, then use i in the call's arguments")
    uses = any(isinstance(v, str) and name in expr.names(v) for k, v in raw.items() if k in params or k == "tied_to")
    if "index" in raw and not uses:
        raise SpecError(f"no argument of this call uses the index '{name}'", loc=raw.key_loc("index"),
                        hint=f"pass it to the block, e.g. layer: {name}, or drop 'index:'")
    return name if uses and "repeat" in raw else None


def check_repeat(raw: LocDict, repeat: int, env: Mapping) -> None:
    """Refuse a call's repetitions past MAX_REPEAT, before any repetition's arguments are evaluated
    (building a graph, and specialising a template for import-hf, evaluate them once each)."""
    if repeat > MAX_REPEAT:
        used = sorted(expr.names(raw["repeat"])) if isinstance(raw["repeat"], str) else []
        values = ", ".join(f"{n} = {plain(env[n]):,}" for n in used if isinstance(env.get(n), int))
        raise SpecError(f"'repeat' is {repeat:,}{f' ({values})' if values else ''}; a block call repeats at "
                        f"most {MAX_REPEAT:,} times", loc=raw.key_loc("repeat"),
                        hint="check 'repeat:' and the variables it uses")


def _runs(name: str, block: str, bodies: list[Graph], refs, start: int, raw: LocDict, segment: str,
          unused: bool, groups: list, each: tuple = ()) -> list:
    """Consecutive repetitions with the same body (and group) as one BlockNode each; the last run
    carries the call's name, so what reads the call reads the last repetition.  When every repetition
    has the same body (bodies are folded by what they compute), the call is one plain repeated node."""
    runs: list[list] = []
    for body, group in zip(bodies, groups):
        if runs and runs[-1][0] is body and runs[-1][2] == group:
            runs[-1][1] += 1
        else:
            runs.append([body, 1, group])
    if len(runs) == 1 and groups[0] is None:  # every repetition computes the same: a plain repeated call
        return [BlockNode(name, block, bodies[0], refs, len(bodies), start, True, False, raw.loc, segment, unused,
                          each=each)]
    out, offset = [], start
    for k, (body, count, group) in enumerate(runs):
        key = name if k == len(runs) - 1 else f"{name}#{offset}"
        if out:
            previous = out[-1].name
            refs = tuple(Ref(previous, j) for j in range(len(body.outputs))) + tuple(refs[len(body.outputs):])
        out.append(BlockNode(key, block, body, refs, count, offset, True, False, raw.loc, segment, unused,
                             scheduled=True, group=group, each=each))
        offset += count
    return out


def _instantiate(ctx: Ctx, block: str, definition: LocDict, params, args, category, trainable, loc) -> Graph:
    if category is None:   # a call's own category wins over its block's
        category = _category(definition)
    if is_spec_block(definition):
        key = ("spec",) + instance_key(block, args, category, trainable)
        if key not in ctx.cache:
            ctx.cache[key] = instantiate_spec(ctx, block, definition, args, category, trainable, loc,
                                              build_graph, _inner_ctx)
        return ctx.cache[key]
    missing = [p for p, default in params.items() if default is None and p not in args]
    if missing:
        raise SpecError(f"block '{block}' needs the argument(s) {', '.join(missing)}", loc=loc,
                        hint="add " + ", ".join(f"{m}: ..." for m in missing) + " to the node")
    own_trainable = definition.get("trainable", True)
    if not isinstance(own_trainable, bool):
        raise SpecError(f"'trainable' of block '{block}' must be true or false", loc=definition.key_loc("trainable"),
                        hint="write trainable: false, or leave it out (true)")
    trainable = trainable and own_trainable
    key = instance_key(block, args, category, trainable)
    if key in ctx.cache:
        return ctx.cache[key]
    if block in ctx.stack:
        raise SpecError(f"block '{block}' calls itself: {' -> '.join(ctx.stack + [block])}", loc=loc,
                        hint="a block may call other blocks, never itself; repeat a layer with 'repeat: N'")
    if len(ctx.stack) >= MAX_BLOCK_DEPTH or len(ctx.cache) >= MAX_BLOCK_INSTANCES:
        limit = (f"blocks nest more than {MAX_BLOCK_DEPTH} deep" if len(ctx.stack) >= MAX_BLOCK_DEPTH
                 else f"the spec makes more than {MAX_BLOCK_INSTANCES:,} distinct block instances")
        raise SpecError(limit, loc=loc, hint="call blocks with fewer distinct arguments, or nest them less")
    ctx.stack.append(block)
    env = dict(ctx.globals)
    for p, default in params.items():
        env[p] = args[p] if p in args else argument(default, ctx.globals, definition.key_loc("args"), p)
    raw_vars = definition.get("variables") or {}
    expect_mapping(raw_vars, definition, "variables")
    env = evaluate_variables(raw_vars, {k: loc_of(raw_vars, k) for k in raw_vars}, env, {})
    inputs = definition.get("inputs") or ["x"]
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        raise SpecError(f"'inputs' of block '{block}' must be a list of names", loc=definition.key_loc("inputs"),
                        hint="e.g. inputs: [x, mask]")
    for name in inputs:
        if not name_ok(name):
            check_name(name, "input name", definition.key_loc("inputs"))
    body = build_graph(ctx, f"block '{block}'", definition.get("nodes"), tuple(inputs), env, category,
                       trainable, definition.get("outputs"), definition.key_loc("nodes"))
    ctx.stack.pop()
    ctx.cache[key] = body
    return body


def outputs_of(raw: Any, prev: Ref, loc: Loc, env: Mapping, scope: dict | None = None) -> list[tuple[str, Ref]]:
    """(name, ref) of each output: `outputs:` as a mapping of names to refs, or a list of refs;
    a mapping's value may be `{from: ref, when: condition}` (an output that exists only then)."""
    if raw is None:
        return [(str(prev), prev)]
    where = getattr(raw, "loc", loc)
    if not isinstance(raw, dict):
        refs = [_output(parse_ref(_first(item, scope or {}, raw, where), "'outputs'", where, scope), scope, where)
                for item in (raw if isinstance(raw, list) else [raw])]
        return [(str(r), r) for r in refs]
    out = []
    for name, item in raw.items():
        at = loc_of(raw, name)
        check_name(name, "output name", at)
        if isinstance(item, dict):
            check_keys(item, {"from", "when"}, f"output '{name}'", getattr(item, "key_loc", lambda k: at))
            if "when" in item and not _condition(item["when"], env, at, name):
                continue
            item = item.get("from")
        out.append((name, _output(parse_ref(_first(item, scope or {}, raw, at), f"output '{name}'", at, scope),
                                  scope, at)))
    if not out:
        raise SpecError("every output is switched off by its 'when:'", loc=where,
                        hint="check the 'when:' conditions: at least one output must be left")
    return out


def _output(ref: Ref, scope: dict | None, loc: Loc) -> Ref:
    """`ref`, when it names an input or a node of `scope` (the error at the output's own line otherwise)."""
    if scope is not None and ref.node not in scope:
        raise SpecError(f"output '{ref.node}' is not a node or an input", loc=loc,
                        hint=did_you_mean(ref.node, scope) or f"known names: {', '.join(sorted(scope))}")
    return ref


def _condition(raw: Any, env: Mapping, loc: Loc, node: str | None) -> bool:
    """A `when:` value: an expression that must give true or false (its names are decided)."""
    keep = evaluate(raw, env, loc, "when")
    if isinstance(raw, str):
        decided_names(expr.names(raw) & set(env))
    if not isinstance(keep, bool):
        raise SpecError(f"'when' must be true or false; received {keep!r}", loc=loc, node=node,
                        hint="compare, e.g. 'when: L > 6' or 'when: act == \'gelu\''")
    return keep
