"""The aten ops of one value per element and the reductions, each as the archgraph op of the same
name and meaning: unary functions, activations with settings, the two-tensor functions (bitwise,
logical, atan2, remainders), `clamp`, and reductions over dims (`sum`, `var`, `max` with indices,
`vector_norm`, ...).  Registered into `aten.TABLE` on import."""
from __future__ import annotations

from .aten import DTYPES, Out, Refuse, aten, first_output_only, named, operands, rule, simple

for _name in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cosh", "erf", "expm1", "floor", "log10",
              "log1p", "log2", "sign", "sinh", "tan", "trunc", "bitwise_not", "logical_not", "isinf", "isnan",
              "hardsigmoid"):
    simple(_name, getattr(aten, _name).default)
simple("round", aten.round.default)
simple("sign", aten.sgn.default)
simple("logsigmoid", aten.log_sigmoid.default)
simple("activation", aten.hardswish.default, fn="hardswish")
simple("activation", aten.mish.default, fn="mish")
simple("hardtanh", aten.relu6.default, min_val=0.0, max_val=6.0)


def _settings(name: str, *keys: str):
    """An op whose hyperparameters are the aten op's arguments of the same names (as floats)."""
    def convert(n, c):
        a = named(n)
        return Out(name, [n.args[0]], {k: float(a[k]) for k in keys if a[k] is not None})
    return convert


rule(aten.elu.default)(_settings("elu", "alpha", "scale", "input_scale"))
rule(aten.hardtanh.default)(_settings("hardtanh", "min_val", "max_val"))
rule(aten.leaky_relu.default)(_settings("leaky_relu", "negative_slope"))
rule(aten.softplus.default)(_settings("softplus", "beta", "threshold"))
rule(aten.nan_to_num.default)(_settings("nan_to_num", "nan", "posinf", "neginf"))


@rule(aten.rrelu.default, aten.rrelu_with_noise_functional.default)
def _rrelu(n, c):
    """RReLU outside training: a leaky ReLU of slope (lower + upper) / 2 (in training it draws a random
    slope per element, which no spec computes)."""
    a = named(n)
    if a["training"]:
        raise Refuse("RReLU in training mode draws a random slope for every element")
    first_output_only(n, "the noise it drew")
    return Out("leaky_relu", [a["self"]], {"negative_slope": (float(a["lower"]) + float(a["upper"])) / 2})


@rule(aten.log_sigmoid_forward.default)
def _log_sigmoid_forward(n, c):
    first_output_only(n, "a buffer for the gradient")
    return Out("logsigmoid", [n.args[0]])


@rule(aten._log_softmax.default, aten.log_softmax.int)
def _log_softmax(n, c):
    return Out("log_softmax", [n.args[0]], {"dim": n.args[1]})


# -- two tensors -----------------------------------------------------------------------------------
for _name in ("atan2", "logical_and", "logical_or", "logical_xor"):
    rule(getattr(aten, _name).default)(lambda n, c, name=_name: Out(name, [n.args[0], n.args[1]]))


def _two(name: str):
    """A two-operand op of which either may be a number (see aten.operands)."""
    return lambda n, c: operands(n, c, name, n.args[0], n.args[1])


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    rule(getattr(aten, _name).Tensor, getattr(aten, _name).Scalar)(_two(_name))
rule(aten.fmod.Tensor, aten.fmod.Scalar)(_two("fmod"))
rule(aten.remainder.Tensor, aten.remainder.Scalar)(_two("remainder"))
rule(aten.floor_divide.default)(lambda n, c: _rounded(n, c, "floor"))


