"""A spec from a live PyTorch module: `convert(module, args, kwargs)`, which
`archgraph.torch.to_spec` calls and then checks (`verify`).

The module is traced with torch.export (`trace`, its mutations functionalised) and each node of the
exported graph becomes an archgraph op named by the module it ran in (`convert`).  `verify` checks
the written spec against the module: read back from its text, its module loads the module's
state_dict strictly and computes its outputs (on the meta device: its count and every state_dict
name and shape are the module's).  This package does not import `archgraph.torch` (which imports
it): the check is given `to_module`.
Imports torch (an optional dependency); archgraph's core never imports this package.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..errors import ArchgraphError, InconclusiveDimError
from ..spec.dump import dump
from .aten import DTYPES, Refuse, empty
from .body import Body
from .convert import Converter
from .nodes import is_tensor_value
from .notes import said
from .outputs import output_names
from .trace import Traced, trace
from .written import SpecText


@dataclass
class Converted:
    """A module's spec as `convert` wrote it, with what the check needs to place a difference."""

    spec: dict                          # the spec as a dict
    text: str                           # ... and as the YAML text returned
    traced: Traced                      # the trace it was read from
    where: dict[str, tuple[str, int]]   # fx node -> the spec op computing it (path, output index)
    stored: dict                        # the values file's tensors by name (buffers written beside the spec)


def convert(module: torch.nn.Module, args: tuple, kwargs: dict, name: str | None = None) -> Converted:
    """The spec of `module` called with the example inputs (see `archgraph.torch.to_spec`), unchecked.
    Where its sizes symbolic make it fail for a size (a slice S long of a tensor S2 long: the trace
    assumed S <= S2, which no constraint can state; a size no expression writes), the spec of the
    trace at the example's sizes, saying why; where that fails too, the first failure."""
    traced = trace(module, args, kwargs)
    try:
        return _convert(module, traced, name, _fixed_note(traced.fixed))
    except ArchgraphError as exc:
        why = str(getattr(exc, "message", exc)).splitlines()[0]
        if not traced.sizes or not (isinstance(exc, InconclusiveDimError) or "size" in why):
            raise
        try:
            return _convert(module, trace(module, args, kwargs, static=True), name,
                            f"; its sizes are the example inputs' because with them symbolic: {why}")
        except ArchgraphError:
            raise exc from None


def _convert(module: torch.nn.Module, traced: Traced, name: str | None, note: str) -> Converted:
    c = Converter(module, traced)
    graph = traced.program.graph
    user = {n.name: n for n in graph.nodes if n.op == "placeholder" and n.name in traced.inputs}
    body = Body("", {user[k]: k for k in traced.inputs if k in user})
    live = c.live = _live(graph)
    nodes = [n for n in graph.nodes if n.op == "call_function" and is_tensor_value(n) and n in live]
    try:
        c.emit_items(nodes, body, "")
    except Refuse as exc:  # a refusal outside one node's rule (the tensors of a module's block call)
        raise ArchgraphError(f"cannot import {type(module).__name__}: {exc}",
                             hint='rewrite that part of the module with the ops archgraph lists (archgraph '
                                  'ops), or describe it in a spec by hand') from None
    c.finish_blocks()
    outputs = _outputs(c, body, graph, traced.program)
    inputs = {}
    for k, t in traced.inputs.items():
        node = user.get(k)
        if node is None:
            continue  # an input forward never reads
        shape = [c.size(d) for d in node.meta["val"].shape]
        if t.dtype not in DTYPES:
            raise ArchgraphError(f"input '{k}' has element type {t.dtype}, which archgraph does not name",
                                 hint='give the input as a tensor of a float, int or bool type (--input '
                                      'NAME=SHAPE:DTYPE)')
        inputs[k] = {"shape": shape, "dtype": DTYPES[t.dtype]}
    spec = {"archgraph": 1, "name": name or type(module).__name__,
            "description": f"{type(module).__name__} imported from PyTorch (torch.export) by archgraph" + note + said()}
    if c.variables:
        spec["variables"] = c.variables
    spec["inputs"] = inputs
    constraints = _constraints(traced)
    if constraints:
        spec["constraints"] = constraints
    if c.blocks:
        spec["blocks"] = {k: {**({"args": v["args"]} if "args" in v else {}), "inputs": v["inputs"],
                              "outputs": v["outputs"] if len(v["outputs"]) > 1 else v["outputs"][0],
                              "nodes": v["nodes"]} for k, v in c.blocks.items()}
    spec["nodes"] = body.nodes
    spec["outputs"] = outputs
    if c.stored:
        spec["values"] = f"{spec['name']}.values.safetensors"
    _unused_tensors(module, spec)
    text = SpecText(dump(spec), c.stored, spec.get("values"))
    return Converted(spec, text, traced, c.where, c.stored)


