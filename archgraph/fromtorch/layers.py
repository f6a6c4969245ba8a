"""The aten ops that hold tensors (a Linear's weight, a BatchNorm's statistics), and attention and
pooling: each as the archgraph op of the same meaning, its tensors named by `Out.tensors`."""
from __future__ import annotations

from .aten import Out, Refuse, aten, rule

@rule(aten.scaled_dot_product_attention.default)
def _sdpa(n, c):
    q, k, v = n.args[:3]
    names = ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
    given = {**dict(zip(names, n.args[3:])), **n.kwargs}
    qs, ks = c.shape(q), c.shape(k)
    if len(qs) != 4:
        raise Refuse(f"query of rank {len(qs)} (archgraph reads [B, heads, S, d])")
    hp = {"heads": qs[1]}
    if ks[1] != qs[1]:
        hp["kv_heads"] = ks[1]
    if given.get("is_causal"):
        hp["causal"] = True
    if given.get("scale") is not None:
        hp["scale"] = float(given["scale"])
    if given.get("dropout_p"):
        hp["dropout"] = float(given["dropout_p"])
    mask = given.get("attn_mask")
    if mask is None:
        return Out("sdpa", [q, k, v], hp)
    shape = c.shape(mask)  # the scores' mask, computed by the ops before: [B|1, heads|1, S|1, T]
    if len(shape) == 4:
        return Out("sdpa", [q, k, v, mask], hp)
    four = Out("reshape", [mask], {"shape": [1] * (4 - len(shape)) + shape})
    return [four, Out("sdpa", [q, k, v, four], hp)]


@rule(aten.linear.default)
def _linear(n, c):
    x, weight = n.args[0], n.args[1]
    bias = n.args[2] if len(n.args) > 2 else None
    out_f, in_f = c.shape(weight)
    tensors = {"weight": weight, **({"bias": bias} if bias is not None else {})}
    hp = {"in_features": in_f, "out_features": out_f}
    if bias is None:
        hp["bias"] = False
    return Out("linear", [x], hp, tensors=tensors)


@rule(aten.embedding.default)
def _embedding(n, c):
    weight, ids = n.args[0], n.args[1]  # padding_idx (args[2]) changes only the gradient
    num, dim = c.shape(weight)
    return Out("embedding", [ids], {"num_embeddings": num, "embedding_dim": dim}, tensors={"weight": weight})


@rule(aten.layer_norm.default)
def _layer_norm(n, c):
    x, shape = n.args[0], list(n.args[1])
    weight = n.args[2] if len(n.args) > 2 else None
    bias = n.args[3] if len(n.args) > 3 else None
    eps = float(n.args[4]) if len(n.args) > 4 else 1e-5
    hp = {"normalized_shape": shape[0] if len(shape) == 1 else shape, "eps": eps}
    if weight is None:
        if bias is not None:
            raise Refuse("a bias without a weight")
        hp["elementwise_affine"] = False
    elif bias is None:
        hp["bias"] = False
    return Out("layer_norm", [x], hp, tensors={k: v for k, v in (("weight", weight), ("bias", bias)) if v is not None})


@rule(aten.rms_norm.default)
def _rms_norm(n, c):
    x, shape = n.args[0], list(n.args[1])
    weight = n.args[2] if len(n.args) > 2 else None
    eps = n.args[3] if len(n.args) > 3 else None
    if len(shape) != 1:
        raise Refuse(f"an RMS norm over several dims {shape}")
    if eps is None:
        raise Refuse("an RMS norm without eps (torch's default is the dtype's machine epsilon)")
    hp = {"dim": shape[0], "eps": float(eps)}
    if weight is None:
        hp["elementwise_affine"] = False
    return Out("rms_norm", [x], hp, tensors={"weight": weight} if weight is not None else {})


@rule(aten.group_norm.default)
def _group_norm(n, c):
    x, groups = n.args[0], n.args[1]
    weight = n.args[2] if len(n.args) > 2 else None
    bias = n.args[3] if len(n.args) > 3 else None
    eps = float(n.args[4]) if len(n.args) > 4 else 1e-5
    hp = {"num_groups": groups, "num_channels": c.shape(x)[1], "eps": eps}
    if weight is None:
        hp["affine"] = False
    return Out("group_norm", [x], hp, tensors={k: v for k, v in (("weight", weight), ("bias", bias)) if v is not None})