@rule(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(n, c):
    return _rounded(n, c, named(n)["rounding_mode"])


def _rounded(n, c, mode):
    nodes = operands(n, c, "div", n.args[0], n.args[1])
    if mode is not None:
        nodes[-1].hp["rounding_mode"] = mode
    return nodes


@rule(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default)
def _clamp(n, c):
    a = named(n)
    lo = a.get("min") if n.target is not aten.clamp_max.default else None
    hi = a.get("max") if n.target is not aten.clamp_min.default else None
    if lo is None and hi is None:
        return Out("identity", [n.args[0]])
    return Out("clamp", [n.args[0]], {k: float(c.number(v)) for k, v in (("min", lo), ("max", hi)) if v is not None})


@rule(aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor)
def _clamp_tensors(n, c):
    a = named(n)
    lo = a.get("min") if n.target is not aten.clamp_max.Tensor else None
    hi = a.get("max") if n.target is not aten.clamp_min.Tensor else None
    out, nodes = n.args[0], []
    for name, bound in (("maximum", lo), ("minimum", hi)):
        if bound is not None:
            out = Out(name, [out, bound])
            nodes.append(out)
    return nodes or Out("identity", [n.args[0]])


# -- reductions ------------------------------------------------------------------------------------
def _dims(dims):
    """A dim list as the op's `dim`: none (all dims) for none or [], one number, or the list."""
    if dims is None or isinstance(dims, int):
        return dims
    dims = list(dims)
    return None if not dims else dims[0] if len(dims) == 1 else dims


def _reduction(name: str, **fixed):
    def convert(n, c):
        a = named(n)
        x = n.args[0]
        nodes = []
        dtype = a.get("dtype")
        if dtype is not None and dtype != c.dtype(x):  # sum(x, dtype=torch.float32): the cast first
            if dtype not in DTYPES:
                raise Refuse(f"a reduction in {dtype}, an element type archgraph does not name")
            x = Out("cast", [x], {"dtype": DTYPES[dtype]})
            nodes.append(x)
        hp = dict(fixed)
        dims = _dims(a.get("dim"))
        if dims is not None or name in ("argmax", "argmin"):
            hp["dim"] = dims
        if a.get("keepdim"):
            hp["keepdim"] = True
        if "ord" in a:
            hp["ord"] = float(a["ord"])
        if "correction" in a or "unbiased" in a:
            correction = a.get("correction", None)
            hp["correction"] = float(1 if correction is None and a.get("unbiased", True) else correction or 0)
        if name in ("max", "min") and "dim" not in hp:
            name_all = "amax" if name == "max" else "amin"
            return [*nodes, Out(name_all, [x], hp)]
        return [*nodes, Out(name, [x], hp)]
    return convert


rule(aten.sum.dim_IntList, aten.sum.default)(_reduction("sum"))
rule(aten.mean.dim, aten.mean.default)(_reduction("mean"))
rule(aten.prod.dim_int, aten.prod.default)(_reduction("prod"))
rule(aten.amax.default)(_reduction("amax"))
rule(aten.amin.default)(_reduction("amin"))
rule(aten.argmax.default)(_reduction("argmax"))
rule(aten.argmin.default)(_reduction("argmin"))
rule(aten.any.default, aten.any.dim, aten.any.dims)(_reduction("any"))
rule(aten.all.default, aten.all.dim, aten.all.dims)(_reduction("all"))
rule(aten.var.correction, aten.var.dim, aten.var.default)(_reduction("var"))
rule(aten.std.correction, aten.std.dim, aten.std.default)(_reduction("std"))
rule(aten.logsumexp.default)(_reduction("logsumexp"))
rule(aten.linalg_vector_norm.default)(_reduction("vector_norm"))
rule(aten.max.dim, aten.max.default)(_reduction("max"))
rule(aten.min.dim, aten.min.default)(_reduction("min"))


@rule(aten.cumsum.default)
def _cumsum(n, c):
    a = named(n)
    if a.get("dtype") is not None and a["dtype"] != c.dtype(n.args[0]):
        if a["dtype"] not in DTYPES:
            raise Refuse(f"a running sum in {a['dtype']}, an element type archgraph does not name")
        cast = Out("cast", [n.args[0]], {"dtype": DTYPES[a["dtype"]]})
        return [cast, Out("cumsum", [cast], {"dim": a["dim"]})]
    return Out("cumsum", [n.args[0]], {"dim": a["dim"]})



@rule(aten.cumprod.default, aten.logcumsumexp.default)
def _scan(n, c):
    a = named(n)
    name = "cumprod" if n.target is aten.cumprod.default else "logcumsumexp"
    if a.get("dtype") is not None and a["dtype"] != c.dtype(n.args[0]):
        raise Refuse(f"a running product in {a['dtype']} (cast the input first)")
    return Out(name, [n.args[0]], {"dim": a["dim"]})


@rule(aten.native_dropout.default)
def _native_dropout(n, c):
    a = named(n)
    if a["train"] is not False and a["p"] > 0:
        raise Refuse(f"dropout applied while tracing (p={a['p']}, train=True): random numbers, which a spec "
                     "does not draw; trace the module in eval mode")
    first_output_only(n, "the mask of kept elements")
    return Out("identity", [n.args[0]])
