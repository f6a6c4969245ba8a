"""ONNX operators that move, index, pool or resample as archgraph ops (`reshape`, `permute`,
`slice`, `concat`, `split`, `expand`, `where`, `cast`, poolings, `pad`, `interpolate`, `einsum`,
...).  Sizes they take from constants may be symbolic (`reshape: [B, S, 4, 16]`)."""
from __future__ import annotations

import numpy as np

from ..dims import Poly, equal, fmt, prod, provably_le
from ..errors import InconclusiveDimError
from .values import Refuse, Tensor, numpy_dtype
from .read import ELEMENTS
from .table import rule

INT_BIG = 2 ** 62


def _const(cv, name: str, what: str):
    c = cv.const(name) if name else None
    if c is None:
        raise Refuse(f"its {what} is computed from tensor values (archgraph takes it as a number)")
    return [x if isinstance(x, Poly) else int(x) for x in c.reshape(-1)]


@rule("Reshape")
def _reshape(node, cv, path):
    x = cv.tensor(node.input[0], path)
    target = _const(cv, node.input[1], "target shape")
    allowzero = cv.attr(node, "allowzero", 0)
    out = []
    for i, d in enumerate(target):
        if not isinstance(d, Poly) and d == 0:
            if allowzero:
                raise Refuse("a reshape to a size 0 (allowzero)")
            d = x.shape[i]
        out.append(d)
    return cv.emit("reshape", [x], {"shape": out}, path)


@rule("Flatten")
def _flatten(node, cv, path):
    x = cv.tensor(node.input[0], path)
    axis = cv.attr(node, "axis", 1) % (len(x.shape) + 1) if x.shape else 0
    return cv.emit("reshape", [x], {"shape": [prod(x.shape[:axis]), prod(x.shape[axis:])]}, path, "flatten")


@rule("Transpose")
def _transpose(node, cv, path):
    x = cv.tensor(node.input[0], path)
    perm = list(cv.attr(node, "perm", None) or reversed(range(len(x.shape))))
    moved = [i for i, p in enumerate(perm) if i != p]
    if len(moved) == 2:
        return cv.emit("transpose", [x], {"dim0": moved[0], "dim1": moved[1]}, path)
    if not moved:
        return x
    return cv.emit("permute", [x], {"dims": perm}, path)


@rule("Slice")
def _slice(node, cv, path):
    x = cv.tensor(node.input[0], path)
    starts, ends = _const(cv, node.input[1], "starts"), _const(cv, node.input[2], "ends")
    axes = _const(cv, node.input[3], "axes") if len(node.input) > 3 and node.input[3] else list(range(len(starts)))
    steps = _const(cv, node.input[4], "steps") if len(node.input) > 4 and node.input[4] else [1] * len(starts)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= len(x.shape)
        if st < 0:
            raise Refuse("a slice with a negative step (PyTorch's slices step forwards)")
        end = None if not isinstance(e, Poly) and e >= INT_BIG else e
        _bound(cv, end, x.shape[a])
        if not isinstance(s, Poly) and s == 0 and (end is None or same(end, x.shape[a])):
            if st == 1:
                continue
        x = cv.emit("slice", [x], {"dim": a, "start": s, "end": end, "step": st}, path)
    return x


def _bound(cv, end, size) -> None:
    """A slice of a table of `size` (64 positions) to a symbolic length S reads S <= 64: the spec says so."""
    if not isinstance(end, Poly) or isinstance(size, Poly) or len(end.terms) != 1:
        return
    name = fmt(end)
    if name.isidentifier() and name in cv.sizes.values():
        try:
            if provably_le(end, size):
                return
        except InconclusiveDimError:
            pass
        cv.bounds[name] = min(size, cv.bounds.get(name, size))


