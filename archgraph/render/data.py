"""Pass results as JSON-ready dicts (the `--json` output of the CLI)."""
from __future__ import annotations

from typing import Any

from ..dims import to_json
from ..passes.params import BlockRow, ParamReport, TensorRow, Totals
from ..passes.shapes import ShapeReport


def totals_json(t: Totals) -> dict[str, Any]:
    return {"total": t.total, "trainable": t.trainable, "non_trainable": t.non_trainable,
            "active": t.active, "buffers": t.buffers, "buffer_bytes": t.buffer_bytes,
            "buffers_by_dtype": dict(sorted(t.buffers_by_dtype.items(), key=lambda kv: -kv[1])), "tied": t.tied,
            "by_category": dict(sorted(t.by_category.items(), key=lambda kv: -kv[1])),
            "tied_by_category": dict(sorted(t.tied_by_category.items(), key=lambda kv: -kv[1]))}


def shared_json(report: ParamReport) -> list[dict[str, Any]]:
    """Each tensor (or shared block) used more than once: counted once (`params`), used `uses` times;
    `tied` is the sum of their reuses, (uses - 1) x params."""
    return [{"path": s.path, "params": s.params, "uses": s.uses, **({"block": True} if s.block else {})}
            for s in report.shared()]


def _block_json(row: BlockRow) -> dict[str, Any]:
    return {"path": row.path, "block": row.block, "repeat": row.repeat, "shared": row.shared,
            "per_repetition": row.per_repetition.total, "params": row.total.total,
            "children": [_block_json(c) for c in row.children]}


def params_json(report: ParamReport) -> dict[str, Any]:
    nodes = []
    listed: dict[int, tuple[list, list]] = {}  # id(rows) -> (rows, their entries): a layer's, once
    for path, node, new, rows in report.nodes():
        known = listed.get(id(rows))
        if known is None:
            known = listed[id(rows)] = (rows, [_tensor_json(r) for r in rows])  # rows kept: ids stay unique
        nodes.append({"path": path, "op": node.op.op_name, "params": new, "category": node.category,
                      "trainable": node.trainable, "tensors": known[1]})
    state = {name: list(row.shape) for name, row in report.state_dict()}
    return {"model": report.model.name, **totals_json(report.totals), "shared": shared_json(report),
            "blocks": [_block_json(b) for b in report.blocks], "nodes": nodes, "state_dict": state}


def _tensor_json(r: TensorRow) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": r.name, "shape": list(r.shape), "params": r.count}
    if r.buffer:
        entry["buffer"] = True
        entry["dtype"] = r.dtype
    if r.tied_to:
        entry["tied_to"] = r.tied_to
    return entry


def shape_json(shape) -> list[int | str]:
    return [to_json(d) for d in shape]


def shapes_json(report: ShapeReport) -> dict[str, Any]:
    return {
        "model": report.model.name,
        "bindings": report.bindings,
        "inputs": {k: shape_json(v) for k, v in report.inputs.items()},
        "outputs": {k: shape_json(v) for k, v in report.outputs.items()},
        "nodes": [{"path": path, "op": node.op.op_name, "outputs": [shape_json(s) for s in outs]}
                  for path, node, outs in report.nodes()],
    }
