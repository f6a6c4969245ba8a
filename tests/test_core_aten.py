"""PyTorch's Core ATen operator set (the aten ops torch tags `core`, which everything lowers to): each is
imported by archgraph.torch.to_spec, or refused with its reason (aten.REFUSED), or is a read of a
size (aten.SKIP).  Each import case is a small module calling the aten op itself: the exported graph
holds that op, the spec holds the archgraph op(s) it becomes, and the spec's module computes the
module's outputs (values, element type, shape) on random inputs of each element type listed."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.fromtorch.aten import mutates  # noqa: E402
from archgraph.fromtorch.rules import REFUSED, SKIP, TABLE  # noqa: E402
from archgraph.load import load_text  # noqa: E402
from archgraph.torch import to_module, to_spec  # noqa: E402
from test_op_conformance import _same, _tensor  # noqa: E402

aten = torch.ops.aten

PENDING: dict[Any, str] = {}  # core ops whose import lands in a later change (none left)


def core_ops() -> set:
    """Every overload of an aten op tagged core (193 in torch 2.13), from every schema torch registers
    (`dir(torch.ops.aten)` lists only the packets loaded so far, which depends on what ran before)."""
    found = set()
    for name in sorted({s.name.split("::")[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")}):
        packet = getattr(aten, name, None)
        if not hasattr(packet, "overloads"):
            continue
        for overload in packet.overloads():
            target = getattr(packet, overload)
            if torch.Tag.core in target.tags:
                found.add(target)
    return found


@dataclass
class I:
    """An import case: `call(*inputs)` runs the aten op `target` on inputs of `shapes`, each variant of
    `kinds` (see tests/op_cases.py: f, i, b, nK, ...); the spec must hold the ops `expect`."""

    target: Any
    shapes: list[tuple]
    call: Callable[..., Any]
    expect: tuple[str, ...]
    kinds: list[str] = field(default_factory=lambda: ["f"])
    id: str | None = None
    module: Callable[[], Any] | None = None  # a module of its own (one that holds tensors) instead of `call`

    @property
    def name(self) -> str:
        return self.id or str(self.target).removeprefix("aten.")


def u(target, expect: str, kinds=("f",), shape=(2, 5, 3)) -> I:
    """A one-input op called as target(x)."""
    return I(target, [shape], lambda x: target(x), (expect,), list(kinds))


def b(target, expect: str, kinds=("f f",), other=(5, 3)) -> I:
    """A two-tensor op called as target(x, y)."""
    return I(target, [(2, 5, 3), other], lambda x, y: target(x, y), (expect,), list(kinds))


def s(target, expect: str, number, kinds=("f",), id=None) -> I:
    """A tensor-and-number op called as target(x, number)."""
    return I(target, [(2, 5, 3)], lambda x: target(x, number), tuple(expect.split()), list(kinds), id)


class Holds(nn.Module):
    """A module whose child `layer` (made by `make`) holds the tensors `call(layer, x)` passes the aten op."""

    def __init__(self, make, call):
        super().__init__()
        self.layer, self.call = make(), call

    def forward(self, x0):
        return self.call(self.layer, x0)


def held(target, shape, make, call, expect, kinds=("f",), id=None) -> I:
    """An op on tensors a module holds: the spec's node is named by the module and owns them."""
    return I(target, [shape], None, (expect,), list(kinds), id, lambda: Holds(make, call))


def _written(x):
    """Writes into a tensor the value returned is not (a slice, then a step of a loop): read back whole."""
    y = x.clone()
    y[:, 1:3] = x[:, :2] * 2
    for i in range(2):
        y[:, :, i] = y[:, :, i + 1] + 1
    return y


def _ids(x, n: int):
    """Indices below n made from x's values (so they share x's symbolic sizes)."""
    return (x.abs() * n).long().clamp(max=n - 1)


UNARY = {  # aten op -> (archgraph op, input kinds)
    "abs": ("abs", "f i"), "acos": ("acos", "u"), "acosh": ("acosh", "g"), "asin": ("asin", "u"),
    "asinh": ("asinh", "f"), "atan": ("atan", "f"), "atanh": ("atanh", "u"), "ceil": ("ceil", "f i"),
    "cos": ("cos", "f"), "cosh": ("cosh", "f"), "erf": ("erf", "f"), "exp": ("exp", "f"), "expm1": ("expm1", "f"),
    "floor": ("floor", "f"), "log": ("log", "p"), "log10": ("log10", "p"), "log1p": ("log1p", "p"),
    "log2": ("log2", "p"), "neg": ("neg", "f i"), "reciprocal": ("reciprocal", "p"), "relu": ("relu", "f"),
    "round": ("round", "f"), "rsqrt": ("rsqrt", "p"), "sigmoid": ("sigmoid", "f"), "sign": ("sign", "f i"),
    "sin": ("sin", "f"), "sinh": ("sinh", "f"), "sqrt": ("sqrt", "p"), "tan": ("tan", "u"), "tanh": ("tanh", "f"),
    "trunc": ("trunc", "f"), "bitwise_not": ("bitwise_not", "i b"), "logical_not": ("logical_not", "f b"),
    "isinf": ("isinf", "s"), "isnan": ("isnan", "s"),
}

