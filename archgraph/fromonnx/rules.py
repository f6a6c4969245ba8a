"""ONNX operators as archgraph ops, with PyTorch's names: `TABLE[op_type](node, cv, path)` writes
the node's ops through `cv.emit` and returns its outputs (Tensors or constants).  Operators that
hold weights (MatMul/Gemm by a weight, Conv, the norms, Gather from a table) become the layer that
owns them (`linear`, `conv2d`, `layer_norm`, `embedding`), named by their module path; the rest
the op of the same meaning (`reshape`, `softmax`, `mean`, ...).  Elementwise operators, reductions,
indexing and the like are in `pointwise` and `shapes`."""
from __future__ import annotations

from .table import TABLE, rule
from .values import GENERATED, MODULE_PATH, Refuse, Tensor


def _f32(x: float) -> float:
    """An attribute's float as float32 holds it, printed short (1e-05, not 9.999999747378752e-06)."""
    import numpy as np
    return float(f"{np.float32(x):.7g}")



def weight(cv, name: str) -> bool:
    """`name` is an initializer the op can own (a float tensor of the file, not computed)."""
    return name in cv.inits and name not in cv.env and cv.inits.dtype(name).startswith(("float", "bfloat"))


def owner(cv, path: str, names: list[str], kind: str) -> str:
    """The module path owning tensors `names`: the one the exporter recorded for the node, else
    their common prefix where they are named as a module's (`fc1.weight`)."""
    prefixes = {n.rpartition(".")[0] for n in names if "." in n}
    if len(prefixes) == 1:
        p = prefixes.pop()
        if MODULE_PATH.match(p) and not GENERATED.match(names[0]) and p not in cv.names:
            return p
    return path if path and path not in cv.names else cv.unique(f"{path}.{kind}" if path else kind)


def _bias_after(cv, node, out: int):
    """The Add right after a MatMul by a weight that adds a weight vector of `out` elements (a
    linear's bias, which exporters write apart), or None."""
    users = cv.consumers.get(node.output[0], [])
    if len(users) != 1 or users[0].op_type != "Add":
        return None
    add = users[0]
    other = [i for i in add.input if i != node.output[0]]
    if len(other) != 1 or not weight(cv, other[0]) or cv.inits.shape(other[0]) != (out,):
        return None
    return add, other[0]


@rule("MatMul")
def _matmul(node, cv, path):
    a, b = node.input
    if weight(cv, b) and len(cv.inits.shape(b)) == 2:
        x = cv.tensor(a, path)
        i, o = cv.inits.shape(b)
        bias = _bias_after(cv, node, o)
        tensors = {"weight": b, **({"bias": bias[1]} if bias else {})}
        name = owner(cv, path, list(tensors.values()), "linear")
        y = cv.emit("linear", [x], {"in_features": i, "out_features": o, "bias": bias is not None,
                                    "weight_layout": "in_out"}, path, owner=name, tensors=tensors)
        if bias:
            cv.taken.add(id(bias[0]))
            cv.env[bias[0].output[0]] = y
        return y
    return cv.emit("matmul", [cv.tensor(a, path), cv.tensor(b, path)], {}, path)


@rule("Gemm")
def _gemm(node, cv, path):
    a, b = node.input[:2]
    c = node.input[2] if len(node.input) > 2 else ""
    alpha, beta = cv.attr(node, "alpha", 1.0), cv.attr(node, "beta", 1.0)
    if cv.attr(node, "transA", 0) or alpha != 1.0 or beta != 1.0 or not weight(cv, b):
        raise Refuse("a Gemm other than x @ W(ᵀ) + b (transA, alpha or beta other than 1, or B not a weight)")
    trans = cv.attr(node, "transB", 0)
    rows, cols = cv.inits.shape(b)
    o, i = (rows, cols) if trans else (cols, rows)
    has_bias = bool(c) and weight(cv, c) and cv.inits.shape(c) == (o,)
    if c and not has_bias:
        raise Refuse("a Gemm whose C is not a weight vector of the output's width")
    tensors = {"weight": b, **({"bias": c} if has_bias else {})}
    name = owner(cv, path, list(tensors.values()), "linear")
    return cv.emit("linear", [cv.tensor(a, path)], {"in_features": i, "out_features": o, "bias": has_bias,
                                                    **({} if trans else {"weight_layout": "in_out"})},
                   path, owner=name, tensors=tensors)


def _pairs(pads: list, n: int) -> list:
    """ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end] as one symmetric padding per dim."""
    pads = list(pads or [0] * (2 * n))
    begin, end = pads[:n], pads[n:]
    if begin != end:
        raise Refuse(f"asymmetric padding {pads} (PyTorch's layers pad both sides alike)")
    return begin


