"""A spec from an ONNX file: `import_onnx(path)` reads it (`read`: safely, external data checked,
custom domains refused), writes each node as archgraph ops of PyTorch's names (`convert`, `rules`),
evaluates the size arithmetic symbolically (`constants`), folds numbered layers into `repeat:`
(`fold`).  `archgraph.load.onnx_spec` checks the result (`verify`): its count is the file's weights,
and (with torch and onnxruntime installed) its `to_module` computes onnxruntime's outputs.
Needs the `onnx` package (the `onnx` extra); never torch, except for the check.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ArchgraphError


@dataclass
class Imported:
    """What `import_onnx` made: the spec's text (a `SpecText`: `.write(path)` writes it and its values
    file), and the file's tensors by the spec's names (`weights`: spec tensor -> initializer)."""

    text: object
    name: str
    weights: dict = field(default_factory=dict)
    path: Path | None = None
    converter: object = None  # what read the file (its initializers, sizes and inputs), for the check


def needs_onnx():
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ArchgraphError("reading an ONNX file needs the onnx package",
                             hint="pip install 'archgraph[onnx]'") from None


def import_onnx(path: str | Path, name: str | None = None) -> Imported:
    """The spec of the ONNX model at `path` (see the module docstring), unchecked: `archgraph.load.
    onnx_spec` checks it."""
    needs_onnx()
    from ..spec.dump import dump
    from ..spectext import SpecText
    from . import fused, pointwise, rules, shapes  # noqa: F401  (registering their rules)
    from .constants import evaluate
    from .convert import Converter
    from .fold import fold
    from .read import read_model
    from .table import TABLE
    path = Path(path)
    model = read_model(path)
    cv = Converter(model, path)
    inputs, outputs = cv.run(evaluate, TABLE)
    nodes = _live(cv.nodes, outputs)
    holders = {w.rpartition(".")[0] for w in cv.weights} | set(cv.stored)
    nodes, blocks, moved, copied = fold(nodes, outputs, _block_names(model), holders)
    for copy, original in copied.items():  # a constant copied out of a layer: its values under both names
        if original in cv.stored:
            cv.stored[copy] = cv.stored[original]
    if moved:  # tensors of nodes moved out of a layer take their new names
        cv.stored = {_moved(k, moved): v for k, v in cv.stored.items()}
        cv.weights = {_moved(k, moved): v for k, v in cv.weights.items()}
    name = name or _model_name(model, path)
    spec = {"archgraph": 1, "name": name,
            "description": f"{path.name} imported from ONNX (opset {_opset(model)}, "
                           f"{model.producer_name or 'unknown producer'} {model.producer_version}) by archgraph"
                           + _restored(cv.unmerged)}
    spec["inputs"] = inputs
    if cv.bounds:
        spec["constraints"] = [f"{k} <= {v}" for k, v in cv.bounds.items()]
    if blocks:
        spec["blocks"] = {k: {"inputs": v["inputs"], "outputs": v["outputs"] if len(v["outputs"]) > 1
                              else v["outputs"][0], "nodes": v["nodes"]} for k, v in blocks.items()}
    spec["nodes"] = nodes
    spec["outputs"] = outputs
    if cv.stored:
        spec["values"] = f"{_file_name(name)}.values.safetensors"
    text = SpecText(dump(spec), cv.stored, spec.get("values"))
    return Imported(text, name, cv.weights, path, cv)


def _restored(unmerged: dict) -> str:
    """The description's note of the parameters `unmerge` gave back (the file holds fewer tensors)."""
    if not unmerged:
        return ""
    merged = sum(1 for v in unmerged.values() if v)
    dropped = len(unmerged) - merged
    parts = [f"{merged} parameters the exporter merged with an equal one" if merged else "",
             f"{dropped} zero biases it dropped" if dropped else ""]
    return f"; {' and '.join(p for p in parts if p)} are the module's own again (the file names them)"


def _moved(tensor: str, moved: dict) -> str:
    if tensor in moved:
        return moved[tensor]
    node, _, local = tensor.rpartition(".")
    return f"{moved[node]}.{local}" if node in moved else tensor


def _live(nodes: list[dict], outputs: dict) -> list[dict]:
    """The nodes the outputs depend on (an exporter keeps values nothing reads)."""
    by_name = {n["name"]: n for n in nodes}
    live, todo = set(), [str(r).partition(":")[0] for r in outputs.values()]
    while todo:
        k = todo.pop()
        if k in live or k not in by_name:
            continue
        live.add(k)
        refs = by_name[k].get("in", [])
        for r in [refs] if isinstance(refs, str) else refs:
            todo.append(str(r).rpartition(":")[0] if re.search(r":\d+$", str(r)) else str(r))
        tie = by_name[k].get("tie")
        for t in ([tie] if isinstance(tie, str) else (tie or {}).values()):
            todo.append(t.rpartition(".")[0])
    return [n for n in nodes if n["name"] in live]


def _block_names(model) -> dict:
    """List path -> the class of its items, where torch.onnx's dynamo exporter recorded it
    (`pkg.torch.onnx.class_hierarchy`)."""
    import ast
    out: dict = {}
    for node in model.graph.node:
        meta = {p.key: p.value for p in node.metadata_props}
        scopes, classes = meta.get("pkg.torch.onnx.name_scopes"), meta.get("pkg.torch.onnx.class_hierarchy")
        if not scopes or not classes:
            continue
        try:
            scopes, classes = ast.literal_eval(scopes), ast.literal_eval(classes)
        except (ValueError, SyntaxError):
            continue
        for s, c in zip(scopes, classes):
            m = re.match(r"^(.*)\.\d+$", str(s))
            if m and m[1] not in out and isinstance(c, str):
                cls = c.rpartition(".")[2]
                if cls.isidentifier():
                    out[m[1]] = cls
    return out


def _model_name(model, path: Path) -> str:
    name = model.graph.name if model.graph.name and model.graph.name not in ("main_graph", "torch_jit") else path.stem
    return name[:200]


def _file_name(name: str) -> str:
    return re.sub(r"[^\w.-]", "_", name)[:100] or "model"


def _opset(model) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