CASES = [
    *(u(getattr(aten, name).default, op, kinds.split()) for name, (op, kinds) in UNARY.items()),
    u(aten.elu.default, "elu"),
    I(aten.elu.default, [(2, 5)], lambda x: aten.elu.default(x, 1.5, 2.0, 0.5), ("elu",), id="elu-settings"),
    I(aten.hardtanh.default, [(2, 5)], lambda x: aten.hardtanh.default(x, -0.5, 0.5), ("hardtanh",)),
    I(aten.leaky_relu.default, [(2, 5)], lambda x: aten.leaky_relu.default(x, 0.3), ("leaky_relu",)),
    I(aten.gelu.default, [(2, 5)], lambda x: aten.gelu.default(x, approximate="tanh"), ("gelu",)),
    I(aten._softmax.default, [(2, 5)], lambda x: aten._softmax.default(x, 1, False), ("softmax",)),
    I(aten._log_softmax.default, [(2, 5)], lambda x: aten._log_softmax.default(x, 1, False), ("log_softmax",)),
    # -- two operands ---------------------------------------------------------------------------------
    b(aten.add.Tensor, "add"),
    I(aten.add.Tensor, [(2, 5, 3), (5, 3)], lambda x, y: aten.add.Tensor(x, y, alpha=3), ("mul", "add"),
      ["f f", "i i"], id="add.Tensor-alpha"),
    s(aten.add.Scalar, "add", 2.5),
    s(aten.add.Scalar, "full add", 2, ["i"], id="add.Scalar-integers"),
    b(aten.sub.Tensor, "sub", ["f f", "i i"]),
    s(aten.sub.Scalar, "sub", 1.5),
    b(aten.mul.Tensor, "mul", ["f f", "i b"]),
    s(aten.mul.Scalar, "mul", -2.0, ["f", "b"]),
    s(aten.mul.Scalar, "full mul", 3, ["i"], id="mul.Scalar-integers"),
    b(aten.div.Tensor, "div", ["f p", "i m"]),
    s(aten.div.Scalar, "div", 4.0, ["f", "i"]),
    I(aten.div.Tensor_mode, [(2, 5, 3), (5, 3)], lambda x, y: aten.div.Tensor_mode(x, y, rounding_mode="floor"),
      ("div",), ["f p", "i m"]),
    I(aten.div.Scalar_mode, [(2, 5, 3)], lambda x: aten.div.Scalar_mode(x, 3, rounding_mode="trunc"),
      ("div",), ["f", "i"]),
    b(aten.pow.Tensor_Tensor, "pow", ["p f"]),
    s(aten.pow.Tensor_Scalar, "pow", 3.0),
    I(aten.pow.Scalar, [(2, 5, 3)], lambda x: aten.pow.Scalar(2.0, x), ("pow",)),
    b(aten.maximum.default, "maximum", ["f f", "i i"]),
    b(aten.minimum.default, "minimum", ["f f", "i i"]),
    b(aten.atan2.default, "atan2"),
    I(aten.atan2.out, [(2, 5), (2, 5)], lambda x, y: aten.atan2.out(x, y, out=torch.empty_like(x)), ("atan2",),
      ["f f"]),
    b(aten.fmod.Tensor, "fmod", ["f p", "i m"]),
    s(aten.fmod.Scalar, "fmod", 1.5),
    b(aten.remainder.Tensor, "remainder", ["f p", "i m"]),
    s(aten.remainder.Scalar, "full remainder", 3, ["i"]),
    *(b(getattr(aten, f"{name}").Tensor, name, ["i i", "b b"]) for name in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    *(s(getattr(aten, f"{name}").Scalar, f"full {name}", 6, ["i"]) for name in ("bitwise_and", "bitwise_or",
                                                                                   "bitwise_xor")),
    *(b(getattr(aten, f"logical_{name}").default, f"logical_{name}", ["f i", "b b"]) for name in ("and", "or", "xor")),
    *(b(getattr(aten, name).Tensor, name, ["f f", "i i"]) for name in ("eq", "ne", "lt", "le", "gt", "ge")),
    *(s(getattr(aten, name).Scalar, name, 1, ["f", "i"]) for name in ("eq", "ne", "lt", "le", "gt", "ge")),
    I(aten.clamp.default, [(2, 5)], lambda x: aten.clamp.default(x, -0.5, 0.5), ("clamp",), ["f", "i"]),
    I(aten.clamp.Tensor, [(2, 5), (5,), (2, 1)], lambda x, lo, hi: aten.clamp.Tensor(x, lo, hi + 2),
      ("maximum", "minimum"), ["f f f"]),
    I(aten.where.self, [(2, 5), (2, 5), (5,)], lambda c, x, y: aten.where.self(c, x, y), ("where",), ["b f f"]),
    # -- reductions -----------------------------------------------------------------------------------
    I(aten.sum.dim_IntList, [(2, 5, 3)], lambda x: aten.sum.dim_IntList(x, [0, 2], True), ("sum",), ["f", "i"]),
    I(aten.mean.dim, [(2, 5, 3)], lambda x: aten.mean.dim(x, [-1]), ("mean",)),
    I(aten.mean.default, [(2, 5, 3)], lambda x: aten.mean.default(x), ("mean",)),
    I(aten.prod.default, [(2, 5)], lambda x: aten.prod.default(x), ("prod",), ["f", "i"]),
    I(aten.prod.dim_int, [(2, 5, 3)], lambda x: aten.prod.dim_int(x, 1, True), ("prod",)),
    I(aten.amax.default, [(2, 5, 3)], lambda x: aten.amax.default(x, [1, 2]), ("amax",), ["f", "i"]),
    I(aten.amin.default, [(2, 5, 3)], lambda x: aten.amin.default(x, [1], True), ("amin",), ["f", "i"]),
    I(aten.argmax.default, [(2, 5, 3)], lambda x: aten.argmax.default(x, 1), ("argmax",), ["f", "i"]),
    I(aten.argmax.default, [(2, 5, 3)], lambda x: aten.argmax.default(x), ("argmax",), id="argmax-flattened"),
    I(aten.argmin.default, [(2, 5, 3)], lambda x: aten.argmin.default(x, -1, True), ("argmin",)),
    I(aten.any.default, [(2, 5)], lambda x: aten.any.default(x), ("any",), ["b"]),
    I(aten.any.dim, [(2, 5)], lambda x: aten.any.dim(x, 1), ("any",), ["b", "i"]),
    I(aten.any.dims, [(2, 5, 3)], lambda x: aten.any.dims(x, [0, 2]), ("any",), ["b"]),
    I(aten.max.dim, [(2, 5, 3)], lambda x: aten.max.dim(x, 1), ("max",), ["f", "i"]),
    I(aten.min.dim, [(2, 5, 3)], lambda x: aten.min.dim(x, -1, True), ("min",)),
    I(aten.var.correction, [(2, 5, 3)], lambda x: aten.var.correction(x, [1], correction=0), ("var",)),
    I(aten.var.dim, [(2, 5, 3)], lambda x: aten.var.dim(x, [1, 2], True), ("var",)),
    I(aten.cumsum.default, [(2, 5)], lambda x: aten.cumsum.default(x, 1), ("cumsum",), ["f", "i"]),
    # -- shapes and plumbing --------------------------------------------------------------------------
    I(aten.mm.default, [(4, 5), (5, 3)], lambda x, y: aten.mm.default(x, y), ("matmul",), ["f f"]),
    I(aten.bmm.default, [(2, 4, 5), (2, 5, 3)], lambda x, y: aten.bmm.default(x, y), ("matmul",), ["f f"]),
    I(aten.cat.default, [(2, 5), (2, 3)], lambda x, y: aten.cat.default([x, y], 1), ("concat",), ["f f"]),
    I(aten.clone.default, [(2, 5)], lambda x: aten.clone.default(x) * 2, ("mul",)),
    I(aten.alias.default, [(2, 5)], lambda x: aten.alias.default(x) * 2, ("mul",)),
    I(aten.expand.default, [(2, 1, 3)], lambda x: aten.expand.default(x, [2, 4, 3]), ("expand",)),
    I(aten.permute.default, [(2, 5, 3)], lambda x: aten.permute.default(x, [2, 0, 1]), ("permute",)),
    I(aten.select.int, [(2, 5, 3)], lambda x: aten.select.int(x, 1, 2), ("select",)),
    I(aten.slice.Tensor, [(2, 5, 6)], lambda x: aten.slice.Tensor(x, 2, 1, 5, 2), ("slice",)),
    I(aten.split_with_sizes.default, [(2, 5, 3)], lambda x: aten.split_with_sizes.default(x, [2, 3], 1),
      ("split",)),
    I(aten.squeeze.dim, [(2, 1, 3)], lambda x: aten.squeeze.dim(x, 1), ("squeeze",)),
    I(aten.unsqueeze.default, [(2, 5)], lambda x: aten.unsqueeze.default(x, 1), ("unsqueeze",)),
    I(aten.view.default, [(2, 5, 6)], lambda x: aten.view.default(x, [-1, 3, 2]), ("reshape",)),
    I(aten._to_copy.default, [(2, 5)], lambda x: aten._to_copy.default(x, dtype=torch.int64), ("cast",)),
    I(aten.arange.start_step, [(2, 5)], lambda x: x + aten.arange.start_step(1, 11, 2), ("arange",)),
    I(aten.arange.start_step, [(2, 15)], lambda x: x * aten.arange.start_step(1 / 16, 1.0, 1 / 16), ("arange",),
      id="arange-real"),  # MiniCPM-V's NaViT: bucket boundaries 1/16 .. 15/16
    I(aten.bucketize.Tensor, [(2, 5)], lambda x: torch.bucketize(x.clamp(0, 0.999), torch.arange(1 / 8, 1.0, 1 / 8),
                                                                 right=True), ("bucketize", "arange"), ["u"]),
    I(aten.full.default, [(2, 5)], lambda x: x + aten.full.default([5], -1.5), ("full",)),
    I(aten.full_like.default, [(2, 5)], lambda x: aten.full_like.default(x, 7) * x, ("full",), ["f", "i"]),
    I(aten.scalar_tensor.default, [(2, 5)], lambda x: x * aten.scalar_tensor.default(3.0), ("full",)),
    I(aten.empty.memory_format, [(2, 5)], lambda x: aten.empty.memory_format([2, 5]).fill_(2.0) + x, ("full",)),
    I(aten.fill.Scalar, [(2, 5)], lambda x: aten.fill.Scalar(x, 4) - x, ("full",), ["f", "i"]),
    I(aten.gather.default, [(2, 5, 3)], lambda x: aten.gather.default(x, 1, (x.abs() * 2).long().clamp(max=4)),
      ("gather",)),
    I(aten.index_select.default, [(2, 5, 3), (4,)], lambda x, i: aten.index_select.default(x, 1, i),
      ("index_select",), ["f n5"]),
    I(aten.masked_scatter.default, [(2, 5), (10,)], lambda x, v: aten.masked_scatter.default(x, x > 0, v),
      ("masked_scatter",), ["f f"]),
    I(aten.topk.default, [(2, 5, 3)], lambda x: aten.topk.default(x, 2, 1), ("topk",)),
    I(aten.native_dropout.default, [(2, 5)], lambda x: aten.native_dropout.default(x, 0.5, False)[0] * 2,
      ("identity",)),
    # -- indexing, writes, rearranging ----------------------------------------------------------------
    I(aten.index.Tensor, [(2, 5, 3), (4,)], lambda x, i: aten.index.Tensor(x, [None, i]), ("index",), ["f n5"]),
    I(aten.index.Tensor, [(6, 3), (2, 4)], lambda x, i: aten.index.Tensor(x, [i]), ("index",), ["f n6"],
      id="index.Tensor-ids"),
    I(aten.index_put.default, [(2, 5, 3, 2)], lambda x: aten.index_put.default(x, [None, _ids(x[0, :4, 0, 0], 5)],
                                                                                 x[0, 0, 0]), ("index_put",)),
    I(aten.index_put.default, [(2, 5, 3)], lambda x: aten.index_put.default(x, [x > 0], x.new_zeros(())),
      ("index_put",), id="index_put.default-mask"),
    I(aten.scatter.src, [(2, 5, 3, 2)], lambda x: aten.scatter.src(x, 1, _ids(x[:, :1], 5), x[:, :1] * 2),
      ("scatter",)),
    I(aten.scatter.value, [(2, 5, 3, 2)], lambda x: aten.scatter.value(x, 1, _ids(x[:, :3], 5), -1.5), ("scatter",)),
    I(aten.scatter_add.default, [(2, 5, 3, 2)], lambda x: aten.scatter_add.default(x, 1, _ids(x[:, :3], 5), x[:, 2:]),
      ("scatter_add",)),
    I(aten.scatter_reduce.two, [(2, 5, 3, 2)],
      lambda x: aten.scatter_reduce.two(x, 1, _ids(x[:, :3], 5), x[:, 2:], "amin", include_self=False),
      ("scatter_reduce",)),
    I(aten.select_scatter.default, [(2, 5, 3)], lambda x: aten.select_scatter.default(x, x[:, 1] * 2, 1, 0),
      ("select_scatter",)),
    I(aten.slice_scatter.default, [(2, 5, 6)], lambda x: aten.slice_scatter.default(x, x[:, :, :2] * 2, 2, 1, 5, 2),
      ("slice_scatter",)),
    I(aten.copy.default, [(2, 5, 3), (3,)], lambda x, s: aten.copy.default(x, s), ("copy",), ["f f", "i f"]),
    I(aten.copy_.default, [(2, 5, 3, 2)], lambda x: _written(x), ("slice_scatter", "select_scatter"),
      id="copy_-into-slices"),
    I(aten.index_put_.default, [(2, 5, 3, 2)], lambda x: x.clone().index_put_((x[:, 0, 0, 0] > 0,), x[0, 1] * 3),
      ("index_put",), id="index_put_-by-a-mask"),
    I(aten.resize_.default, [(2, 5, 3)], lambda x: x.clone().resize_(2, 5, 3) * 2, ("mul",)),
    I(aten.flip.default, [(2, 5, 3)], lambda x: aten.flip.default(x, [0, 2]), ("flip",)),
    I(aten.repeat.default, [(2, 5)], lambda x: aten.repeat.default(x, [2, 1, 3]), ("repeat",)),
    I(aten.squeeze.dims, [(2, 1, 1, 3)], lambda x: aten.squeeze.dims(x, [1, -2]), ("squeeze",)),
    I(aten.diagonal.default, [(2, 5, 6)], lambda x: aten.diagonal.default(x, 1, 1, 2) * 1, ("diagonal",)),
    I(aten.as_strided.default, [(2, 6)], lambda x: aten.as_strided.default(x, [2, 2, 3], [6, 1, 2]) * 1,
      ("as_strided",)),
    I(aten.sort.default, [(2, 5, 3)], lambda x: aten.sort.default(x, 1, True), ("sort",), ["f", "i"]),
    I(aten.addmm.default, [(3,), (4, 5), (5, 3)], lambda b, x, y: aten.addmm.default(b, x, y, beta=0.5, alpha=2),
      ("matmul", "mul", "add"), ["f f f"]),
    I(aten.empty_strided.default, [(2, 5)], lambda x: aten.empty_strided.default([2, 5], [5, 1]).fill_(1) + x,
      ("full",)),
    I(aten.stack.default, [(2, 5), (2, 5)], lambda x, y: aten.stack.default([x, y], 1), ("stack",), ["f f"]),
    I(aten.unbind.int, [(2, 3, 5)], lambda x: aten.unbind.int(x, 1), ("unbind",)),
    I(aten.einsum.default, [(2, 5, 3), (3, 4)], lambda x, y: aten.einsum.default("bij,jk->bik", [x, y]),
      ("einsum",), ["f f"]),
    I(aten.one_hot.default, [(2, 5)], lambda x: aten.one_hot.default(x, 7), ("one_hot",), ["n7"]),
    I(aten.roll.default, [(2, 5, 3)], lambda x: aten.roll.default(x, [1, -1], [1, 2]), ("roll",)),
    held(aten.embedding.default, (2, 5), lambda: nn.Embedding(10, 4),
         lambda m, x: aten.embedding.default(m.weight, x), "embedding", ["n10"]),
    # -- convolution, pooling, padding, resampling, the native norms -------------------------------------
    held(aten.convolution.default, (2, 4, 7, 6), lambda: nn.Conv2d(4, 6, (3, 2), groups=2),
         lambda m, x: aten.convolution.default(x, m.weight, m.bias, [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
         "conv2d"),
    held(aten.convolution.default, (2, 4, 3, 5, 4), lambda: nn.ConvTranspose3d(4, 2, 2, bias=False),
         lambda m, x: aten.convolution.default(x, m.weight, None, [1, 2, 2], [0, 1, 0], [1, 1, 1], True, [0, 1, 0], 1),
         "conv_transpose3d", id="convolution-transposed"),
    held(aten.conv2d.padding, (2, 4, 6, 5), lambda: nn.Conv2d(4, 3, 4, padding="same", dilation=2),
         lambda m, x: m(x), "conv2d", id="Conv2d-padding-same"),
    held(aten.conv_transpose2d.input, (2, 4, 5, 3), lambda: nn.ConvTranspose2d(4, 6, 3, 2, 1, 1, groups=2),
         lambda m, x: m(x), "conv_transpose2d", id="ConvTranspose2d"),
    I(aten.max_pool2d_with_indices.default, [(2, 3, 7, 6)],
      lambda x: aten.max_pool2d_with_indices.default(x, [3, 2], [2, 1], [1, 0], [1, 2], True)[0], ("max_pool2d",)),
    I(aten.max_pool3d_with_indices.default, [(2, 3, 4, 6, 5)],
      lambda x: aten.max_pool3d_with_indices.default(x, [2, 2, 3], [1, 2, 2])[0], ("max_pool3d",)),
    I(aten.avg_pool1d.default, [(2, 3, 7)], lambda x: aten.avg_pool1d.default(x, [3], [2], [1], False, False),
      ("avg_pool1d",)),
    I(aten.avg_pool2d.default, [(2, 3, 7, 6)], lambda x: aten.avg_pool2d.default(x, [3, 3], [1, 1], [1, 1], False,
                                                                               False), ("avg_pool2d",)),
    I(aten.avg_pool3d.default, [(2, 3, 4, 6, 5)], lambda x: aten.avg_pool3d.default(x, [2, 2, 2], [], [0, 1, 1],
                                                                                  True, True, 5), ("avg_pool3d",)),
    I(aten.adaptive_avg_pool1d.default, [(2, 3, 7)], lambda x: aten.adaptive_avg_pool1d.default(x, [3]),
      ("adaptive_avg_pool1d",)),
    I(aten._adaptive_avg_pool2d.default, [(2, 3, 7, 6)], lambda x: aten._adaptive_avg_pool2d.default(x, [3, 2]),
      ("adaptive_avg_pool2d",)),
    I(aten._adaptive_avg_pool3d.default, [(2, 3, 4, 7, 6)], lambda x: aten._adaptive_avg_pool3d.default(x, [2, 3, 1]),
      ("adaptive_avg_pool3d",)),
    I(aten.constant_pad_nd.default, [(2, 3, 5)], lambda x: aten.constant_pad_nd.default(x, [1, 2, -1, 1], 0.5),
      ("pad",), ["f", "i"]),
    I(aten.reflection_pad1d.default, [(2, 3, 5)], lambda x: aten.reflection_pad1d.default(x, [2, 1]), ("pad",)),
    I(aten.reflection_pad2d.default, [(2, 3, 5, 4)], lambda x: aten.reflection_pad2d.default(x, [1, 0, 2, 3]),
      ("pad",)),
    I(aten.reflection_pad3d.default, [(2, 3, 3, 5, 4)],
      lambda x: aten.reflection_pad3d.default(x, [1, 0, 2, 3, 1, 1]), ("pad",)),
    I(aten.replication_pad2d.default, [(2, 3, 5, 4)], lambda x: aten.replication_pad2d.default(x, [1, 0, 2, 3]),
      ("pad",)),
    I(aten.replication_pad3d.default, [(2, 3, 3, 5, 4)],
      lambda x: aten.replication_pad3d.default(x, [1, 0, 2, 3, 0, 2]), ("pad",)),
    I(aten.upsample_nearest2d.vec, [(2, 3, 5, 4)], lambda x: aten.upsample_nearest2d.vec(x, None, [2.0, 3.0]),
      ("interpolate",)),
    I(aten.upsample_nearest2d.vec, [(2, 3, 5, 4)], lambda x: aten.upsample_nearest2d.vec(x, [7, 9], None),
      ("interpolate",), id="upsample_nearest2d-to-a-size"),
    I(aten.upsample_bilinear2d.vec, [(2, 3, 5, 4)], lambda x: aten.upsample_bilinear2d.vec(x, [7, 9], True, None),
      ("interpolate",)),
    I(aten.upsample_bilinear2d.vec, [(2, 3, 5, 4)], lambda x: aten.upsample_bilinear2d.vec(x, None, False, [2.0, 2.0]),
      ("interpolate",), id="upsample_bilinear2d-by-factors"),
    # F.interpolate(antialias=True), downsampling (Unlimited-OCR's SAM encoder resizes its positions so)
    I(aten._upsample_bicubic2d_aa.vec, [(2, 3, 9, 8)], lambda x: aten._upsample_bicubic2d_aa.vec(x, [5, 3], False, None),
      ("interpolate",)),
    I(aten._upsample_bilinear2d_aa.vec, [(2, 3, 9, 8)],
      lambda x: aten._upsample_bilinear2d_aa.vec(x, None, False, [0.5, 0.4]), ("interpolate",)),
    held(aten.native_layer_norm.default, (2, 5, 6), lambda: _randomised(nn.LayerNorm(6)),
         lambda m, x: aten.native_layer_norm.default(x, [6], m.weight, m.bias, 1e-5)[0], "layer_norm"),
    held(aten.native_group_norm.default, (2, 4, 3, 5), lambda: _randomised(nn.GroupNorm(2, 4)),
         lambda m, x: aten.native_group_norm.default(x, m.weight, m.bias, x.shape[0], 4, x.shape[2] * x.shape[3], 2,
                                                     1e-5)[0], "group_norm"),
    held(aten._native_batch_norm_legit_no_training.default, (2, 4, 3), lambda: _randomised(nn.BatchNorm1d(4)),
         lambda m, x: aten._native_batch_norm_legit_no_training.default(x, m.weight, m.bias, m.running_mean,
                                                                         m.running_var, 0.1, 1e-5)[0], "batch_norm"),
    held(aten._native_batch_norm_legit.default, (3, 4, 2), lambda: _randomised(nn.BatchNorm1d(4, track_running_stats=False)),
         lambda m, x: aten._native_batch_norm_legit.default(x, m.weight, m.bias, x.new_zeros(4), x.new_ones(4),
                                                            True, 0.1, 1e-5)[0], "rsqrt", id="batch_norm-training"),
    I(aten._native_batch_norm_legit.no_stats, [(3, 4, 5)],
      lambda x: aten._native_batch_norm_legit.no_stats(x, None, None, True, 0.1, 1e-3)[0], ("mean", "var", "rsqrt")),
    held(aten.instance_norm.default, (2, 4, 5, 3), lambda: _randomised(nn.InstanceNorm2d(4, affine=True)),
         lambda m, x: m(x), "rsqrt", id="InstanceNorm2d"),
    I(aten.adaptive_max_pool2d.default, [(2, 3, 7, 6)], lambda x: aten.adaptive_max_pool2d.default(x, [3, 2])[0],
      ("adaptive_max_pool2d",)),
    # -- sampling, folding, distances, bags -----------------------------------------------------------
    I(aten.grid_sampler_2d.default, [(2, 3, 6, 5), (2, 4, 3, 2)],
      lambda x, g: aten.grid_sampler_2d.default(x, g, 0, 2, False), ("grid_sample",), ["f u"]),
    I(aten.grid_sampler_2d.default, [(2, 3, 6, 5), (2, 4, 3, 2)],
      lambda x, g: aten.grid_sampler_2d.default(x, g * 1.5, 1, 1, True), ("grid_sample",), ["f u"],
      id="grid_sampler_2d-nearest-border"),
    I(aten.col2im.default, [(2, 12, 12)], lambda x: aten.col2im.default(x, [5, 4], [2, 3], [1, 1], [1, 1], [1, 2]),
      ("fold",)),
    I(aten._cdist_forward.default, [(2, 5, 3), (2, 4, 3)], lambda a, b: aten._cdist_forward.default(a, b, 2.0, None),
      ("cdist",), ["f f"]),
    I(aten._cdist_forward.default, [(2, 5, 3), (2, 4, 3)], lambda a, b: aten._cdist_forward.default(a, b, 1.5, 2),
      ("cdist",), ["f f"], id="cdist-p1.5"),
    I(aten._pdist_forward.default, [(5, 3)], lambda x: aten._pdist_forward.default(x, 2.0), ("pdist",)),
    held(aten._embedding_bag.default, (7,), lambda: nn.EmbeddingBag(10, 4, mode="max"),
         lambda m, x: aten._embedding_bag.default(m.weight, x, aten.arange.start_step(0, 6, 2), False, 2)[0],
         "embedding_bag", ["n10"]),
    held(aten.embedding_bag.padding_idx, (6,), lambda: nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0),
         lambda m, x: m(x, aten.arange.start_step(0, 6, 2), per_sample_weights=x * 0.5), "embedding_bag", ["n10"],
         id="EmbeddingBag-weighted"),
    # -- Fourier transforms and complex numbers -------------------------------------------------------
    I(aten._fft_r2c.default, [(2, 3, 8)], lambda x: aten._fft_r2c.default(x, [2], 1, True).abs(), ("fft_rfft",)),
    I(aten._fft_r2c.default, [(2, 3, 6, 5)], lambda x: aten.view_as_real.default(aten._fft_r2c.default(x, [2, 3], 2,
                                                                                                      False)),
      ("fft_fft", "view_as_real"), id="_fft_r2c-two-sided"),
    I(aten._fft_c2r.default, [(2, 3, 8)], lambda x: aten._fft_c2r.default(aten._fft_r2c.default(x, [2], 0, True) * 2,
                                                                          [2], 2, 8), ("fft_irfft",)),
    I(aten._fft_c2r.default, [(2, 3, 6, 5)], lambda x: aten._fft_c2r.default(aten._fft_r2c.default(x, [1, 3], 0, True),
                                                                             [1, 3], 1, 5), ("fft_irfft",),
      id="_fft_c2r-odd-length"),
    I(aten._fft_c2c.default, [(2, 3, 4, 2)], lambda x: aten.view_as_real.default(aten._fft_c2c.default(
        aten.view_as_complex.default(x), [1], 0, False).conj().resolve_conj()), ("fft_ifft", "view_as_complex", "conj")),
    I(aten.cumprod.default, [(2, 5, 3)], lambda x: torch.cumprod(x, 1), ("cumprod",), ["f", "i"]),
    I(aten.logcumsumexp.default, [(2, 5, 3)], lambda x: torch.logcumsumexp(x, -1), ("logcumsumexp",)),
    held(aten.view_as_complex.default, (2, 8, 8, 4), lambda: _GlobalFilter(),
         lambda m, x: m(x), "fft_irfft", id="GFNet-global-filter"),
]


class _GlobalFilter(nn.Module):
    """GFNet's global filter: a learned complex weight multiplies the image's 2-D spectrum."""

    def __init__(self):
        super().__init__()
        self.complex_weight = nn.Parameter(torch.randn(8, 5, 4, 2) * 0.02)

    def forward(self, x):
        spectrum = torch.fft.rfft2(x, dim=(1, 2), norm="ortho") * torch.view_as_complex(self.complex_weight)
        return torch.fft.irfft2(spectrum, s=(8, 8), dim=(1, 2), norm="ortho")


def _randomised(module: nn.Module) -> nn.Module:
    """The module with random weights and running statistics (not the 1s and 0s it starts with)."""
    with torch.no_grad():
        for name, t in module.state_dict().items():
            if t.is_floating_point():
                t.copy_(torch.rand_like(t) + 0.5 if "var" in name or name.endswith("weight") else torch.randn_like(t))
    return module


class Call(nn.Module):
    """forward(x0, x1, ...) is `fn` of its inputs (named, as torch.export needs)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn


class Call1(Call):
    def forward(self, x0):
        return self.fn(x0)


class Call2(Call):
    def forward(self, x0, x1):
        return self.fn(x0, x1)


class Call3(Call):
    def forward(self, x0, x1, x2):
        return self.fn(x0, x1, x2)


def _module(case: I) -> nn.Module:
    torch.manual_seed(0)
    if case.module is not None:
        return case.module().eval()
    return (Call1, Call2, Call3)[len(case.shapes) - 1](case.call).eval()



def _flat(value) -> list:
    return [t for v in value for t in _flat(v)] if isinstance(value, (list, tuple)) else [value]


@pytest.mark.slow  # a trace per case and element type: about a minute in all
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_core_op_imports_and_computes_what_torch_does(case, monkeypatch):
    import importlib
    trace = importlib.import_module("archgraph.fromtorch.trace")  # the module (the package's `trace` is its function)
    traced: list[set] = []  # the ops of each exported graph, before functionalising and lowering

    def functional(program, real=trace.functional):
        traced.append({n.target for n in program.graph.nodes})
        return real(program)
    monkeypatch.setattr(trace, "functional", functional)
    module = _module(case)
    gen = torch.Generator().manual_seed(0)
    for variant in case.kinds:
        assert len(variant.split()) == len(case.shapes), f"variant {variant!r} for {len(case.shapes)} inputs"
        xs = [_tensor(kind, shape, gen) for kind, shape in zip(variant.split(), case.shapes)]
        text = to_spec(module, *xs)
        assert case.target in traced[-1], f"the trace does not hold {case.target}"
        ops = {line.split("op: ")[1].split(",")[0].rstrip("}") for line in text.splitlines() if "op: " in line}
        assert set(case.expect) <= ops, f"expected ops {case.expect} in:\n{text}"
        mine = to_module(load_text(text)).eval()
        mine.load_state_dict(module.state_dict(), strict=True)
        got = _flat(list(mine(*xs).values()))
        want = _flat(module(*xs))
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{case.name} on {variant}, output {i}")


def test_every_core_aten_op_is_imported_or_refused_with_its_reason():
    core = core_ops()
    assert len(core) >= 180, f"only {len(core)} core ops: torch's tags changed"
    imported = {case.target for case in CASES}
    unaccounted = sorted(str(t) for t in core - imported - SKIP - set(REFUSED) - set(PENDING))
    assert not unaccounted, f"core ops neither imported by a case, refused with a reason, nor skipped: {unaccounted}"
    assert not imported & set(PENDING), f"imported, no longer pending: {sorted(map(str, imported & set(PENDING)))}"
    assert all(t in TABLE or mutates(t) for t in core - SKIP - set(PENDING)), "a core op without a rule"
    assert not [t for t in TABLE if mutates(t)], "a rule for an op that writes a tensor"
    assert not set(PENDING) - core, "pending ops that are not core"
    assert all(len(why) > 40 for why in REFUSED.values())


@pytest.mark.parametrize("target, call, words", [
    (aten.randn.default, lambda x: x + aten.randn.default([2, 5]), "random numbers"),
    (aten.nonzero.default, lambda x: aten.nonzero.default(x).sum(), "depends on the data"),
])
def test_a_core_op_a_spec_cannot_hold_is_refused_with_its_reason(target, call, words):
    with pytest.raises(ArchgraphError) as info:
        to_spec(Call1(call), torch.randn(2, 5))
    assert f"cannot import '{target.name().replace('::', '.')}'" in info.value.message
    assert words in info.value.message



class _ShortConvolution(nn.Module):
    """Bailing-hybrid's and GLM-5-Next's linear attention: the short convolution's weight read as a
    value (self.conv1d.weight.squeeze(1), unsqueezed again by F.conv1d's caller)."""

    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(6, 6, 4, groups=6, padding=3)

    def forward(self, x):
        weight = self.conv1d.weight.squeeze(1)
        out = nn.functional.conv1d(x, weight.unsqueeze(1), self.conv1d.bias, padding=3, groups=6)
        return nn.functional.silu(out[..., :x.shape[-1]])


class _Codebook(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Buffer(torch.randn(10, 4))

    def forward(self, ids):
        return nn.functional.embedding(ids, self.embed)


@pytest.mark.parametrize("make, shape, lines", [
    (_ShortConvolution, (2, 6, 7), ["  - {name: conv1d.weight, op: parameter, shape: [6, 1, 4], tensor: ''}",
                                    "  - {name: conv, op: conv, in: [x, unsqueeze, conv1d.bias], padding: 3, groups: 6}"]),
    # EnCodec's convolutions: weight norm's g · v / ‖v‖ computed in forward
    (lambda: nn.Sequential(nn.utils.parametrizations.weight_norm(nn.Conv1d(3, 5, 3, stride=2))), (2, 3, 11),
     ["  - {name: 0.parametrizations.weight.original0, op: parameter, shape: [5, 1, 1], tensor: ''}",
      "  - {name: 0.conv, op: conv, in: [input, 0.parametrizations.weight.0.mul, 0.bias], stride: 2}"]),
    # EnCodec's decoder: a weight-normed transposed convolution
    (lambda: nn.Sequential(nn.utils.parametrizations.weight_norm(nn.ConvTranspose1d(3, 5, 4, stride=2))), (2, 3, 11),
     ["  - {name: 0.conv_transpose, op: conv_transpose, in: [input, 0.parametrizations.weight.0.mul, 0.bias], stride: 2}"]),
    # EnCodec's codebook: an embedding of a table not named weight (F.embedding(ids, self.embed), a buffer)
    (lambda: _Codebook(), (2, 7), ["  - {name: embed, op: buffer, shape: [10, 4]}",
                                   "  - {name: index_select, op: index_select, in: [embed, reshape], dim: 0}"]),
], ids=["weight-read-as-a-value", "weight-norm", "weight-norm-transposed", "embedding-of-a-buffer"])
def test_a_convolution_whose_weight_is_computed_reads_it_as_an_input(make, shape, lines):
    torch.manual_seed(0)
    module = make().eval()
    x = torch.randint(0, 10, shape) if isinstance(module, _Codebook) else torch.randn(*shape)
    text = to_spec(module, x)  # was: its tensors (?, conv1d.bias) are not the conv1d's own (weight, bias) of one module
    for line in lines:
        assert line in text, text
    assert load_text(text).params().total == sum(p.numel() for p in module.parameters())
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        torch.testing.assert_close(mine(x)["output"], module(x), rtol=1e-5, atol=1e-6)


class _OverlappingChunks(nn.Module):
    """Longformer's _chunk: a tensor viewed as chunks of 2w, then as_strided into chunks overlapping by w,
    its strides counted in the storage of the tensor the view shares (here a transpose's copy, viewed)."""

    def forward(self, x):  # [B, D, S]
        hidden = x.transpose(1, 2).contiguous()  # [B, S, D], owning its storage
        hidden = hidden.view(hidden.size(0), hidden.size(1) // 4, 4, hidden.size(2))  # a view of it
        size, stride = list(hidden.size()), list(hidden.stride())
        size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
        chunks = hidden.as_strided(size=size, stride=stride)
        shifted = x.transpose(1, 2).as_strided((x.shape[0], 3, 2), (x.shape[1] * x.shape[2], 1, 3))  # of x's own storage
        return chunks * 2, shifted + 1


def test_as_strided_of_a_view_reads_the_storage_of_the_tensor_it_views():
    module = _OverlappingChunks()
    x = torch.randn(2, 3, 12)
    text = to_spec(module, x)  # was: a strided view of a tensor that is itself a strided view
    # the chunks: of the transposed copy [B, 3, 4, S] (its strides 12 S, 4 S, S, 1), overlapping by 2 rows
    assert "  - {name: as_strided, op: as_strided, in: reshape, size: [B, 5, 4, S], stride: [12 * S, 2 * S, S, 1]}" in text
    assert "  - {name: as_strided_1, op: as_strided, in: x, size: [B, 3, 2], stride: [12 * S, 1, 3]}" in text  # x's own
    for x in (x, torch.randn(3, 5, 12)):
        mine = to_module(load_text(text))
        ours, theirs = mine(x), module(x)
        torch.testing.assert_close(ours["output_0"], theirs[0])
        torch.testing.assert_close(ours["output_1"], theirs[1])


class _PaddedRows(nn.Module):
    """Siglip2's resized positions: each row's first n written, the rest with the first value; a row
    of exactly n leaves nothing to pad, an empty write (expand to [0, 3] a spec cannot hold)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 3))

    def forward(self, x):
        out = torch.empty(x.shape[0], 4, 3)
        for i in range(x.shape[0]):
            out[i, :4] = self.w * x[i, 0]
            out[i, 4:] = self.w[0]
        return out


def test_a_write_into_an_empty_slice_is_no_write():
    module = _PaddedRows()
    x = torch.randn(2, 5)
    text = to_spec(module, x)  # was: node 'expand': sizes must be positive or -1 (keep); received [0, 3]
    assert "op: expand" not in text and "slice_scatter" not in text  # each row written whole, once
    mine = to_module(load_text(text))
    mine.load_state_dict(module.state_dict(), strict=True)
    torch.testing.assert_close(mine(x)["output"], module(x))


class _NumpyChunks(nn.Module):
    """Phi-4's audio encoder: the chunks' starts made with numpy from the sequence's length (a
    symbolic size is an object to numpy, which torch cannot convert)."""

    def forward(self, x):
        import numpy as np
        starts = torch.tensor(np.arange(0, x.shape[1], 4))
        return x[:, starts] * 2


def test_a_size_handed_to_numpy_is_the_examples(tmp_path):
    from archgraph.load import load
    module = _NumpyChunks()
    x = torch.randn(2, 10, 3)
    text = to_spec(module, x)  # was: torch.export could not trace: can't convert np.ndarray of type numpy.object_
    assert "every size, which the code hands to numpy" in text
    text.write(tmp_path / "chunks.yaml")  # the starts [0, 4, 8]: values stored beside the spec
    torch.testing.assert_close(to_module(load(str(tmp_path / "chunks.yaml")))(x)["output"], module(x))
