"""Un-merging the parameters an exporter merged.  Both torch.onnx exporters keep one initializer for
tensors of equal values (a fresh model's LayerNorm ones and zeros, its zeroed biases), so every
layer but the first reads the first layer's tensor and the layers no longer fold.  The file records
which parameter each read was: the dynamo exporter in the node's `pkg.torch.onnx.fx_node`
(`aten.layer_norm(%add_82, [32], %p_h_0_ln2_weight, ...)` reading `h.0.ln1.weight`, whose
`pkg.torch.onnx.original_node_name` is `p_h_0_ln1_weight`), the TorchScript exporter as an
`Identity` whose output is the merged parameter's name (`h.0.ln2.weight = Identity(h.0.ln1.weight)`).
`unmerge` gives each such read its own tensor again (an alias of the same values under the
parameter's name), so the spec holds the parameters the module had.  A read the file does not name
stays a tie (counted once).  A linear's bias of zeros, whose addition the dynamo exporter's optimiser
drops (the call still names it: `aten.linear(%x, %p_w, %p_out_proj_bias)`), is restored as zeros
(`_dropped_biases`), so that the count is the module's."""
from __future__ import annotations

import ast
import re

from .values import GENERATED, MODULE_PATH

TOKEN = re.compile(r"%([pbc]_\w+)")


def unmerge(model, inits) -> dict[str, str]:
    """Rename, in `model`'s nodes, each read of a merged initializer to the parameter it was, adding
    that name to `inits` as an alias of the same tensor; return {alias: initializer}."""
    aliases: dict[str, str] = {}
    _identities(model, inits, aliases)
    _fx_reads(model, inits, aliases)
    _dropped_biases(model, inits, aliases)
    return aliases


def _float_weight(inits, name: str) -> bool:
    return name in inits and inits.dtype(name).startswith(("float", "bfloat")) and inits.size(name) > 1


def _identities(model, inits, aliases: dict) -> None:
    """TorchScript's `NAME = Identity(initializer)`, NAME a module's tensor: NAME is an alias."""
    graph = model.graph
    keep = []
    for node in graph.node:
        if node.op_type == "Identity" and len(node.input) == 1 and _float_weight(inits, node.input[0]) and \
                MODULE_PATH.match(node.output[0]) and not GENERATED.match(node.output[0]) and \
                node.output[0] not in inits:
            source = aliases.get(node.input[0], node.input[0])
            inits.protos[node.output[0]] = inits.protos[source]
            aliases[node.output[0]] = source
        else:
            keep.append(node)
    if len(keep) != len(graph.node):
        del graph.node[:]
        graph.node.extend(keep)


def _originals(model) -> dict[str, str]:
    """Initializer -> the placeholder torch.export gave it (`p_h_0_ln1_weight`)."""
    out = {}
    for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.initializer):
        for p in v.metadata_props:
            if p.key == "pkg.torch.onnx.original_node_name":
                out[v.name] = p.value
    return out


def _fx_reads(model, inits, aliases: dict) -> None:
    """The dynamo exporter's reads: a node whose recorded call names a parameter placeholder that no
    initializer has kept, reading an initializer of another parameter (the local name alike: weight
    for weight), reads that parameter."""
    originals = _originals(model)
    kept = set(originals.values())
    for node in model.graph.node:
        meta = {p.key: p.value for p in node.metadata_props}
        call = meta.get("pkg.torch.onnx.fx_node", "")
        if not call:
            continue
        tokens = TOKEN.findall(call.partition("args = ")[2] or call)
        lost = [t for t in tokens if t not in kept]
        if not lost:
            continue
        scopes = _scopes(meta.get("pkg.torch.onnx.name_scopes"))
        for i, name in enumerate(node.input):
            original = originals.get(name)
            if original is None or original in tokens or not _float_weight(inits, name):
                continue
            local = name.rpartition(".")[2]
            match = [t for t in lost if t.endswith("_" + local)]
            if len(match) != 1:
                continue
            alias = _parameter_name(match[0], scopes)
            if alias in inits and alias not in aliases:
                continue
            if alias not in inits:
                inits.protos[alias] = inits.protos[name]
                aliases[alias] = name
            node.input[i] = alias


def _scopes(text: str | None) -> list[str]:
    try:
        parts = ast.literal_eval(text) if text else []
    except (ValueError, SyntaxError):
        return []
    return [p for p in parts if isinstance(p, str)] if isinstance(parts, list) else []


def _parameter_name(token: str, scopes: list[str]) -> str:
    """`p_h_0_ln2_weight` under the scope `h.0.ln2` -> `h.0.ln2.weight` (torch.export writes a
    parameter's name with its dots as underscores); the token without its prefix where no scope fits."""
    bare = token[2:]
    for scope in sorted(scopes, key=len, reverse=True):
        flat = re.sub(r"\W", "_", scope)
        if scope and bare.startswith(flat + "_"):
            return f"{scope}.{bare[len(flat) + 1:]}"
    return bare


def _dropped_biases(model, inits, aliases: dict) -> None:
    """A MatMul or Gemm by a weight whose recorded call is `aten.linear` (or `aten.addmm`, GPT-2's
    Conv1D) with a bias no initializer holds, and that adds none: the bias was zeros and its addition dropped.  Add it back as zeros
    (a Gemm's C, or an Add after the MatMul), named as the parameter."""
    from onnx import helper, numpy_helper
    import numpy as np
    kept = set(_originals(model).values())
    consumers: dict = {}
    for node in model.graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    out = []
    for node in model.graph.node:
        out.append(node)
        meta = {p.key: p.value for p in node.metadata_props}
        call = meta.get("pkg.torch.onnx.fx_node", "")
        target = re.search(r"target=torch\.ops\.aten\.(linear|addmm)\.default", call)
        if node.op_type not in ("MatMul", "Gemm") or not target or len(node.input) < 2 or \
                not _float_weight(inits, node.input[1]):
            continue
        args = TOKEN.findall(call.partition("args = ")[2])
        bias = args[1 if target[1] == "linear" else 0] if len(args) == 2 else None
        if bias is None or bias in kept or (node.op_type == "Gemm" and len(node.input) > 2):
            continue
        users = consumers.get(node.output[0], [])
        if node.op_type == "MatMul" and len(users) == 1 and users[0].op_type == "Add":
            continue  # the bias is added (a value of another name, or computed): not dropped
        dims = inits.shape(node.input[1])
        width = dims[0] if node.op_type == "Gemm" and _attr(node, "transB") else dims[-1]
        name = _parameter_name(bias, _scopes(meta.get("pkg.torch.onnx.name_scopes")))
        if name in inits:
            continue
        dtype = np.float16 if inits.dtype(node.input[1]) == "float16" else np.float32
        inits.protos[name] = numpy_helper.from_array(np.zeros(width, dtype=dtype), name)
        aliases[name] = ""
        if node.op_type == "Gemm":
            node.input.append(name)
            continue
        product = node.output[0] + "__before_bias"
        add = helper.make_node("Add", [product, name], [node.output[0]], name=node.name + "__bias")
        add.metadata_props.extend(node.metadata_props)
        node.output[0] = product
        out.append(add)
    if len(out) != len(model.graph.node):
        del model.graph.node[:]
        model.graph.node.extend(out)


def _attr(node, name: str):
    return next((a.i for a in node.attribute if a.name == name), 0)
