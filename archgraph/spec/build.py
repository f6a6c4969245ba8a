"""Build a `Model` from a parsed spec (YAML file or the Python builder).

Contract: every error names the file and line of the offending key and, where
one applies, the node; nothing in a spec is executed.  Block bodies are
instantiated once per distinct argument set and shared between calls.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import networkx as nx

from .. import expr
from ..errors import ArchgraphError, Loc, SpecError, did_you_mean
from ..graph import BlockNode, Graph, InputSpec, Model, OpNode, Ref, call_count, instance_count
from ..ops import REGISTRY
from .ties import resolve_ties
from .values import check_keys, evaluate, evaluate_variables, hints, typed
from .yamlload import LocDict

TOP_KEYS = {"archgraph", "name", "description", "extends", "variables", "inputs", "outputs",
            "blocks", "nodes"}
BLOCK_KEYS = {"args", "variables", "inputs", "outputs", "nodes", "category", "trainable", "description"}
NODE_KEYS = {"name", "op", "block", "in", "category", "trainable", "tie", "repeat", "start", "shared",
             "when", "description", "dtype", "path"}
GENERIC_CATEGORIES = {"linear", "other"}  # a block's category replaces these, not 'norm' or 'embedding'
MAX_EXTENDS = 8
MAX_BLOCK_DEPTH = 64        # blocks calling blocks
MAX_BLOCK_INSTANCES = 10_000  # distinct (block, arguments) bodies: stops exponential call trees
MAX_NODE_INSTANCES = 10_000_000  # op nodes with repetitions expanded (what --json lists)
MAX_BLOCK_CALLS = 100_000   # rows of the block table: calls nested in calls multiply
_REF = re.compile(r"([^:]+?)\s*(?::\s*([0-9]+))?")


@dataclass
class _Ctx:
    blocks: Mapping[str, Any]
    globals: Mapping[str, Any]
    cache: dict = field(default_factory=dict)
    stack: list = field(default_factory=list)


def _loc(mapping: Any, key: str | None = None) -> Loc:
    if isinstance(mapping, LocDict):
        return mapping.key_loc(key) if key else mapping.loc
    return getattr(mapping, "loc", Loc())


def build_model(spec: LocDict, settings: Mapping[str, Any] | None = None,
                load_parent: Callable[[str, Loc], LocDict] | None = None) -> Model:
    """Build the model; `settings` override variables, the rest bind symbolic dims."""
    spec, var_locs = _merge_extends(spec, load_parent)
    settings = dict(settings or {})
    raw_vars = spec.get("variables") or {}
    overrides = {k: v for k, v in settings.items() if k in raw_vars}
    variables = evaluate_variables(raw_vars, var_locs, {}, overrides)
    inputs = _inputs(spec)
    ctx = _Ctx(blocks=spec.get("blocks") or {}, globals=variables)
    graph = _graph(ctx, "model", spec.get("nodes"), tuple(inputs), variables, None, True,
                   spec.get("outputs"), _loc(spec, "nodes"))
    model = Model(name=str(spec.get("name") or "model"), graph=graph, inputs=inputs,
                  variables=variables, output_names=_output_names(spec.get("outputs"), graph),
                  description=str(spec.get("description") or ""), source=spec.loc.file,
                  bindings={k: v for k, v in settings.items() if k not in raw_vars})
    count = instance_count(graph)
    if count > MAX_NODE_INSTANCES:
        raise SpecError(f"the model expands to {count:,} node instances once repetitions are counted; "
                        f"archgraph handles at most {MAX_NODE_INSTANCES:,}", loc=_loc(spec, "nodes"),
                        hint="check the 'repeat:' values (and the variables they use)")
    calls = call_count(graph)
    if calls > MAX_BLOCK_CALLS:
        raise SpecError(f"blocks call blocks {calls:,} times once nested calls are multiplied out; "
                        f"archgraph handles at most {MAX_BLOCK_CALLS:,}", loc=_loc(spec, "nodes"),
                        hint="a block that calls another several times, nested many levels deep, doubles "
                             "at every level: use 'repeat:' for a stack of the same block")
    resolve_ties(model)
    return model


def _merge_extends(spec: LocDict, load_parent) -> tuple[dict, dict[str, Loc]]:
    """Apply `extends:` chains: the child's variables and blocks win, other keys replace."""
    chain = [spec]
    while "extends" in chain[-1]:
        child = chain[-1]
        if load_parent is None or len(chain) > MAX_EXTENDS:
            raise SpecError("'extends' cannot be followed here" if load_parent is None
                            else f"'extends' is nested more than {MAX_EXTENDS} deep (a cycle?)",
                            loc=_loc(child, "extends"))
        chain.append(load_parent(str(child["extends"]), _loc(child, "extends")))
    merged: dict = {}
    var_locs: dict[str, Loc] = {}
    for level in reversed(chain):
        check_keys(level, TOP_KEYS, "the spec", level.key_loc)
        for key, value in level.items():
            if key in ("variables", "blocks"):
                _expect_mapping(value, level, key)
                merged.setdefault(key, {}).update(value)
                if key == "variables":
                    var_locs.update({k: _loc(value, k) for k in value})
            elif key != "extends":
                merged[key] = value
    out = LocDict(merged)
    out.loc, out.lines = spec.loc, {**getattr(spec, "lines", {})}
    if "nodes" not in out:
        raise SpecError("the spec has no 'nodes:'", loc=spec.loc,
                        hint="list the model's nodes under 'nodes:' (see the README)")
    return out, var_locs


