"""A model as the tree an explorer draws: every op and block call once (a repeated block's body
once), each with its wiring, its shapes at given sizes, its parameters, forward FLOPs and the
bytes its outputs hold, as JSON-ready data.

Paths are those `params --json` gives: an op by its first repetition's path
(`transformer.h.0.ln_1`), a block call as its block rows do (`transformer.h`,
`encoder.layer.*.attention.self`); a node's `place` is its path without layer indices, as `diff`
matches nodes (`transformer.h.ln_1`).  Two nodes may share a path (Gemma 3's two rotary tables at
`model.rotary_emb`); each has its own `id`.  Totals count every repetition: a node's `total`
parameters (a shared block's repetitions add none), its `flops` and `bytes` summed over every
evaluation.

>>> from archgraph import load
>>> tree = explore(load("gpt2"), {"B": 1, "S": 8})
>>> block = next(n for n in tree["graph"]["nodes"] if n["kind"] == "block")
>>> block["path"], block["repeat"], block["body"]["nodes"][0]["path"], block["body"]["nodes"][0]["out"]
('transformer.h', 12, 'transformer.h.0.ln_1', ['[1, 8, 768]'])
"""
from __future__ import annotations

from typing import Any, Mapping

from ..dims import fmt_shape, to_json
from ..dtypes import nbytes
from ..graph import BlockNode, Graph, Model, OpNode, join, read_inputs
from ..record import MISSING
from .flops import op_flops
from .params import ParamReport, call_totals, count_params, graph_totals, node_tensors
from .shapes import infer_shapes
from .stacks import Stack, place
from .walk import Run

ACTIVATION_DTYPE = "bf16"  # what `bytes` counts each output element as


def explore(model: Model, sizes: Mapping[str, int], params: ParamReport | None = None,
            stacks: list[Stack] = ()) -> dict[str, Any]:
    """The tree of `model` at `sizes` (every symbolic size bound: `{"B": 1, "S": 512}`); `stacks`
    (find_stacks') name each node's place."""
    params = params or count_params(model)
    run = infer_shapes(model, dict(sizes)).run
    state = {"next": 0, "params": params, "model": model, "reads": {}, "bases": [s.base for s in stacks]}
    graph = _graph(state, model.graph, [(run, 1)], "", "", 1)
    return {
        "name": model.name, "description": model.description,
        "sizes": {k: to_json(v) for k, v in sizes.items()},
        "total": params.total, "flops": sum(n["flops"] for n in graph["nodes"]),
        "bytes": sum(n["bytes"] for n in graph["nodes"]),
        "inputs": [{"name": n, "shape": _shape(v), "dtype": model.inputs[n].dtype}  # those something reads
                   for n, v in zip(model.graph.inputs, run.inputs) if n in read_inputs(model.graph, state["reads"])],
        "outputs": [{"name": name, "ref": list(ref)} for name, ref in zip(model.output_names, model.graph.outputs)],
        "graph": graph,
    }


def _graph(state: dict, graph: Graph, runs: list[tuple[Run, int]], prefix: str, rows: str,
           times: int) -> dict[str, Any]:
    """`runs`: every evaluation of this graph with how often it happens; `prefix`: the path of its
    first repetition; `rows`: the path block rows give it; `times`: how often its weights occur."""
    nodes = []
    for name, node in graph.nodes.items():
        state["next"] += 1
        common = {"id": state["next"], "name": name, "inputs": [list(ref) for ref in node.inputs]}
        if isinstance(node, OpNode):
            nodes.append({**common, **_op(state, graph, node, runs, join(prefix, name), prefix, times),
                          "place": _place(state, join(rows, name))})
            continue
        segments = [(seg.run, count * seg.count) for run, count in runs for seg in run.nodes[name]]
        per = graph_totals(node.body, state["params"].cache)
        block = {**common, "kind": "block", "path": join(rows, node.segment), "place": _place(state, join(rows, node.segment)),
                 "block": node.block,
                 "label": node.label, "repeat": node.repeat, "shared": node.shared, "scheduled": node.scheduled,
                 "params": per.total, "total": call_totals(node, per).total * times,
                 "category": max(per.by_category, key=per.by_category.get, default="other"),
                 "out": [_shape(v) for v in runs[0][0].values[name]],
                 "reads": [n in read_inputs(node.body, state["reads"]) for n in node.body.inputs[:len(node.inputs)]]}
        if node.repeat and segments:
            inner = times * (1 if node.shared else node.repeat)
            body = _graph(state, node.body, segments, node.rep_path(prefix, 0),
                          join(rows, node.segment) + (".*" if node.indexed else ""), inner)
            block["body"] = body
            if node.each:  # inputs sliced per repetition (`each:`): the dim, and what the first repetition gets
                block.update(each=list(node.each), given=[_shape(v) for v in segments[0][0].inputs])
            block["flops"] = sum(n["flops"] for n in body["nodes"])
            block["bytes"] = sum(n["bytes"] for n in body["nodes"])
        else:  # repeated 0 times: hands its inputs on
            block.update(body=None, flops=0, bytes=0)
        nodes.append(block)
    return {"inputs": list(graph.inputs), "outputs": [list(ref) for ref in graph.outputs], "nodes": nodes}


