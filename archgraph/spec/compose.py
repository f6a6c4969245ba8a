"""Specs that compose specs: a block defined as `{spec: NAME}` is another spec (a file beside the
one that names it, or a built-in) used as a block.

    blocks:
      vision: {spec: clip_vision.yaml}      # its variables are the block's arguments (all optional)
      text: {spec: llama.yaml, inherit: true}   # ... and take the caller's variables of their names
    nodes:
      - {name: vision_tower, block: vision, in: pixel_values, H: VH, L: VL}

The other spec keeps its own variables (evaluated in its own scope, the call's arguments
overriding them), its own blocks and its own outputs (a caller reads `vision_tower:1` or
`vision_tower:pooler_output`).  LLaVA is a vision template, a projector and a language
template, not a copy of them.  A used spec may not `tie:` tensors itself (tie from the spec
that uses it, whose paths it knows).
"""
from __future__ import annotations

from typing import Any, Callable

from .. import expr
from ..errors import Loc, SpecError
from ..graph import Graph, OpNode
from .constraints import check_constraints, read_constraints
from .extends import merge_extends
from .values import check_keys, evaluate_variables, loc_of
from .yamlload import LocDict

SPEC_BLOCK_KEYS = {"spec", "description", "category", "trainable", "inherit"}


def is_spec_block(definition: Any) -> bool:
    return isinstance(definition, LocDict) and "spec" in definition


def read_used_spec(ctx, block: str, definition: LocDict) -> LocDict:
    """The spec a `{spec: NAME}` block names, with its `extends:` applied (read once per block)."""
    check_keys(definition, SPEC_BLOCK_KEYS, f"block '{block}'", definition.key_loc)
    if block not in ctx.specs:
        name = definition["spec"]
        if not isinstance(name, str) or not name.strip():
            raise SpecError(f"block '{block}': 'spec' names a spec file or a built-in model",
                            loc=definition.key_loc("spec"), hint='name a spec file or a built-in model: spec: gpt2')
        if ctx.load_spec is None:
            raise SpecError("a spec used as a block cannot be read here", loc=definition.key_loc("spec"),
                            hint="load the spec from a file (archgraph.load(path)) so the block's spec can be found")
        raw = ctx.load_spec(name, definition.key_loc("spec"), definition.loc)
        ctx.specs[block] = merge_extends(raw, ctx.load_spec)
    return ctx.specs[block]


def spec_params(ctx, block: str, definition: LocDict) -> dict[str, Any]:
    """The arguments a used spec takes: its variables, each optional (its own value is the default),
    and the sizes its inputs name (the caller's sizes of those names by default: a call that feeds
    the tower every tile of B images sets `B: B * TL`)."""
    spec, _ = read_used_spec(ctx, block, definition)
    variables = spec.get("variables") or {}
    inputs = spec.get("inputs") or {}
    sizes = _size_names(inputs) if isinstance(inputs, dict) else set()
    return {name: "" for name in [*variables, *sorted(sizes - set(variables))]}


def instantiate_spec(ctx, block: str, definition: LocDict, args: dict, category, trainable: bool, loc: Loc,
                     build_graph: Callable[..., Graph], make_ctx: Callable[..., Any]) -> Graph:
    """The used spec's graph with the call's arguments overriding its variables."""
    spec, var_locs = read_used_spec(ctx, block, definition)
    inputs = spec.get("inputs") or {}
    names = list(inputs) if isinstance(inputs, dict) else []
    if not names:
        raise SpecError(f"the spec of block '{block}' has no 'inputs:'", loc=spec.loc,
                        hint="give the spec used as a block its inputs: (the block's arguments)")
    raw_variables = spec.get("variables") or {}
    given = {n: v for n, v in args.items() if n not in raw_variables}   # its inputs' sizes, set by the call
    variables = evaluate_variables(raw_variables, var_locs, {}, {n: v for n, v in args.items() if n not in given})
    sizes = {n: given[n] if n in given else ctx.globals[n] for n in _size_names(inputs)
             if n not in variables and (n in given or n in ctx.globals)}
    inner = make_ctx(spec.get("blocks") or {}, {**variables, **sizes}, ctx)
    # its constraints hold for these arguments (those on its inputs' sizes are the caller's shapes' to keep)
    constraints = read_constraints(spec.get("constraints"), loc_of(spec, "constraints"), inner.globals)
    check_constraints([c for c in constraints if expr.names(c.text) <= set(inner.globals)], inner.globals)
    body = build_graph(inner, f"spec '{definition['spec']}'", spec.get("nodes"), tuple(names), inner.globals,
                       category, trainable, spec.get("outputs"), loc)
    _refuse_ties(body, block, set())
    return body


def _size_names(inputs: dict) -> set[str]:
    out: set[str] = set()
    for value in inputs.values():
        shape = value.get("shape") if isinstance(value, dict) else value
        for dim in shape if isinstance(shape, list) else []:
            if isinstance(dim, str):
                out |= expr.names(dim)
    return out


def _refuse_ties(graph: Graph, block: str, seen: set[int]) -> None:
    if id(graph) in seen:
        return
    seen.add(id(graph))
    for node in graph.nodes.values():
        if isinstance(node, OpNode):
            absolute = [t for t in node.ties.values() if not t.startswith(".")]
            if absolute:
                raise SpecError(f"the spec used as block '{block}' ties a tensor by its absolute path "
                                f"('tie: {absolute[0]}' of node '{node.name}'); a used spec cannot, since its "
                                "paths depend on where it is used",
                                loc=node.loc, node=node.name,
                                hint="tie relative to the spec ('tie: .embed.weight'), or use it without the tied "
                                     "head (e.g. head: \"'base'\") and tie in the spec that uses it")
        else:
            _refuse_ties(node.body, block, seen)