def _expect_mapping(value: Any, parent: Any, key: str) -> None:
    if not isinstance(value, dict):
        raise SpecError(f"'{key}' must be a mapping of names to values", loc=_loc(parent, key))
    for name in value:
        if not name.isidentifier():
            raise SpecError(f"'{name}' under '{key}' is not a name (letters, digits and _)",
                            loc=_loc(value, name))


def _inputs(spec: Mapping) -> dict[str, InputSpec]:
    raw = spec.get("inputs")
    if not raw:
        raise SpecError("the spec has no 'inputs:'", loc=_loc(spec),
                        hint="declare inputs, e.g. 'inputs: {input_ids: [B, S]}'")
    _expect_mapping(raw, spec, "inputs")
    out = {}
    for name, value in raw.items():
        loc = _loc(raw, name)
        dtype = "float32"
        if isinstance(value, dict):
            check_keys(value, {"shape", "dtype"}, f"input '{name}'", value.key_loc)
            dtype = str(value.get("dtype", dtype))
            value = value.get("shape")
        if not isinstance(value, list) or not value:
            raise SpecError(f"input '{name}' needs a shape list such as [B, S]", loc=loc)
        for dim in value:
            if isinstance(dim, bool) or not isinstance(dim, (int, str)) or (isinstance(dim, int) and dim <= 0):
                raise SpecError(f"input '{name}': dimension {dim!r} is neither a positive number nor a name",
                                loc=loc)
            if isinstance(dim, str):
                try:
                    expr.parse(dim)
                except ArchgraphError as exc:
                    raise exc.with_context(loc=loc)
        out[name] = InputSpec(name, tuple(value), dtype, loc)
    return out


def _graph(ctx: _Ctx, name: str, raw_nodes: Any, inputs: tuple[str, ...], env: Mapping,
           category: str | None, trainable: bool, raw_outputs: Any, loc: Loc) -> Graph:
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise SpecError(f"'nodes' of {name} must be a non-empty list of nodes", loc=loc)
    nodes: dict[str, Any] = {}
    prev = Ref(inputs[0]) if inputs else None
    for raw in raw_nodes:
        if not isinstance(raw, LocDict):
            raise SpecError(f"a node must be a mapping with 'name' and 'op' (or 'block'); received {raw!r}",
                            loc=getattr(raw_nodes, "loc", loc), hint="write '- {name: x, op: linear, ...}'")
        node = _node(ctx, raw, inputs, nodes, env, category, trainable, prev)
        if node is not None:
            nodes[node.name] = node
            prev = Ref(node.name)
    if not nodes:
        raise SpecError(f"every node of {name} is switched off by 'when:'", loc=loc)
    outputs = _outputs(raw_outputs, prev, loc)
    dag = _wire(nodes, inputs, outputs, loc)
    order = list(nx.lexicographical_topological_sort(dag, key=_order(inputs, nodes)))
    ordered = {n: nodes[n] for n in order if n in nodes}
    return Graph(name, inputs, ordered, outputs, dag, loc)


def _order(inputs, nodes):
    rank = {n: i for i, n in enumerate([*inputs, *nodes])}
    return lambda n: rank[n]


