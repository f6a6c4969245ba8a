"""The aten ops that hold tensors (a Linear's weight, a BatchNorm's statistics) and attention: each
as the archgraph op of the same meaning, its tensors named by `Out.tensors` (convolutions, pooling
and the native norms are in `spatial`)."""
from __future__ import annotations

import torch

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


@rule(aten.bilinear.default)
def _bilinear(n, c):
    x1, x2, weight = n.args[:3]
    bias = n.args[3] if len(n.args) > 3 else None
    out_f, in1, in2 = c.shape(weight)
    hp = {"in1_features": in1, "in2_features": in2, "out_features": out_f}
    if bias is None:
        hp["bias"] = False
    return Out("bilinear", [x1, x2], hp, tensors={"weight": weight, **({"bias": bias} if bias is not None else {})})


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
    if eps is None:  # nn.RMSNorm(dim): torch's default, the machine epsilon of the traced input's type
        eps = torch.finfo(c.dtype(x)).eps
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
    if n.target is not aten._native_batch_norm_legit_no_training.default and n.args[5] and mean is not None:
        # training=True: the output reads the batch's statistics (the running ones are only written, which
        # the program shows as writes of its own)
        return batch_statistics(c, x, weight, bias, float(eps))
    hp = {"num_features": c.shape(x)[1], "eps": float(eps), "momentum": float(momentum)}
    if weight is None:
        hp["affine"] = False
    if mean is None:
        hp["track_running_stats"] = False
    tensors = {k: v for k, v in (("weight", weight), ("bias", bias), ("running_mean", mean),
                                 ("running_var", var)) if v is not None}
    return Out("batch_norm", [x], hp, tensors=tensors)


def batch_statistics(c, x, weight, bias, eps: float) -> list:
    """A batch norm over the batch's own statistics, per channel (dim 1): (x - mean) / sqrt(var + eps)
    over every other dim, then the weight and bias along dim 1, as the ops that compute it (the
    channel count may be symbolic: InstanceNorm is a batch norm of [1, B·C, ...])."""
    rank = len(c.shape(x))
    dims = [0, *range(2, rank)]
    mean = Out("mean", [x], {"dim": dims, "keepdim": True})
    var = Out("var", [x], {"dim": dims, "keepdim": True, "correction": 0.0})
    centred = Out("sub", [x, mean])
    shifted = Out("add", [var], {"constant": eps})
    scale = Out("rsqrt", [shifted])
    nodes = [mean, var, centred, shifted, scale, Out("mul", [centred, scale])]
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            along = Out("reshape", [t], {"shape": [-1, *[1] * (rank - 2)]})
            nodes += [along, Out("mul" if name == "weight" else "add", [nodes[-1], along])]
    return nodes