def _fixed_note(fixed: list[str]) -> str:
    """What the description says of a trace specialised to its example (see `specialise`)."""
    if not fixed:
        return ""
    from .specialise import WHY
    return ("; its sizes are the example inputs' because the code reads tensor values as numbers, "
            f"which the example fixed{WHY.get()}: " + "; ".join(fixed))


def _live(graph) -> set:
    """The nodes the outputs depend on (a trace keeps values nothing reads: position ids expanded
    to the batch and never used; an empty tensor concatenated is not read, see aten._cat)."""
    out = next(n for n in graph.nodes if n.op == "output")
    live, todo = set(), [out]
    while todo:
        n = todo.pop()
        if n in live:
            continue
        live.add(n)
        skip = n.target in (torch.ops.aten.cat.default, torch.ops.aten.concat.default)  # an empty input adds nothing
        todo.extend(a for a in n.all_input_nodes if a not in live and not (skip and empty(a)))
    return live


def _constraints(traced) -> list[str]:
    """The bounds torch.export found for the symbolic sizes (S <= 64 where a table of 64 positions is
    sliced to S; S >= 3 where the code slices S - 2 positions), which the shape rules need to decide
    min(S, 64) or that S - 2 is a length."""
    out = []
    for symbol, name in traced.sizes.items():
        bounds = traced.program.range_constraints.get(symbol)
        if bounds is None:
            continue
        lower, upper = bounds.lower, bounds.upper
        if getattr(lower, "is_Integer", False) and int(lower) > 2:  # torch's own least is 2 (0 and 1 specialise)
            out.append(f"{name} >= {int(lower)}")
        if getattr(upper, "is_Integer", False) and int(upper) < 2 ** 31:
            out.append(f"{name} <= {int(upper)}")
    return list(dict.fromkeys(out))


def _outputs(c: Converter, body: Body, graph, program) -> dict:
    """The module's outputs by name: a ModelOutput's or dict's keys, a tuple's `output_0`..., one
    tensor `output`."""
    out_node = next(n for n in graph.nodes if n.op == "output")
    flat = list(out_node.args[0])
    names = output_names(program.call_spec.out_spec, len(flat))
    result = {}
    for name, value in zip(names, flat):
        if isinstance(value, torch.fx.Node) and is_tensor_value(value):
            result[name] = c.ref(body, value)
    if not result:
        raise ArchgraphError(f"{type(c.module).__name__}.forward returns no tensor",
                             hint='make forward return a tensor, or a tuple, list or dict of tensors')
    return result


def _unused_tensors(module: torch.nn.Module, spec: dict) -> None:
    """Tensors of the module that forward never reads: nodes marked `unused`, so that the spec holds
    every tensor the module's state_dict does."""
    from ..load import load_text
    from ..passes.params import named_tensors
    held = {name for name, _ in named_tensors(load_text(dump(spec), "<import>"), buffers="all")}
    body = Body("", {})
    body.names = {n["name"] for n in spec["nodes"]}
    persistent = set(module.state_dict(keep_vars=True))
    tied = {f"{n['name']}.{local}" for n in spec["nodes"] if n.get("tie")
            for local in ([n["tie"].rpartition(".")[2]] if isinstance(n["tie"], str) else n["tie"])}
    holder: dict[int, str] = {}  # a tensor the spec holds -> its name there (not a tie's)
    for fqn, p in module.named_parameters(remove_duplicate=False):
        if fqn in held and fqn not in tied:
            holder.setdefault(id(p), fqn)
    for fqn, p in module.named_parameters(remove_duplicate=False):
        if fqn in held:
            continue
        owner, _, local = fqn.rpartition(".")
        if id(p) in holder and owner and owner not in body.names:  # another name of a held tensor: a tie
            body.names.add(owner)
            tie = holder[id(p)] if local == "weight" else {local: holder[id(p)]}  # tie: names a weight
            body.add(owner, "parameter", [], {"shape": list(p.shape), "tensor": local}, {"unused": True, "tie": tie})
        elif id(p) in holder and fqn not in body.names:  # the module's other tensor (a tied bias, its weight's
            body.names.add(fqn)                            # node named as the module): a node of its own name
            body.add(fqn, "parameter", [], {"shape": list(p.shape), "tensor": ""},
                     {"unused": True, "tie": holder[id(p)]})
        else:  # its first name holds it (an unused tied pair, SeamlessM4T's unit decoder: held once, not twice)
            holder.setdefault(id(p), body.add(body.unique(fqn), "parameter", [], {"shape": list(p.shape), "tensor": ""},
                                              {"unused": True}))
    for fqn, b in module.named_buffers(remove_duplicate=False):
        if fqn not in held and fqn in persistent:
            body.add(body.unique(fqn), "buffer", [], {"shape": list(b.shape)}, {"unused": True})
    spec["nodes"] += body.nodes