def _node(ctx: _Ctx, raw: Any, inputs, nodes, env, category, trainable, prev):
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError("a node needs a 'name'", loc=raw.loc, hint="add 'name: my_node'")
    if "when" in raw:
        keep = evaluate(raw["when"], env, raw.key_loc("when"), "when")
        if not isinstance(keep, bool):
            raise SpecError(f"'when' must be true or false; received {keep!r}", loc=raw.key_loc("when"),
                            node=name, hint="compare, e.g. 'when: L > 6' or 'when: act == \'gelu\''")
        if not keep:
            return None
    if name in nodes or name in inputs:
        raise SpecError(f"the name '{name}' is used twice", loc=raw.key_loc("name"), node=name,
                        hint="give each node a unique name")
    if ("op" in raw) == ("block" in raw):
        raise SpecError("a node needs exactly one of 'op' or 'block'", loc=raw.loc, node=name)
    refs, keywords = _refs(raw, prev)
    own_cat = _category(raw)
    train = raw.get("trainable", trainable) and trainable
    if not isinstance(train, bool):
        raise SpecError("'trainable' must be true or false", loc=raw.key_loc("trainable"), node=name)
    try:
        if "op" in raw:
            return _op_node(raw, name, refs, keywords, env, own_cat or category, own_cat is not None, train)
        return _block_node(ctx, raw, name, refs, keywords, env, own_cat or category, train)
    except ArchgraphError as exc:
        raise exc.with_context(loc=raw.loc, node=name)


def _category(mapping: LocDict) -> str | None:
    value = mapping.get("category")
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise SpecError(f"'category' must be a name such as attention or mlp; received {value!r}",
                        loc=mapping.key_loc("category"))
    return value


def _refs(raw: LocDict, prev: Ref | None) -> tuple[tuple[Ref, ...], tuple[str, ...]]:
    """The node's inputs, and their parameter names when 'in' is a mapping."""
    value = raw.get("in")
    if value is None:
        if prev is None:
            raise SpecError("this node has no 'in:' and there is no previous node to read from",
                            loc=raw.loc)
        return (prev,), ()
    if isinstance(value, dict):
        return _ref_list(raw, list(value.values())), tuple(value)
    return _ref_list(raw, value if isinstance(value, list) else [value]), ()


def _ref_list(raw: LocDict, items: list) -> tuple[Ref, ...]:
    refs = []
    for item in items:
        refs.append(_parse_ref(item, "'in'", raw.key_loc("in")))
    return tuple(refs)


def _parse_ref(item: Any, what: str, loc: Loc) -> Ref:
    """`node` or `node:N` (output N of node)."""
    match = _REF.fullmatch(item.strip()) if isinstance(item, str) else None
    if match is None:
        raise SpecError(f"{what} names a node or input, with ':N' for its output N; received {item!r}",
                        loc=loc)
    return Ref(match.group(1), int(match.group(2) or 0))


def _op_node(raw: LocDict, name: str, refs, keywords, env, category, explicit: bool, trainable: bool) -> OpNode:
    op_name = raw["op"]
    cls = REGISTRY.get(op_name) if isinstance(op_name, str) else None
    if cls is None:
        hint = did_you_mean(str(op_name), REGISTRY)
        raise SpecError(f"unknown op '{op_name}'", loc=raw.key_loc("op"),
                        hint=hint or "run 'archgraph ops' to list the operators")
    fields = cls.hyperparameters()
    check_keys(raw, NODE_KEYS - {"block", "repeat", "start", "shared", "path"} | set(fields),
               f"op '{op_name}'", raw.key_loc)
    types = hints(cls)
    values = {k: typed(v, types[k], env, raw.key_loc(k), f"{op_name}.{k}")
              for k, v in raw.items() if k in fields}
    try:
        op = cls.build(values)
    except ArchgraphError as exc:
        bad = next((k for k in values if k in exc.message), None)
        raise exc.with_context(loc=raw.key_loc(bad) if bad else raw.loc)
    _check_arity(cls, refs, keywords, raw)
    if not explicit and (category is None or op.category not in GENERIC_CATEGORIES):
        category = op.category
    return OpNode(name, op, refs, category, trainable, _ties(raw), raw.loc, keywords, _dtype(raw))


def _dtype(raw: LocDict) -> str | None:
    """`dtype: int8`: how this node's weights are stored (the memory pass reads it)."""
    if "dtype" not in raw:
        return None
    from ..passes.dtypes import canonical
    try:
        return canonical(raw["dtype"], "'dtype'")
    except SpecError as exc:
        raise exc.with_context(loc=raw.key_loc("dtype"))