@rule("GatherND")
def _gather_nd(node, cv, path):
    """x[i[..., 0], i[..., 1], ...]: the index's last dim split into one index tensor per dim of x."""
    if cv.attr(node, "batch_dims", 0):
        raise Refuse("GatherND with batch_dims (PyTorch's indexing has none)")
    x, index = cv.tensor(node.input[0], path), cv.tensor(node.input[1], path)
    k = index.shape[-1]
    if isinstance(k, Poly):
        raise Refuse("an index of a symbolic depth")
    parts = [cv.emit("select", [index], {"dim": len(index.shape) - 1, "index": j}, path) for j in range(k)]
    return cv.emit("index", [x, *parts], {"dims": list(range(k))}, path)


@rule("Concat")
def _concat(node, cv, path):
    parts = [cv.tensor(i, path) for i in node.input]
    if len(parts) == 1:
        return parts[0]
    return cv.emit("concat", parts, {"dim": cv.attr(node, "axis")}, path)


@rule("Split")
def _split(node, cv, path):
    x = cv.tensor(node.input[0], path)
    axis = cv.attr(node, "axis", 0) % len(x.shape)
    n = len(node.output)
    if len(node.input) > 1 and node.input[1]:
        sizes = _const(cv, node.input[1], "split sizes")
    else:
        total = x.shape[axis]
        if isinstance(total, Poly):
            raise Refuse("a split of a symbolic size into equal parts")
        sizes = [-(-total // n)] * (n - 1)
        sizes.append(total - sum(sizes))
    out = cv.emit("split", [x], {"dim": axis, "sizes": sizes}, path)
    return out if isinstance(out, list) else [out]


@rule("Squeeze", "Unsqueeze")
def _squeeze(node, cv, path):
    x = cv.tensor(node.input[0], path)
    if len(node.input) > 1 and node.input[1]:
        axes = _const(cv, node.input[1], "axes")
    else:
        axes = list(cv.attr(node, "axes", []) or [])
    if node.op_type == "Squeeze":
        if not axes:
            axes = [i for i, d in enumerate(x.shape) if not isinstance(d, Poly) and d == 1]
        for a in sorted((a % len(x.shape) for a in axes), reverse=True):
            x = cv.emit("squeeze", [x], {"dim": a}, path)
        return x
    rank = len(x.shape) + len(axes)
    for a in sorted(a % rank for a in axes):
        x = cv.emit("unsqueeze", [x], {"dim": a}, path)
    return x


@rule("Expand")
def _expand(node, cv, path):
    shape = _const(cv, node.input[1], "shape")
    src = cv.value(node.input[0])
    if isinstance(src, np.ndarray) and src.size == 1 and src.dtype != object:
        out = _broadcast(list(src.shape), shape)
        return cv.filled(out, src.reshape(-1)[0], numpy_dtype(src.dtype), path)
    x = cv.tensor(node.input[0], path)
    out = _broadcast(list(x.shape), shape)
    if len(out) == len(x.shape) and all(same(a, b) for a, b in zip(out, x.shape)):
        return x
    return cv.emit("expand", [x], {"sizes": out}, path)


def _broadcast(a: list, b: list) -> list:
    """ONNX's Expand: the shapes broadcast both ways (a 1 takes the other's size)."""
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    return [y if not isinstance(x, Poly) and x == 1 else x for x, y in zip(a, b)]


def same(a, b) -> bool:
    """Whether two sizes are known equal (an undecided pair is not)."""
    try:
        return equal(a, b)
    except InconclusiveDimError:
        return False


@rule("Tile")
def _tile(node, cv, path):
    return cv.emit("repeat", [cv.tensor(node.input[0], path)], {"repeats": _const(cv, node.input[1], "repeats")}, path)


@rule("Where")
def _where(node, cv, path):
    c = cv.tensor(node.input[0], path)
    x = cv.value(node.input[1])
    y = cv.value(node.input[2])
    kind = next((v.dtype for v in (x, y) if isinstance(v, Tensor)), None)
    xs = cv.tensor(node.input[1], path, kind) if not isinstance(x, Tensor) else x
    ys = cv.tensor(node.input[2], path, kind) if not isinstance(y, Tensor) else y
    return cv.emit("where", [c, xs, ys], {}, path, dtype=xs.dtype)


@rule("Cast", "CastLike")
def _cast(node, cv, path):
    x = cv.tensor(node.input[0], path)
    if node.op_type == "Cast":
        to = cv.attr(node, "to")
        if to not in ELEMENTS:
            raise Refuse(f"a cast to ONNX element type {to}")
        kind = ELEMENTS[to][1]
    else:
        like = cv.value(node.input[1])
        kind = like.dtype if isinstance(like, Tensor) else numpy_dtype(like.dtype)
    if kind == x.dtype:
        return x
    return cv.emit("cast", [x], {"dtype": kind}, path, dtype=kind)


@rule("Range")
def _range(node, cv, path):
    start, end, step = (_const(cv, i, "bounds")[0] for i in node.input)
    kind = numpy_dtype(cv.const(node.input[0]).dtype) if cv.const(node.input[0]).dtype != object else "int64"
    return cv.emit("arange", [], {"start": start, "end": end, "step": step, "dtype": kind}, path, dtype=kind)


@rule("ConstantOfShape")
def _constant_of_shape(node, cv, path):
    from onnx import numpy_helper
    shape = _const(cv, node.input[0], "shape")
    a = cv.attr(node, "value")
    value = numpy_helper.to_array(a).reshape(-1) if a is not None else np.zeros(1, np.float32)
    kind = numpy_dtype(value.dtype)
    return cv.filled(shape, value[0], kind, path)


@rule("Trilu")
def _trilu(node, cv, path):
    k = _const(cv, node.input[1], "diagonal")[0] if len(node.input) > 1 and node.input[1] else 0
    op = "triu" if cv.attr(node, "upper", 1) else "tril"
    return cv.emit(op, [cv.tensor(node.input[0], path)], {"diagonal": k}, path)


@rule("CumSum")
def _cumsum(node, cv, path):
    if cv.attr(node, "exclusive", 0) or cv.attr(node, "reverse", 0):
        raise Refuse("an exclusive or reversed cumulative sum")
    return cv.emit("cumsum", [cv.tensor(node.input[0], path)], {"dim": _const(cv, node.input[1], "axis")[0]}, path)


@rule("Einsum")
def _einsum(node, cv, path):
    eq = cv.attr(node, "equation")
    eq = eq.decode() if isinstance(eq, bytes) else eq
    return cv.emit("einsum", [cv.tensor(i, path) for i in node.input], {"equation": eq}, path)


@rule("TopK")
def _topk(node, cv, path):
    k = _const(cv, node.input[1], "k")[0]
    out = cv.emit("topk", [cv.tensor(node.input[0], path)], {"k": k, "dim": cv.attr(node, "axis", -1),
                                                               "largest": bool(cv.attr(node, "largest", 1)),
                                                               "sorted": bool(cv.attr(node, "sorted", 1))}, path)
    out[1].dtype = "int64"
    return out


@rule("GatherElements")
def _gather_elements(node, cv, path):
    return cv.emit("gather", [cv.tensor(node.input[0], path), cv.tensor(node.input[1], path)],
                   {"dim": cv.attr(node, "axis", 0)}, path)


@rule("ScatterElements")
def _scatter_elements(node, cv, path):
    reduction = cv.attr(node, "reduction", b"none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    ins = [cv.tensor(i, path) for i in node.input]
    if reduction == "none":
        return cv.emit("scatter", ins, {"dim": cv.attr(node, "axis", 0)}, path)
    return cv.emit("scatter_reduce", ins, {"dim": cv.attr(node, "axis", 0), "reduce":
                                           {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}[reduction],
                                           "include_self": True}, path)


@rule("MaxPool", "AveragePool")
def _pool(node, cv, path):
    x = cv.tensor(node.input[0], path)
    n = len(x.shape) - 2
    if node.op_type == "MaxPool" and len([o for o in node.output if o]) > 1:
        raise Refuse("its indices output is read")
    if cv.attr(node, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise Refuse(f"auto_pad {cv.attr(node, 'auto_pad')!r} (archgraph reads explicit pads)")
    kernel = list(cv.attr(node, "kernel_shape"))
    hp = {"kernel_size": kernel, "stride": list(cv.attr(node, "strides", kernel)),
          "padding": _pads(cv.attr(node, "pads"), n), "ceil_mode": bool(cv.attr(node, "ceil_mode", 0))}
    if node.op_type == "MaxPool":
        hp["dilation"] = list(cv.attr(node, "dilations", [1] * n))
        return cv.emit(f"max_pool{n}d", [x], hp, path)
    if cv.attr(node, "dilations") and any(d != 1 for d in cv.attr(node, "dilations")):
        raise Refuse("a dilated average pooling")
    hp["count_include_pad"] = bool(cv.attr(node, "count_include_pad", 0))
    return cv.emit(f"avg_pool{n}d", [x], hp, path)


def _pads(pads, n):
    pads = list(pads or [0] * (2 * n))
    if pads[:n] != pads[n:]:
        raise Refuse(f"asymmetric padding {pads}")
    return pads[:n]


@rule("GlobalAveragePool", "GlobalMaxPool")
def _global(node, cv, path):
    x = cv.tensor(node.input[0], path)
    op = "mean" if node.op_type == "GlobalAveragePool" else "amax"
    return cv.emit(op, [x], {"dim": list(range(2, len(x.shape))), "keepdim": True}, path)


@rule("Pad")
def _pad(node, cv, path):
    x = cv.tensor(node.input[0], path)
    pads = _const(cv, node.input[1], "pads")
    value = float(cv.const(node.input[2]).reshape(-1)[0]) if len(node.input) > 2 and node.input[2] else 0.0
    n = len(x.shape)
    axes = _const(cv, node.input[3], "axes") if len(node.input) > 3 and node.input[3] else list(range(n))
    k = len(axes)
    per = {a % n: (pads[i], pads[i + k]) for i, a in enumerate(axes)}
    last = min(per)
    torch_pad = []
    for a in range(n - 1, last - 1, -1):
        torch_pad += list(per.get(a, (0, 0)))
    mode = cv.attr(node, "mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    mode = {"edge": "replicate", "wrap": "circular"}.get(mode, mode)
    return cv.emit("pad", [x], {"pad": torch_pad, "mode": mode, **({"value": value} if mode == "constant" else {})},
                   path)


@rule("Resize")
def _resize(node, cv, path):
    x = cv.tensor(node.input[0], path)
    mode = cv.attr(node, "mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    ct = cv.attr(node, "coordinate_transformation_mode", b"half_pixel")
    ct = ct.decode() if isinstance(ct, bytes) else ct
    n = len(x.shape) - 2
    sizes = _const(cv, node.input[3], "sizes")[2:] if len(node.input) > 3 and node.input[3] else None
    scales = cv.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    hp: dict = {}
    if sizes is not None:
        hp["size"] = sizes
    elif scales is not None and scales.size:
        hp["scale_factor"] = [float(s) for s in scales.reshape(-1)[2:]]
    else:
        raise Refuse("a resize without sizes or scales")
    if mode == "nearest":
        nearest = cv.attr(node, "nearest_mode", b"round_prefer_floor")
        nearest = nearest.decode() if isinstance(nearest, bytes) else nearest
        if (ct, nearest) == ("asymmetric", "floor"):
            hp["mode"] = "nearest"
        elif (ct, nearest) == ("half_pixel", "round_prefer_ceil"):
            hp["mode"] = "nearest-exact"
        else:
            raise Refuse(f"nearest resizing with {ct} coordinates and {nearest} rounding (PyTorch's are "
                         "asymmetric/floor and half_pixel/round_prefer_ceil)")
    elif mode in ("linear", "cubic"):
        if ct not in ("align_corners", "half_pixel", "pytorch_half_pixel"):
            raise Refuse(f"{mode} resizing with {ct} coordinates")
        hp["mode"] = {("linear", 1): "linear", ("linear", 2): "bilinear", ("linear", 3): "trilinear",
                      ("cubic", 2): "bicubic"}.get((mode, n))
        if hp["mode"] is None:
            raise Refuse(f"{mode} resizing of {n} dims")
        hp["align_corners"] = ct == "align_corners"
    else:
        raise Refuse(f"resizing mode {mode}")
    return cv.emit("interpolate", [x], hp, path)
