"""The aten ops over [B, C, *spatial]: convolutions (plain and transposed, through `aten.convolution`
too), pooling, padding, resampling, and the native norms that return their statistics beside the
output (`native_layer_norm`, `native_group_norm`, a batch norm over the batch's own statistics),
each as the archgraph op of the same meaning."""
from __future__ import annotations

from .aten import Out, Refuse, aten, first_output_only, named, rule
from .layers import _layer_norm, batch_statistics


def _one(values):
    """A list of equal sizes as one number (kernel 3 for [3, 3]), else the list."""
    values = list(values)
    return values[0] if len(set(values)) == 1 else values


# -- convolutions ----------------------------------------------------------------------------------
CONV = {1: "conv1d", 2: "conv2d", 3: "conv3d"}
TRANSPOSED = {1: "conv_transpose1d", 2: "conv_transpose2d", 3: "conv_transpose3d"}


def _conv_out(n, c, a: dict, transposed: bool) -> Out:
    """The convolution of `a` (the aten op's arguments by name) with its module's weight and bias."""
    x, weight, bias, groups = a["input"], a["weight"], a.get("bias"), a.get("groups") or 1
    shape = c.shape(weight)
    rank = len(shape) - 2
    if rank not in CONV:
        raise Refuse(f"a convolution over {rank} spatial dims")
    if transposed:  # weight [in, out / groups, *kernel]
        hp = {"in_channels": shape[0], "out_channels": shape[1] * groups}
    else:  # weight [out, in / groups, *kernel]
        hp = {"in_channels": shape[1] * groups, "out_channels": shape[0]}
    hp["kernel_size"] = _one(shape[2:])
    settings = [("stride", 1), ("padding", 0), ("dilation", 1)] + ([("output_padding", 0)] if transposed else [])
    for key, default in settings:
        value = a.get(key)
        if value is None or value == "valid" or value == []:
            continue
        if isinstance(value, str):  # padding "same"
            if transposed:
                raise Refuse(f"padding '{value}' of a transposed convolution")
            hp[key] = value
            continue
        v = _one([c.size(d) for d in value]) if isinstance(value, (list, tuple)) else c.size(value)
        if v != default:
            hp[key] = v
    if groups != 1:
        hp["groups"] = groups
    if bias is None:
        hp["bias"] = False
    name = (TRANSPOSED if transposed else CONV)[rank]
    return Out(name, [x], hp, tensors={"weight": weight, **({"bias": bias} if bias is not None else {})})


@rule(aten.conv1d.default, aten.conv2d.default, aten.conv3d.default, aten.conv1d.padding, aten.conv2d.padding,
      aten.conv3d.padding)
def _conv(n, c):
    return _conv_out(n, c, named(n), transposed=False)


@rule(aten.conv_transpose1d.default, aten.conv_transpose2d.input, aten.conv_transpose3d.input)
def _conv_transpose(n, c):
    return _conv_out(n, c, named(n), transposed=True)


@rule(aten.convolution.default)
def _convolution(n, c):
    a = named(n)
    if not a["transposed"] and any(p for p in a["output_padding"]):
        raise Refuse(f"output_padding {list(a['output_padding'])} of a convolution that is not transposed")
    return _conv_out(n, c, a, transposed=bool(a["transposed"]))


# -- pooling ---------------------------------------------------------------------------------------
def _pool_hp(a: dict) -> dict:
    """A pooling's hyperparameters, defaults left out (an empty stride is the kernel's)."""
    hp = {"kernel_size": _one(a["kernel_size"])}
    if a.get("stride"):
        hp["stride"] = _one(a["stride"])
    if a.get("padding") and _one(a["padding"]) != 0:
        hp["padding"] = _one(a["padding"])
    if a.get("dilation") and _one(a["dilation"]) != 1:
        hp["dilation"] = _one(a["dilation"])
    if a.get("ceil_mode"):
        hp["ceil_mode"] = True
    if a.get("count_include_pad") is False:
        hp["count_include_pad"] = False
    if a.get("divisor_override") is not None:
        hp["divisor_override"] = a["divisor_override"]
    return hp


MAX_POOLS = {aten.max_pool1d.default: "max_pool1d", aten.max_pool2d.default: "max_pool2d",
             aten.max_pool3d.default: "max_pool3d", aten.max_pool2d_with_indices.default: "max_pool2d",
             aten.max_pool3d_with_indices.default: "max_pool3d"}
AVG_POOLS = {aten.avg_pool1d.default: "avg_pool1d", aten.avg_pool2d.default: "avg_pool2d",
             aten.avg_pool3d.default: "avg_pool3d"}
ADAPTIVE = {aten.adaptive_avg_pool1d.default: "adaptive_avg_pool1d",
            aten.adaptive_avg_pool2d.default: "adaptive_avg_pool2d",
            aten._adaptive_avg_pool2d.default: "adaptive_avg_pool2d",
            aten.adaptive_avg_pool3d.default: "adaptive_avg_pool3d",
            aten._adaptive_avg_pool3d.default: "adaptive_avg_pool3d"}