def _check_arity(cls, refs, keywords, raw: LocDict) -> None:
    where = raw.key_loc("in") if "in" in raw else raw.loc
    if keywords:
        names, required = cls.input_names()
        for key in keywords:
            if key not in names:
                hint = did_you_mean(key, names)
                raise SpecError(f"op '{cls.op_name}' has no input '{key}'", loc=where,
                                hint=hint or f"its inputs: {', '.join(names)}")
        missing = [n for n in required if n not in keywords]
        if missing:
            raise SpecError(f"op '{cls.op_name}' needs the input(s) {', '.join(missing)}", loc=where)
        return
    least, most = cls.arity()
    if len(refs) < least or (most is not None and len(refs) > most):
        want = f"{least}" if least == most else f"{least} to {most}" if most else f"at least {least}"
        raise SpecError(f"op '{cls.op_name}' takes {want} input(s); 'in' gives {len(refs)}", loc=where)


def _ties(raw: LocDict) -> dict[str, str]:
    tie = raw.get("tie")
    if tie is None:
        return {}
    if isinstance(tie, str):
        return {"weight": tie}
    if isinstance(tie, dict) and all(isinstance(v, str) for v in tie.values()):
        return dict(tie)
    raise SpecError("'tie' is a tensor path (ties 'weight') or a mapping {local tensor: tensor path}",
                    loc=raw.key_loc("tie"))


def _positive_int(raw: LocDict, key: str, env, default: int, least: int = 1) -> int:
    if key not in raw:
        return default
    value = evaluate(raw[key], env, raw.key_loc(key), key)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SpecError(f"'{key}' must be a whole number of at least {least}; received {value!r}",
                        loc=raw.key_loc(key))
    return value


def _block_node(ctx: _Ctx, raw: LocDict, name: str, refs, keywords, env, category, trainable) -> BlockNode:
    block = raw["block"]
    definition = ctx.blocks.get(block) if isinstance(block, str) else None
    if definition is None:
        hint = did_you_mean(str(block), ctx.blocks)
        raise SpecError(f"unknown block '{block}'", loc=raw.key_loc("block"),
                        hint=hint or ("blocks defined: " + ", ".join(ctx.blocks) if ctx.blocks
                                      else "define it under 'blocks:'"))
    params = _block_params(definition, block)
    check_keys(raw, NODE_KEYS - {"op", "tie", "dtype"} | set(params), f"a call of block '{block}'", raw.key_loc)
    args = {k: _arg(v, env, raw.key_loc(k), k) for k, v in raw.items() if k in params}
    body = _instantiate(ctx, block, definition, params, args, category, trainable, raw.loc)
    if keywords:
        refs = _block_keywords(block, body.inputs, refs, keywords, raw)
    if len(refs) != len(body.inputs):
        raise SpecError(f"block '{block}' takes {len(body.inputs)} input(s) ({', '.join(body.inputs)}); "
                        f"'in' gives {len(refs)}", loc=raw.key_loc("in") if "in" in raw else raw.loc)
    repeat = _positive_int(raw, "repeat", env, 1, least=0)
    if repeat != 1 and len(body.outputs) > len(body.inputs):
        raise SpecError(f"block '{block}' is repeated, so its outputs feed its next repetition: it has "
                        f"{len(body.outputs)} outputs but only {len(body.inputs)} inputs", loc=raw.key_loc("repeat"))
    shared = raw.get("shared", False)
    if not isinstance(shared, bool):
        raise SpecError("'shared' must be true or false", loc=raw.key_loc("shared"))
    indexed = "repeat" in raw or "start" in raw
    return BlockNode(name, block, body, refs, repeat, _positive_int(raw, "start", env, 0, 0),
                     indexed, shared, raw.loc, _path(raw, env, indexed))


_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")


def _path(raw: LocDict, env, indexed: bool) -> str | None:
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


def _block_keywords(block: str, inputs: tuple[str, ...], refs, keywords, raw: LocDict) -> tuple[Ref, ...]:
    given = dict(zip(keywords, refs))
    for key in keywords:
        if key not in inputs:
            hint = did_you_mean(key, inputs)
            raise SpecError(f"block '{block}' has no input '{key}'", loc=raw.key_loc("in"),
                            hint=hint or f"its inputs: {', '.join(inputs)}")
    missing = [i for i in inputs if i not in given]
    if missing:
        raise SpecError(f"block '{block}' needs the input(s) {', '.join(missing)}", loc=raw.key_loc("in"))
    return tuple(given[i] for i in inputs)


def _arg(value: Any, env, loc: Loc, what: str) -> Any:
    """A block argument: an expression, or a bare word (such as an activation name) kept as text."""
    if isinstance(value, str) and value.isidentifier() and value not in env:
        return value
    return evaluate(value, env, loc, f"argument '{what}'")