def _place(state: dict, rows: str) -> str:
    """A node's place, as `passes.diff` names it: its path without its stacks' layer indices
    (`transformer.h.*.ln_1` -> `transformer.h.ln_1`; T5's `layer.2` is a name and stays)."""
    return place(".".join(part for part in rows.split(".") if part != "*"), state["bases"])


def _op(state: dict, graph: Graph, node: OpNode, runs: list[tuple[Run, int]], path: str, prefix: str,
        times: int) -> dict[str, Any]:
    tensors = node_tensors(node, state["model"], (graph, prefix))
    new = sum(t.count for t in tensors if not t.buffer and t.tied_to is None)
    first = runs[0][0]
    flops = 0
    out_bytes = 0
    for run, count in runs:
        outs = list(run.nodes[node.name])
        flops += op_flops(node, run.input_values(node), outs, path) * count
        out_bytes += sum(_elements(v) for v in outs) * count
    return {"kind": "op", "path": path, "op": node.op.op_name, "args": _args(node), "category": node.category,
            "params": new, "total": new * times, "has_params": bool(node.op.params()),
            "tensors": [{"name": t.name, "shape": list(t.shape), "count": t.count, "buffer": t.buffer,
                         "tied_to": t.tied_to, **({"dtype": t.dtype} if t.buffer else {})} for t in tensors],
            "in": [_shape(v) for v in first.input_values(node)],
            "out": [_shape(v) for v in first.nodes[node.name]],
            "flops": int(flops), "bytes": nbytes(out_bytes, ACTIVATION_DTYPE)}


def _args(node: OpNode) -> dict[str, Any]:
    """The op's hyperparameters that differ from their defaults."""
    out = {}
    for f in node.op.hyperparameters().values():
        value = getattr(node.op, f.name)
        if f.default is not MISSING and value == f.default:
            continue
        out[f.name] = _jsonable(value)
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(to_json(value)) if not isinstance(value, (int, str)) else value


def _shape(value: Any) -> str | None:
    return fmt_shape(value) if isinstance(value, tuple) else None


def _elements(value: Any) -> int:
    if not isinstance(value, tuple):
        return 0
    n = 1
    for d in value:
        if not isinstance(d, int):
            return 0
        n *= d
    return n


def layer_sizes(stacks: list[Stack]) -> list[dict[str, Any]]:
    """Each layer of each stack: its index, its parameters and those a token touches, in layer
    order within a stack's place (a schedule's stacks interleave: Jamba's layers 0..31)."""
    out = []
    for number, stack in enumerate(stacks):
        indices = iter(stack.indices)
        for call in stack.calls:
            per = graph_totals(call.body, {})
            for rep in range(call.repeat):
                out.append({"stack": number, "place": stack.base, "index": next(indices, rep),
                            "params": per.total if rep == 0 or not call.shared else 0,
                            "size": per.total, "active": per.active})
    return sorted(out, key=lambda layer: ([s.base for s in stacks].index(layer["place"]), layer["index"]))
