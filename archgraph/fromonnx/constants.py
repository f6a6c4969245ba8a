"""Nodes whose value is known when the file is read: constants, and the sizes exporters compute
from shapes (`Shape -> Gather -> Unsqueeze -> Concat`), evaluated with numpy over arrays whose
elements may be symbolic sizes (`Poly`), so a reshape's target is an expression of B and S, not the
export's numbers.  `evaluate` returns None where the spec must compute the node."""
from __future__ import annotations

import numpy as np

from ..dims import Poly, equal, floor_div, is_symbolic, prod
from .values import Refuse, Tensor, numpy_dtype
from .read import ELEMENTS

MAX_FOLDED = 1 << 22  # elements of a constant computed here; a larger one is the spec's to compute


def evaluate(node, cv):
    """The node's outputs as constants, or None."""
    op = node.op_type
    if op == "Constant":
        return [_constant(node, cv)]
    if op in ("Shape", "Size"):
        x = cv.value(node.input[0])
        shape = x.shape if isinstance(x, (Tensor, np.ndarray)) else None
        if shape is None:
            return None
        if op == "Size":
            return [np.array(prod(shape) if isinstance(x, Tensor) else x.size, dtype=object)]
        start, end = cv.attr(node, "start", 0), cv.attr(node, "end", None)
        return [_settled(np.array(list(shape)[start:end], dtype=object).reshape(-1))]
    if op not in FOLD:
        return None
    args = []
    for name in node.input:
        if name == "":
            args.append(None)
            continue
        c = cv.const(name)
        if c is None:
            return None
        args.append(c)
    try:
        out = FOLD[op](node, cv, *args)
    except NotImplementedError:
        return None
    outs = [o if isinstance(o, np.ndarray) else np.array(o, dtype=object if isinstance(o, Poly) else None)
            for o in (out if isinstance(out, list) else [out])]
    if any(o.size > MAX_FOLDED for o in outs):
        return None
    return [_settled(o) for o in outs]


def _settled(a: np.ndarray) -> np.ndarray:
    """An array of sizes none of which is symbolic as int64 (a Shape of a static tensor)."""
    if a.dtype == object and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in a.reshape(-1)):
        return a.astype(np.int64)
    return a


def _constant(node, cv):
    from onnx import numpy_helper
    a = node.attribute[0]
    if a.name == "value":
        if a.t.data_type not in ELEMENTS:
            raise Refuse(f"a constant of ONNX element type {a.t.data_type}")
        cv.inits.check(a.t)
        return numpy_helper.to_array(a.t)
    if a.name in ("value_float", "value_int"):
        return np.array(a.f if a.name == "value_float" else a.i, dtype=np.float32 if a.name == "value_float" else np.int64)
    if a.name in ("value_floats", "value_ints"):
        return np.array(list(a.floats if a.name == "value_floats" else a.ints),
                        dtype=np.float32 if a.name == "value_floats" else np.int64)
    raise Refuse(f"a constant given as {a.name}")


def _symbolic(*arrays) -> bool:
    return any(a is not None and a.dtype == object for a in arrays)


def _ints(a) -> list:
    return [int(x) if not isinstance(x, Poly) else x for x in np.asarray(a).reshape(-1)]


def _binary(fn):
    def run(node, cv, a, b):
        if _symbolic(a, b):
            return np.vectorize(fn, otypes=[object])(a.astype(object), b.astype(object))
        return np.asarray(fn(a, b)).astype(np.result_type(a, b)) if node.op_type != "Div" else _div(a, b)
    return run


def _div(a, b):
    if np.issubdtype(np.result_type(a, b), np.integer):
        return np.trunc(a / b).astype(np.result_type(a, b))
    return (a / b).astype(np.result_type(a, b))


def _sym_div(a, b):
    if isinstance(a, Poly) or isinstance(b, Poly):
        if isinstance(b, Poly):
            raise NotImplementedError
        return floor_div(a, int(b))
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    return int(a / b)


def _cmp(fn):
    def run(node, cv, a, b):
        if _symbolic(a, b):
            return np.vectorize(lambda x, y: _decide(fn, x, y), otypes=[bool])(a.astype(object), b.astype(object))
        return np.asarray(fn(a, b))
    return run


def _decide(fn, x, y):
    if fn is np.equal:
        return equal(x, y)
    if is_symbolic(x) or is_symbolic(y):
        raise NotImplementedError
    return bool(fn(x, y))


def _gather(node, cv, data, index):
    return np.take(data, index.astype(np.int64), axis=cv.attr(node, "axis", 0))


def _concat(node, cv, *parts):
    kind = object if _symbolic(*parts) else None
    return np.concatenate([p.astype(kind) if kind else p for p in parts], axis=cv.attr(node, "axis"))


def _axes(node, cv, given):
    return _ints(given) if given is not None else list(cv.attr(node, "axes", []) or [])


def _unsqueeze(node, cv, x, axes=None):
    out = x
    rank = x.ndim + len(_axes(node, cv, axes))
    for a in sorted(a % rank for a in _axes(node, cv, axes)):
        out = np.expand_dims(out, a)
    return out


def _squeeze(node, cv, x, axes=None):
    axes = _axes(node, cv, axes)
    return np.squeeze(x, axis=tuple(a % x.ndim for a in axes)) if axes else np.squeeze(x)


