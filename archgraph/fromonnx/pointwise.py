"""Elementwise ONNX operators, activations and reductions as archgraph ops.  A scalar constant
operand is the op's `constant:` (`x * 0.125` is `mul` with `constant: 0.125`); any other constant is
written as a tensor where it is read."""
from __future__ import annotations

import math

import numpy as np

from .values import Refuse
from .table import rule

UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Neg": "neg", "Exp": "exp", "Log": "log",
         "Sin": "sin", "Cos": "cos", "Tan": "tan", "Abs": "abs", "Sqrt": "sqrt", "Reciprocal": "reciprocal",
         "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "IsNaN": "isnan",
         "Sinh": "sinh", "Cosh": "cosh", "Asin": "asin", "Acos": "acos", "Atan": "atan", "Asinh": "asinh",
         "Acosh": "acosh", "Atanh": "atanh", "Not": "logical_not", "BitwiseNot": "bitwise_not",
         "Softplus": "softplus", "Identity": None, "Dropout": None}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Equal": "eq", "Less": "lt",
          "Greater": "gt", "LessOrEqual": "le", "GreaterOrEqual": "ge", "Max": "maximum", "Min": "minimum",
          "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor", "BitwiseAnd": "bitwise_and",
          "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}
CONSTANT_OK = {"add", "sub", "mul", "div", "pow", "eq", "lt", "gt", "le", "ge", "maximum", "minimum"}
REVERSED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}  # c < x is x > c
BOOL = {"eq", "lt", "gt", "le", "ge", "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf"}


@rule(*UNARY)
def _unary(node, cv, path):
    op = UNARY[node.op_type]
    if op is None:  # Identity, and Dropout at inference
        if node.op_type == "Dropout" and len([o for o in node.output if o]) > 1:
            raise Refuse("its mask output is read")
        return cv.value(node.input[0])
    x = cv.tensor(node.input[0], path)
    hp = {}
    if op == "softplus" and (node.attribute and any(a.name not in () for a in node.attribute)):
        raise Refuse("attributes archgraph's softplus does not take")
    return cv.emit(op, [x], hp, path, dtype="bool" if op in BOOL else None)


@rule(*BINARY)
def _binary(node, cv, path):
    op = BINARY[node.op_type]
    if node.op_type in ("Max", "Min") and len(node.input) != 2:
        raise Refuse(f"{node.op_type} of {len(node.input)} inputs (archgraph's {op} takes two)")
    a, b = node.input
    ca, cb = cv.const(a), cv.const(b)
    out_dtype = "bool" if op in BOOL else None
    for const, other, reverse in ((cb, a, False), (ca, b, True)):
        if const is None or op not in CONSTANT_OK or const.size != 1 or const.dtype == object:
            continue
        x = cv.tensor(other, path)
        if const.ndim > len(x.shape):
            continue
        value = const.reshape(-1)[0].item()
        hp = {"constant": _f32(value) if x.dtype == "float32" else float(value)}
        name = op
        if reverse and op in REVERSED:
            name = REVERSED[op]
        elif reverse and op in ("sub", "div", "pow"):
            hp["reverse"] = True
        if op == "div" and x.dtype.startswith(("int", "uint")):
            hp["rounding_mode"] = "trunc"
        if op == "pow" and not reverse and value == 2.0:
            return cv.emit("square", [x], {}, path)
        if op in ("add", "sub", "mul", "div") and not reverse and value == (0.0 if op in ("add", "sub") else 1.0):
            return x
        return cv.emit(name, [x], hp, path, dtype=out_dtype)
    x, y = cv.tensor(a, path), cv.tensor(b, path, _dtype_of(cv, a))
    hp = {"rounding_mode": "trunc"} if op == "div" and x.dtype.startswith(("int", "uint")) else {}
    return cv.emit(op, [x, y], hp, path, dtype=out_dtype)


def _dtype_of(cv, name):
    v = cv.value(name)
    return getattr(v, "dtype", None) if not isinstance(v, np.ndarray) else None


@rule("Mod")
def _mod(node, cv, path):
    x = cv.tensor(node.input[0], path)
    c = cv.const(node.input[1])
    op = "fmod" if cv.attr(node, "fmod", 0) else "remainder"
    if c is not None and c.size == 1 and c.dtype != object:
        return cv.emit(op, [x], {"constant": float(c.reshape(-1)[0])}, path)
    return cv.emit(op, [x, cv.tensor(node.input[1], path)], {}, path)


@rule("Gelu")
def _gelu(node, cv, path):
    approximate = cv.attr(node, "approximate", b"none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    return cv.emit("gelu", [cv.tensor(node.input[0], path)],
                   {"approximate": approximate} if approximate != "none" else {}, path)


@rule("LeakyRelu")
def _leaky(node, cv, path):
    return cv.emit("leaky_relu", [cv.tensor(node.input[0], path)],
                   {"negative_slope": _f32(cv.attr(node, "alpha", 0.01))}, path)