@rule(aten._native_batch_norm_legit_no_training.default, aten.batch_norm.default,
      aten._native_batch_norm_legit_functional.default)
def _batch_norm(n, c):
    x, weight, bias, mean, var = n.args[:5]
    if n.target is aten.batch_norm.default:
        momentum, eps = n.args[6], n.args[7]
    else:
        momentum, eps = n.args[-2], n.args[-1]
    hp = {"num_features": c.shape(x)[1], "eps": float(eps), "momentum": float(momentum)}
    if weight is None:
        hp["affine"] = False
    if mean is None:
        hp["track_running_stats"] = False
    tensors = {k: v for k, v in (("weight", weight), ("bias", bias), ("running_mean", mean),
                                 ("running_var", var)) if v is not None}
    return Out("batch_norm", [x], hp, tensors=tensors)


def _conv(name: str, dims: int):
    def convert(n, c):
        x, weight = n.args[0], n.args[1]
        bias = n.args[2] if len(n.args) > 2 else None
        rest = list(n.args[3:]) + [None] * 4
        stride, padding, dilation, groups = rest[:4]
        shape = c.shape(weight)
        hp = {"in_channels": shape[1] * (groups or 1), "out_channels": shape[0],
              "kernel_size": _one(shape[2:])}
        for key, value, default in (("stride", stride, 1), ("padding", padding, 0), ("dilation", dilation, 1)):
            if value is None:
                continue
            if isinstance(value, str):
                raise Refuse(f"padding '{value}'")
            v = _one(list(value)) if isinstance(value, (list, tuple)) else value
            if v != default:
                hp[key] = v
        if groups not in (None, 1):
            hp["groups"] = groups
        if bias is None:
            hp["bias"] = False
        return Out(name, [x], hp, tensors={"weight": weight, **({"bias": bias} if bias is not None else {})})
    return convert


rule(aten.conv1d.default)(_conv("conv1d", 1))
rule(aten.conv2d.default)(_conv("conv2d", 2))
rule(aten.conv3d.default)(_conv("conv3d", 3))


def _one(values):
    """A list of equal sizes as one number (kernel 3 for [3, 3]), else the list."""
    values = list(values)
    return values[0] if len(set(values)) == 1 else values


def _pool_hp(kernel, stride, padding, ceil, dilation=None) -> dict:
    """A pooling's hyperparameters, defaults left out (an empty stride is the kernel's)."""
    hp = {"kernel_size": _one(kernel)}
    if stride:
        hp["stride"] = _one(stride)
    if padding and _one(padding) != 0:
        hp["padding"] = _one(padding)
    if dilation and _one(dilation) != 1:
        hp["dilation"] = _one(dilation)
    if ceil:
        hp["ceil_mode"] = True
    return hp


@rule(aten.max_pool2d.default, aten.max_pool1d.default)
def _max_pool(n, c):
    name = "max_pool2d" if n.target is aten.max_pool2d.default else "max_pool1d"
    kernel, stride, padding, dilation, ceil = (list(n.args[1:]) + [None] * 5)[:5]
    return Out(name, [n.args[0]], _pool_hp(kernel, stride, padding, ceil, dilation))


@rule(aten.avg_pool2d.default, aten.avg_pool1d.default)
def _avg_pool(n, c):
    name = "avg_pool2d" if n.target is aten.avg_pool2d.default else "avg_pool1d"
    kernel, stride, padding, ceil, count_include_pad, divisor = (list(n.args[1:]) + [None] * 6)[:6]
    if count_include_pad is False or divisor is not None:
        raise Refuse("count_include_pad=False or divisor_override")
    return Out(name, [n.args[0]], _pool_hp(kernel, stride, padding, ceil))


@rule(aten.adaptive_avg_pool2d.default, aten.adaptive_avg_pool1d.default)
def _adaptive(n, c):
    name = "adaptive_avg_pool2d" if n.target is aten.adaptive_avg_pool2d.default else "adaptive_avg_pool1d"
    return Out(name, [n.args[0]], {"output_size": _one(n.args[1])})