def _slice(node, cv, x, starts, ends, axes=None, steps=None):
    if _symbolic(starts, ends, steps):
        raise NotImplementedError
    axes = _ints(axes) if axes is not None else list(range(len(starts)))
    steps = _ints(steps) if steps is not None else [1] * len(axes)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(_ints(starts), _ints(ends), axes, steps):
        index[a] = slice(s, e if abs(e) < 2 ** 62 else None, st)
    return x[tuple(index)]


def _cast(node, cv, x, like=None):
    to = cv.attr(node, "to") if like is None else None
    kind = ELEMENTS[to][0] if to is not None else like.dtype
    if x.dtype == object:
        if np.issubdtype(np.dtype(kind), np.integer):
            return x
        raise NotImplementedError
    return x.astype(kind)


def _reshape(node, cv, x, shape):
    target = _ints(shape)
    if any(isinstance(d, Poly) for d in target):
        raise NotImplementedError
    target = [x.shape[i] if d == 0 and not cv.attr(node, "allowzero", 0) else d for i, d in enumerate(target)]
    return x.reshape(target)


def _range(node, cv, start, limit, delta):
    if _symbolic(start, limit, delta):
        raise NotImplementedError
    return np.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)


def _constant_of_shape(node, cv, shape):
    if _symbolic(shape):
        raise NotImplementedError
    from onnx import numpy_helper
    a = cv.attr(node, "value")
    value = numpy_helper.to_array(a).reshape(-1) if a is not None else np.zeros(1, np.float32)
    return np.full(_ints(shape), value[0], dtype=value.dtype)


def _expand(node, cv, x, shape):
    if _symbolic(shape, x):
        raise NotImplementedError
    return x * np.ones(_ints(shape), dtype=x.dtype)


def _where(node, cv, c, a, b):
    if _symbolic(a, b):
        return np.where(c, a.astype(object), b.astype(object))
    return np.where(c, a, b)


def _reduce(fn):
    def run(node, cv, x, axes=None):
        axes = _axes(node, cv, axes)
        keep = bool(cv.attr(node, "keepdims", 1))
        if x.dtype == object:
            if fn is not np.prod:
                raise NotImplementedError
            if axes or x.ndim != 1:
                raise NotImplementedError
            out = np.array(prod(list(x)), dtype=object)
            return out.reshape([1]) if keep else out
        return fn(x, axis=tuple(axes) if axes else None, keepdims=keep)
    return run


def _unary(fn):
    def run(node, cv, x):
        if x.dtype == object:
            if fn is np.negative:
                return np.vectorize(lambda v: -v, otypes=[object])(x)
            raise NotImplementedError
        return fn(x).astype(x.dtype) if fn not in (np.logical_not, np.isnan) else fn(x)
    return run


def _transpose(node, cv, x):
    return np.transpose(x, cv.attr(node, "perm", None))


def _tile(node, cv, x, repeats):
    return np.tile(x, _ints(repeats))


def _identity(node, cv, x, *_):
    return x


def _split(node, cv, x, split=None):
    axis = cv.attr(node, "axis", 0)
    sizes = _ints(split) if split is not None else None
    n = len(node.output)
    if sizes is None:
        sizes = [-(-x.shape[axis] // n)] * (n - 1)
        sizes.append(x.shape[axis] - sum(sizes))
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def _minmax(fn):
    def run(node, cv, *xs):
        if _symbolic(*xs):
            raise NotImplementedError
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return out
    return run


FOLD = {
    "Gather": _gather, "Concat": _concat, "Unsqueeze": _unsqueeze, "Squeeze": _squeeze, "Slice": _slice,
    "Cast": _cast, "CastLike": _cast, "Reshape": _reshape, "Range": _range, "ConstantOfShape": _constant_of_shape,
    "Expand": _expand, "Where": _where, "Transpose": _transpose, "Tile": _tile, "Identity": _identity,
    "Dropout": _identity, "Split": _split,
    "Add": _binary(lambda a, b: a + b), "Sub": _binary(lambda a, b: a - b), "Mul": _binary(lambda a, b: a * b),
    "Div": _binary(_sym_div), "Mod": _binary(lambda a, b: a % b),
    "Equal": _cmp(np.equal), "Less": _cmp(np.less), "Greater": _cmp(np.greater),
    "LessOrEqual": _cmp(np.less_equal), "GreaterOrEqual": _cmp(np.greater_equal),
    "And": lambda n, cv, a, b: np.logical_and(a, b), "Or": lambda n, cv, a, b: np.logical_or(a, b),
    "Not": _unary(np.logical_not), "Neg": _unary(np.negative), "Abs": _unary(np.abs), "Sqrt": _unary(np.sqrt),
    "Reciprocal": _unary(np.reciprocal), "Floor": _unary(np.floor), "Ceil": _unary(np.ceil),
    "Exp": _unary(np.exp), "Log": _unary(np.log), "Sin": _unary(np.sin), "Cos": _unary(np.cos),
    "Max": _minmax(np.maximum), "Min": _minmax(np.minimum),
    "ReduceProd": _reduce(np.prod), "ReduceSum": _reduce(np.sum), "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min), "ReduceMean": _reduce(np.mean),
    "Pow": _binary(lambda a, b: a ** b),
}

__all__ = ["evaluate", "numpy_dtype"]