@rule(*MAX_POOLS)
def _max_pool(n, c):
    first_output_only(n, "the index of each window's maximum")
    return Out(MAX_POOLS[n.target], [n.args[0]], _pool_hp(named(n)))


@rule(*AVG_POOLS)
def _avg_pool(n, c):
    return Out(AVG_POOLS[n.target], [n.args[0]], _pool_hp(named(n)))


@rule(*ADAPTIVE)
def _adaptive(n, c):
    return Out(ADAPTIVE[n.target], [n.args[0]], {"output_size": _one(c.size(d) for d in n.args[1])})


# -- padding ---------------------------------------------------------------------------------------
PADS = {aten.reflection_pad1d.default: "reflect", aten.reflection_pad2d.default: "reflect",
        aten.reflection_pad3d.default: "reflect", aten.replication_pad1d.default: "replicate",
        aten.replication_pad2d.default: "replicate", aten.replication_pad3d.default: "replicate"}


@rule(aten.constant_pad_nd.default, aten.pad.default, *PADS)
def _pad(n, c):
    a = named(n)
    pads = [c.size(p) for p in (a.get("pad") or a.get("padding"))]
    mode = PADS.get(n.target, a.get("mode") or "constant")
    hp = {"pad": pads}
    if mode != "constant":
        hp["mode"] = mode
    elif a.get("value"):
        hp["value"] = float(c.number(a["value"]))
    return Out("pad", [n.args[0]], hp)


# -- resampling ------------------------------------------------------------------------------------
UPSAMPLE = {aten.upsample_nearest1d.vec: "nearest", aten.upsample_nearest2d.vec: "nearest",
            aten.upsample_nearest3d.vec: "nearest", aten._upsample_nearest_exact1d.vec: "nearest-exact",
            aten._upsample_nearest_exact2d.vec: "nearest-exact", aten._upsample_nearest_exact3d.vec: "nearest-exact",
            aten.upsample_linear1d.vec: "linear", aten.upsample_bilinear2d.vec: "bilinear",
            aten.upsample_bicubic2d.vec: "bicubic", aten.upsample_trilinear3d.vec: "trilinear",
            aten._upsample_bilinear2d_aa.vec: "bilinear", aten._upsample_bicubic2d_aa.vec: "bicubic"}
ANTIALIASED = (aten._upsample_bilinear2d_aa.vec, aten._upsample_bicubic2d_aa.vec)  # F.interpolate(antialias=True)


@rule(*UPSAMPLE)
def _upsample(n, c):
    """F.interpolate: by the factors where the call gave them (torch maps output pixels to input ones by
    the factor then, not by the sizes' ratio), else to the sizes."""
    a = named(n)
    if a["scale_factors"] is not None:
        factors = [float(f) for f in a["scale_factors"]]
        hp = {"scale_factor": factors[0] if len(set(factors)) == 1 else factors}
    else:
        hp = {"size": [c.size(s) for s in a["output_size"]]}
    hp["mode"] = UPSAMPLE[n.target]
    if a.get("align_corners"):
        hp["align_corners"] = True
    if n.target in ANTIALIASED:
        hp["antialias"] = True
    return Out("interpolate", [n.args[0]], hp)


# -- the native norms: (output, mean, 1/std), of which a spec computes the output ----------------------
@rule(aten.native_layer_norm.default)
def _native_layer_norm(n, c):
    first_output_only(n, "the mean and 1/std the gradient reads")
    return _layer_norm(n, c)


@rule(aten.native_group_norm.default)
def _native_group_norm(n, c):
    first_output_only(n, "the mean and 1/std the gradient reads")
    a = named(n)
    weight, bias = a["weight"], a["bias"]
    hp = {"num_groups": a["group"], "num_channels": c.size(a["C"]), "eps": float(a["eps"])}
    if weight is None:
        if bias is not None:
            raise Refuse("a bias without a weight")
        hp["affine"] = False
    tensors = {k: v for k, v in (("weight", weight), ("bias", bias)) if v is not None}
    return Out("group_norm", [a["input"]], hp, tensors=tensors)


@rule(aten._native_batch_norm_legit.no_stats)
def _batch_statistics(n, c):
    """A batch norm without running statistics (F.batch_norm(x, None, None, training=True), and
    InstanceNorm as a batch norm of [1, B·C, ...]): over the batch's own."""
    first_output_only(n, "the mean and 1/std the gradient reads")
    a = named(n)
    return batch_statistics(c, a["input"], a["weight"], a["bias"], float(a["eps"]))


@rule(aten.adaptive_max_pool1d.default, aten.adaptive_max_pool2d.default)
def _adaptive_max(n, c):
    first_output_only(n, "the index of each window's maximum")
    name = "adaptive_max_pool1d" if n.target is aten.adaptive_max_pool1d.default else "adaptive_max_pool2d"
    return Out(name, [n.args[0]], {"output_size": _one(c.size(d) for d in n.args[1])})