@rule("Elu", "Selu", "Celu")
def _elu(node, cv, path):
    x = cv.tensor(node.input[0], path)
    if node.op_type == "Elu":
        return cv.emit("elu", [x], {"alpha": _f32(cv.attr(node, "alpha", 1.0))}, path)
    if node.op_type == "Selu":
        return cv.emit("elu", [x], {"alpha": _f32(cv.attr(node, "alpha", 1.67326319217681884765625)),
                                    "scale": _f32(cv.attr(node, "gamma", 1.05070102214813232421875))}, path)
    alpha = _f32(cv.attr(node, "alpha", 1.0))
    return cv.emit("elu", [x], {"alpha": alpha, "input_scale": 1 / alpha}, path)


@rule("HardSigmoid", "HardSwish")
def _hard(node, cv, path):
    x = cv.tensor(node.input[0], path)
    alpha, beta = cv.attr(node, "alpha", 0.2 if node.op_type == "HardSigmoid" else 1 / 6), cv.attr(node, "beta", 0.5)
    if not math.isclose(alpha, 1 / 6, rel_tol=1e-6) or beta != 0.5:
        raise Refuse(f"HardSigmoid with alpha {alpha:g}, beta {beta:g} (archgraph's hardsigmoid is PyTorch's: "
                     "x / 6 + 0.5)")
    h = cv.emit("hardsigmoid", [x], {}, path)
    return h if node.op_type == "HardSigmoid" else cv.emit("mul", [x, h], {}, path)


@rule("Mish")
def _mish(node, cv, path):
    x = cv.tensor(node.input[0], path)
    t = cv.emit("tanh", [cv.emit("softplus", [x], {}, path)], {}, path)
    return cv.emit("mul", [x, t], {}, path)


@rule("Clip")
def _clip(node, cv, path):
    x = cv.tensor(node.input[0], path)
    bounds = {}
    for key, name in zip(("min", "max"), list(node.input[1:3]) + [""] * 2):
        if name:
            c = cv.const(name)
            if c is None:
                raise Refuse(f"its {key} is computed (archgraph's clamp takes numbers)")
            bounds[key] = float(c.reshape(-1)[0])
    if "min" in bounds and "max" not in bounds and bounds["min"] == 0.0:
        return cv.emit("relu", [x], {}, path)
    return cv.emit("clamp", [x], bounds, path)


@rule("IsInf")
def _isinf(node, cv, path):
    if not cv.attr(node, "detect_positive", 1) or not cv.attr(node, "detect_negative", 1):
        raise Refuse("IsInf of one sign only")
    return cv.emit("isinf", [cv.tensor(node.input[0], path)], {}, path, dtype="bool")


@rule("Softmax", "LogSoftmax")
def _softmax(node, cv, path):
    x = cv.tensor(node.input[0], path)
    op = "softmax" if node.op_type == "Softmax" else "log_softmax"
    return cv.emit(op, [x], {"dim": cv.attr(node, "axis", -1)}, path)


REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "amax", "ReduceMin": "amin", "ReduceProd": "prod",
          "ReduceL2": "vector_norm", "ReduceL1": "vector_norm", "ReduceLogSumExp": "logsumexp",
          "ReduceSumSquare": "sum"}


@rule(*REDUCE)
def _reduce(node, cv, path):
    x = cv.tensor(node.input[0], path)
    axes = None
    if len(node.input) > 1 and node.input[1]:
        c = cv.const(node.input[1])
        if c is None:
            raise Refuse("its axes are computed")
        axes = [int(a) for a in c.reshape(-1)]
    elif cv.attr(node, "axes") is not None:
        axes = list(cv.attr(node, "axes"))
    if not axes:
        if cv.attr(node, "noop_with_empty_axes", 0):
            return x
        axes = list(range(len(x.shape)))
    keep = bool(cv.attr(node, "keepdims", 1))
    op = REDUCE[node.op_type]
    if node.op_type == "ReduceSumSquare":
        x = cv.emit("square", [x], {}, path)
    hp = {"dim": axes, "keepdim": keep}
    if node.op_type == "ReduceL1":
        hp["ord"] = 1.0
    return cv.emit(op, [x], hp, path)


@rule("ArgMax", "ArgMin")
def _arg(node, cv, path):
    if cv.attr(node, "select_last_index", 0):
        raise Refuse("select_last_index (PyTorch's argmax picks the first)")
    op = "argmax" if node.op_type == "ArgMax" else "argmin"
    return cv.emit(op, [cv.tensor(node.input[0], path)], {"dim": cv.attr(node, "axis", 0),
                                                          "keepdim": bool(cv.attr(node, "keepdims", 1))},
                   path, dtype="int64")


def _f32(x: float) -> float:
    """An attribute's float as float32 holds it, printed short (0.01, not 0.009999999776)."""
    return float(f"{np.float32(x):.7g}")