def _spatial(node, cv, n: int) -> dict:
    if cv.attr(node, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise Refuse(f"auto_pad {cv.attr(node, 'auto_pad')!r} (archgraph reads explicit pads)")
    return {"stride": list(cv.attr(node, "strides", [1] * n)), "padding": _pairs(cv.attr(node, "pads"), n),
            "dilation": list(cv.attr(node, "dilations", [1] * n))}


@rule("Conv", "ConvTranspose")
def _conv(node, cv, path):
    x, w = node.input[:2]
    b = node.input[2] if len(node.input) > 2 else ""
    if not weight(cv, w) or (b and not weight(cv, b)):
        raise Refuse("a convolution whose kernel or bias is computed, not a weight of the file")
    shape = cv.inits.shape(w)
    n = len(shape) - 2
    if not 1 <= n <= 3:
        raise Refuse(f"a {n}-D convolution")
    groups = cv.attr(node, "group", 1)
    hp = _spatial(node, cv, n)
    transposed = node.op_type == "ConvTranspose"
    if transposed:
        if cv.attr(node, "output_shape") is not None:
            raise Refuse("ConvTranspose with output_shape (give output_padding)")
        op, cin, cout = f"conv_transpose{n}d", shape[0], shape[1] * groups
        hp["output_padding"] = list(cv.attr(node, "output_padding", [0] * n))
    else:
        op, cin, cout = f"conv{n}d", shape[1] * groups, shape[0]
    tensors = {"weight": w, **({"bias": b} if b else {})}
    name = owner(cv, path, list(tensors.values()), op)
    return cv.emit(op, [cv.tensor(x, path)], {"in_channels": cin, "out_channels": cout,
                                              "kernel_size": list(shape[2:]), **hp, "groups": groups,
                                              "bias": bool(b)}, path, owner=name, tensors=tensors)


@rule("BatchNormalization")
def _batch_norm(node, cv, path):
    x, scale, bias, mean, var = node.input[:5]
    if cv.attr(node, "training_mode", 0) or len([o for o in node.output if o]) > 1:
        raise Refuse("batch norm in training mode")
    if not all(weight(cv, t) for t in (scale, bias, mean, var)):
        raise Refuse("a batch norm whose scale, bias or statistics are computed")
    c = cv.inits.shape(scale)[0]
    tensors = {"weight": scale, "bias": bias, "running_mean": mean, "running_var": var}
    name = owner(cv, path, [scale, bias], "batch_norm")
    return cv.emit("batch_norm", [cv.tensor(x, path)], {"num_features": c, "eps": _f32(cv.attr(node, "epsilon", 1e-5)),
                                                        "momentum": 1 - cv.attr(node, "momentum", 0.9)},
                   path, owner=name, tensors=tensors)


@rule("LayerNormalization")
def _layer_norm(node, cv, path):
    x = cv.tensor(node.input[0], path)
    scale = node.input[1]
    bias = node.input[2] if len(node.input) > 2 else ""
    axis = cv.attr(node, "axis", -1) % len(x.shape)
    if len([o for o in node.output if o]) > 1:
        raise Refuse("its mean and inverse deviation outputs are read")
    shape = list(x.shape[axis:])
    if not weight(cv, scale) or (bias and not weight(cv, bias)):
        raise Refuse("a layer norm whose scale or bias is computed")
    tensors = {"weight": scale, **({"bias": bias} if bias else {})}
    name = owner(cv, path, list(tensors.values()), "layer_norm")
    return cv.emit("layer_norm", [x], {"normalized_shape": shape, "eps": _f32(cv.attr(node, "epsilon", 1e-5)),
                                       "bias": bool(bias)}, path, owner=name, tensors=tensors)


@rule("RMSNormalization")
def _rms_norm(node, cv, path):
    x = cv.tensor(node.input[0], path)
    scale = node.input[1]
    if (cv.attr(node, "axis", -1) % len(x.shape)) != len(x.shape) - 1 or not weight(cv, scale):
        raise Refuse("an RMS norm over more than the last dim, or of a computed scale")
    name = owner(cv, path, [scale], "rms_norm")
    return cv.emit("rms_norm", [x], {"dim": x.shape[-1], "eps": _f32(cv.attr(node, "epsilon", 1e-5))}, path,
                   owner=name, tensors={"weight": scale})


@rule("GroupNormalization", "InstanceNormalization")
def _group_norm(node, cv, path):
    x = cv.tensor(node.input[0], path)
    scale, bias = node.input[1], node.input[2]
    c = x.shape[1]
    groups = cv.attr(node, "num_groups") if node.op_type == "GroupNormalization" else c
    if not weight(cv, scale) or not weight(cv, bias) or cv.inits.shape(scale) != (c,):
        raise Refuse("a group norm whose scale is not a weight per channel (opset 21's layout)")
    name = owner(cv, path, [scale, bias], "group_norm")
    return cv.emit("group_norm", [x], {"num_groups": groups, "num_channels": c,
                                       "eps": _f32(cv.attr(node, "epsilon", 1e-5))}, path,
                   owner=name, tensors={"weight": scale, "bias": bias})


@rule("Gather")
def _gather(node, cv, path):
    data, index = node.input
    axis = cv.attr(node, "axis", 0)
    i = cv.const(index)
    if weight(cv, data) and axis == 0 and len(cv.inits.shape(data)) == 2 and i is None:
        rows, dim = cv.inits.shape(data)
        name = owner(cv, path, [data], "embedding")
        cv.id_limit = min(cv.id_limit or rows, rows)
        return cv.emit("embedding", [cv.tensor(index, path)], {"num_embeddings": rows, "embedding_dim": dim},
                       path, owner=name, tensors={"weight": data}, dtype=cv.inits.dtype(data))
    x = cv.tensor(data, path)
    axis %= len(x.shape)
    if i is not None and i.ndim == 0 and i.dtype != object:
        return cv.emit("select", [x], {"dim": axis, "index": int(i)}, path)
    return cv.emit("index", [x, cv.tensor(index, path)], {"dims": [axis]}, path)

__all__ = ["TABLE", "Tensor"]