def _block_params(definition: Any, block: str) -> dict[str, Any]:
    if not isinstance(definition, LocDict):
        raise SpecError(f"block '{block}' must be a mapping with 'nodes:'", loc=getattr(definition, "loc", None))
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


def _instantiate(ctx: _Ctx, block: str, definition: LocDict, params, args, category, trainable, loc):
    missing = [p for p, default in params.items() if default is None and p not in args]
    if missing:
        raise SpecError(f"block '{block}' needs the argument(s) {', '.join(missing)}", loc=loc,
                        hint="add " + ", ".join(f"{m}: ..." for m in missing) + " to the node")
    category = _category(definition) or category if category is None else category
    own_trainable = definition.get("trainable", True)
    if not isinstance(own_trainable, bool):
        raise SpecError(f"'trainable' of block '{block}' must be true or false", loc=definition.key_loc("trainable"))
    trainable = trainable and own_trainable
    key = (block, tuple(sorted((k, repr(v)) for k, v in args.items())), category, trainable)
    if key in ctx.cache:
        return ctx.cache[key]
    if block in ctx.stack:
        raise SpecError(f"block '{block}' calls itself: {' -> '.join(ctx.stack + [block])}", loc=loc)
    if len(ctx.stack) >= MAX_BLOCK_DEPTH or len(ctx.cache) >= MAX_BLOCK_INSTANCES:
        limit = (f"blocks nest more than {MAX_BLOCK_DEPTH} deep" if len(ctx.stack) >= MAX_BLOCK_DEPTH
                 else f"the spec makes more than {MAX_BLOCK_INSTANCES:,} distinct block instances")
        raise SpecError(limit, loc=loc, hint="call blocks with fewer distinct arguments, or nest them less")
    ctx.stack.append(block)
    env = dict(ctx.globals)
    for p, default in params.items():
        env[p] = args[p] if p in args else _arg(default, ctx.globals, definition.key_loc("args"), p)
    raw_vars = definition.get("variables") or {}
    _expect_mapping(raw_vars, definition, "variables")
    env = evaluate_variables(raw_vars, {k: _loc(raw_vars, k) for k in raw_vars}, env, {})
    inputs = definition.get("inputs") or ["x"]
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        raise SpecError(f"'inputs' of block '{block}' must be a list of names", loc=definition.key_loc("inputs"))
    body = _graph(ctx, f"block '{block}'", definition.get("nodes"), tuple(inputs), env, category,
                  trainable, definition.get("outputs"), definition.key_loc("nodes"))
    ctx.stack.pop()
    ctx.cache[key] = body
    return body


def _outputs(raw: Any, prev: Ref, loc: Loc) -> tuple[Ref, ...]:
    if raw is None:
        return (prev,)
    items = list(raw.values()) if isinstance(raw, dict) else raw if isinstance(raw, list) else [raw]
    return tuple(_parse_ref(item, "'outputs'", getattr(raw, "loc", loc)) for item in items)


def _output_names(raw: Any, graph: Graph) -> tuple[str, ...]:
    if isinstance(raw, dict):
        return tuple(raw)
    return tuple(str(r) for r in graph.outputs)


def _wire(nodes: dict, inputs: tuple[str, ...], outputs: tuple[Ref, ...], loc: Loc) -> nx.DiGraph:
    dag = nx.DiGraph()
    dag.add_nodes_from(inputs)
    dag.add_nodes_from(nodes)
    known = set(inputs) | set(nodes)
    for name, node in nodes.items():
        for ref in node.inputs:
            if ref.node not in known:
                hint = did_you_mean(ref.node, known)
                raise SpecError(f"input '{ref.node}' is not a node or an input here", loc=node.loc, node=name,
                                hint=hint or f"known names: {', '.join(sorted(known))}")
            dag.add_edge(ref.node, name)
    for ref in outputs:
        if ref.node not in known:
            hint = did_you_mean(ref.node, known)
            raise SpecError(f"output '{ref.node}' is not a node or an input", loc=loc,
                            hint=hint or f"known names: {', '.join(sorted(known))}")
    try:
        cycle = nx.find_cycle(dag)
    except nx.NetworkXNoCycle:
        return dag
    path = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
    first = nodes[cycle[0][1]]
    raise SpecError(f"the wiring has a cycle: {path}", loc=first.loc, node=first.name,
                    hint="a node cannot depend on its own output; check the 'in:' of these nodes")
