"""Build a `Model` from a parsed spec (YAML file or the Python builder): the one interpreter.

Contract: every error names the file and line of the offending key and, where
one applies, the node; nothing in a spec is executed.  Block bodies are
instantiated once per distinct argument set and shared between calls.  The same
code builds over plain ints (counting, shapes) or, with `symbolic=True`, over
SymInts that carry each value's formula in the spec's variables (`formula`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from .. import expr
from ..dims import assuming
from ..errors import ArchgraphError, Loc, SpecError
from ..names import check_description, check_name
from ..graph import INPUT_DEFAULTS, InputSpec, Model, call_count, instance_count
from ..limits import MAX_BLOCK_CALLS, MAX_NODE_INSTANCES
from .constraints import bounds, check_constraints, divisors, least, read_constraints
from .extends import merge_extends
from .graphs import Ctx, build_graph
from .settings import input_sizes, split_settings, symbolic_variables
from .ties import resolve_ties
from .values import check_keys, evaluate_variables, expect_mapping, loc_of
from .yamlload import LocDict



@expr.budget()  # the spec's expressions share one budget of list items and steps
def build_model(spec: LocDict, settings: Mapping[str, Any] | None = None,
                load_parent: Callable[[str, Loc, Loc], LocDict] | None = None, *,
                symbolic: bool = False, model_class: type = Model) -> Model:
    """Build the model; `settings` override variables, the rest bind symbolic sizes.

    `load_parent(name, at, relative_to)` reads a spec that `extends:` names.  With
    `symbolic`, whole-number variables are SymInts named after themselves (build inside a
    `numbers.Trace` to learn which names were decided and which conditions held).
    """
    spec, var_locs = merge_extends(spec, load_parent)
    name = check_name(spec["name"], "model name", loc_of(spec, "name")) if spec.get("name") is not None else "model"
    description = _description(spec)
    raw_vars = spec.get("variables") or {}
    if raw_vars:
        expect_mapping(raw_vars, spec, "variables")
    inputs = _inputs(spec)
    overrides, bindings = split_settings(settings or {}, raw_vars, inputs)
    given = set(overrides)  # the variables --set or a config.json gives: no file's value to blame
    if symbolic:
        overrides = symbolic_variables(raw_vars, overrides)
    variables = evaluate_variables(raw_vars, var_locs, {}, overrides)
    ctx = Ctx(blocks=spec.get("blocks") or {}, globals={**variables, **input_sizes(inputs, variables, bindings)},
              load_spec=load_parent)
    constraints = read_constraints(spec.get("constraints"), loc_of(spec, "constraints"), ctx.globals)
    check_constraints(constraints, ctx.globals)
    with assuming(divisors(constraints, bindings), bounds(constraints, bindings), least(constraints, bindings)):
        overrides = _overrides(spec, raw_vars, var_locs, variables, given)
        try:
            graph = build_graph(ctx, "model", spec.get("nodes"), tuple(inputs), ctx.globals, None, True,
                                spec.get("outputs"), loc_of(spec, "nodes"))
        except ArchgraphError as exc:
            raise blame_overrides(exc, spec.loc.file, overrides) from None
    model = model_class(name=name, graph=graph, inputs=inputs,
                        variables=variables, output_names=graph.output_names,
                        description=description, source=spec.loc.file,
                        bindings=bindings, warnings=ctx.warnings, constraints=constraints,
                        overrides=overrides, values=_values_file(spec))
    _check_limits(model, spec)
    resolve_ties(model)
    return model


def _values_file(spec: LocDict) -> str:
    """`values:`, the file (beside the spec, a path relative to its folder) holding the values of
    buffers that no computation from constants gives; '' when the spec names none."""
    raw = spec.get("values")
    if raw is None:
        return ""
    if not isinstance(raw, str) or not raw.endswith(".safetensors"):
        raise SpecError(f"'values' names a .safetensors file beside the spec; received {raw!r}",
                        loc=loc_of(spec, "values"), hint="values: model.values.safetensors")
    source = Path(spec.loc.file)
    return str(source.parent / raw) if source.is_file() else raw


def _description(spec: LocDict) -> str:
    value = spec.get("description")
    return "" if value is None else check_description(value, loc_of(spec, "description"))


def _overrides(spec: LocDict, raw_vars, var_locs: dict, variables: dict, given: set) -> str:
    """What a spec that extends another sets itself: `child.yaml sets H = 770 (child.yaml:5)`; not a
    variable `given` a value by --set or a config.json (mistral.yaml's W when the config has sliding_window)."""
    if "extends" not in spec.lines and not any(loc.file != spec.loc.file for loc in var_locs.values()):
        return ""
    own = [n for n in raw_vars if n in variables and n not in given and var_locs.get(n)
           and var_locs[n].file == spec.loc.file]
    return f"{spec.loc.file} sets " + ", ".join(f"{n} = {variables[n]} ({var_locs[n]})" for n in own) if own else ""


def blame_overrides(exc: ArchgraphError, file: str, overrides: str) -> ArchgraphError:
    """An error inside a parent spec (`extends:`) also names what the child sets: the line to fix
    may be the child's."""
    if overrides and exc.loc is not None and exc.loc.file != file:
        exc.hint = (exc.hint + "; " if exc.hint else "") + overrides
    return exc


def _check_limits(model: Model, spec: LocDict) -> None:
    count = instance_count(model.graph)
    if count > MAX_NODE_INSTANCES:
        raise SpecError(f"the model expands to {count:,} node instances once repetitions are counted; "
                        f"archgraph handles at most {MAX_NODE_INSTANCES:,}", loc=loc_of(spec, "nodes"),
                        hint="check the 'repeat:' values (and the variables they use)")
    calls = call_count(model.graph)
    if calls > MAX_BLOCK_CALLS:
        raise SpecError(f"blocks call blocks {calls:,} times once nested calls are multiplied out; "
                        f"archgraph handles at most {MAX_BLOCK_CALLS:,}", loc=loc_of(spec, "nodes"),
                        hint="a block that calls another several times, nested many levels deep, doubles "
                             "at every level: use 'repeat:' for a stack of the same block")


def _inputs(spec: Mapping) -> dict[str, InputSpec]:
    raw = spec.get("inputs")
    if not raw:
        raise SpecError("the spec has no 'inputs:'", loc=loc_of(spec),
                        hint="declare inputs, e.g. 'inputs: {input_ids: [B, S]}'")
    expect_mapping(raw, spec, "inputs")
    out = {}
    for name, value in raw.items():
        loc = loc_of(raw, name)
        check_name(name, "input name", loc)
        dtype, default = "float32", None
        if isinstance(value, dict):
            check_keys(value, {"shape", "dtype", "default"}, f"input '{name}'", value.key_loc)
            dtype = str(value.get("dtype", dtype))
            default = value.get("default")
            if default is not None and (not isinstance(default, str) or default not in INPUT_DEFAULTS):
                raise SpecError(f"input '{name}': default {default!r} is not one of "
                                f"{', '.join(INPUT_DEFAULTS)}", loc=value.key_loc("default"),
                                hint="default: ones (a mask of every position), zeros (token_type_ids), "
                                     "arange (positions) or none (the op reading it computes its own); leave it "
                                     "out for an input every call must give")
            value = value.get("shape")
        if not isinstance(value, list) or not value:
            raise SpecError(f"input '{name}' needs a shape list such as [B, S]", loc=loc,
                            hint="e.g. input_ids: {shape: [B, S], dtype: int64}")
        for dim in value:
            if isinstance(dim, bool) or not isinstance(dim, (int, str)) or (isinstance(dim, int) and dim <= 0):
                raise SpecError(f"input '{name}': dimension {dim!r} is neither a positive number nor a name",
                                loc=loc,
                                hint="give a positive whole number (768) or a name (B, S, or a variable)")
            if isinstance(dim, str):
                try:
                    expr.parse(dim)
                except ArchgraphError as exc:
                    raise exc.with_context(loc=loc)
        out[name] = InputSpec(name, tuple(value), dtype, loc, default)
    return out
