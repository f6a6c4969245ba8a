"""One aten op of an exported graph as one archgraph op: `TABLE[target](node, c)` returns the spec
node it becomes, or an alias of a value it passes through unchanged (a cast to the dtype the value
already has).  An aten op not in the table is refused by `convert` (named, with its module path).

`c` is the converter (`archgraph.fromtorch.convert`): `c.ref(arg)` the reference of an input,
`c.size(v)` a size as a number or an expression of the symbolic sizes (B, S), `c.dtype(node)`.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..dtypes import ELEMENT_BYTES

aten = torch.ops.aten
INT_MAX = 2 ** 63 - 1
DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
          torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32", torch.uint8: "uint8", torch.bool: "bool",
          torch.complex64: "complex64", torch.complex128: "complex128"}


@dataclass
class Out:
    """A spec node: `op` with hyperparameters `hp`, reading `inputs` (fx values or refs); `owner`
    names the module path whose tensors it holds (a Linear's), `tensors` the fx placeholders it owns
    by local name (weight, bias)."""

    op: str
    inputs: list = field(default_factory=list)
    hp: dict = field(default_factory=dict)
    owner: str | None = None
    tensors: dict = field(default_factory=dict)


@dataclass
class Alias:
    """The node computes nothing archgraph needs: its value is `of`'s."""

    of: Any


class Refuse(Exception):
    """The node cannot be expressed; the message says why (the caller adds the op and the path)."""


Rule = Callable[[Any, Any], "Out | Alias | list"]
TABLE: dict[Any, Rule] = {}


def rule(*targets):
    """Register a rule for aten ops that compute a value.  An op that writes a tensor (`copy_`,
    `index_put_`, an out= variant) never has one: its value is not the tensor it changes, so the
    importer lowers it to the functional op (`decompose`), which reads the write where it lands."""
    def register(fn):
        for t in targets:
            if mutates(t):
                raise ValueError(f"{t} writes a tensor: it is imported through its functional form")
            TABLE[t] = fn
        return fn
    return register


def mutates(target) -> bool:
    """Whether the aten op writes one of its arguments (in place, or an out= tensor)."""
    schema = getattr(target, "_schema", None)
    return schema is not None and schema.is_mutable


def named(n) -> dict:
    """The node's arguments by the names of its op's schema, defaults filled in (`dim`, `keepdim`)."""
    out = {}
    for i, arg in enumerate(n.target._schema.arguments):
        if i < len(n.args) and not arg.kwarg_only:
            out[arg.name] = n.args[i]
        elif arg.name in n.kwargs:
            out[arg.name] = n.kwargs[arg.name]
        else:
            out[arg.name] = arg.default_value if arg.has_default_value() else None
    return out


def first_output_only(n, what: str) -> None:
    """Refuse a node whose outputs after the first are read (the indices of a max pooling): the op it
    becomes computes the first only."""
    for user in n.users:
        if user.target is operator.getitem and user.args[1] != 0 and user.users:
            raise Refuse(f"its output {user.args[1]} ({what}) is read; archgraph's op gives the first only")


def simple(name: str, *targets, **fixed):
    """Ops of one input and no hyperparameters (or fixed ones)."""
    rule(*targets)(lambda n, c: Out(name, [n.args[0]], dict(fixed)))


simple("relu", aten.relu.default)
simple("silu", aten.silu.default)
simple("tanh", aten.tanh.default)
simple("sigmoid", aten.sigmoid.default)
simple("neg", aten.neg.default)
simple("exp", aten.exp.default)
simple("log", aten.log.default)
simple("sin", aten.sin.default)
simple("cos", aten.cos.default)
simple("abs", aten.abs.default)
simple("sqrt", aten.sqrt.default)
simple("rsqrt", aten.rsqrt.default)
simple("reciprocal", aten.reciprocal.default)
simple("square", aten.square.default)


@rule(aten.matmul.default, aten.bmm.default, aten.mm.default)
def _matmul(n, c):
    return Out("matmul", [n.args[0], n.args[1]])


@rule(aten.gelu.default)
def _gelu(n, c):
    approximate = n.kwargs.get("approximate", n.args[1] if len(n.args) > 1 else "none")
    return Out("gelu", [n.args[0]], {"approximate": approximate} if approximate != "none" else {})


@rule(aten.dropout.default, aten.feature_dropout.default)
def _dropout(n, c):
    return Out("dropout", [n.args[0]], {"p": float(n.args[1])})


@rule(aten.softmax.int, aten._softmax.default)
def _softmax(n, c):
    return Out("softmax", [n.args[0]], {"dim": n.args[1]})


@rule(aten.clone.default, aten.contiguous.default, aten.alias.default, aten.detach.default,
      aten.lift_fresh_copy.default)
def _same(n, c):
    return Alias(n.args[0])


@rule(aten.to.dtype, aten.to.dtype_layout, aten.to.device, aten._to_copy.default, aten.type_as.default)
def _to(n, c):
    source, target = n.args[0], n.meta["val"].dtype
    if c.dtype(source) == target:
        return Alias(source)
    name = str(target).removeprefix("torch.")
    if name not in ELEMENT_BYTES:
        raise Refuse(f"a cast to {target}, an element type archgraph does not name")
    return Out("cast", [source], {"dtype": name})


# -- arithmetic: a second operand that is a number becomes the op's constant ------------------------
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def is_float(dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def scalar(value, dtype) -> Out:
    """A number as a 0-d tensor of `dtype` (`full` of shape []): the operand of an integer operation,
    which a float constant would turn into floats."""
    return Out("full", [], {"shape": [], "value": float(value), "dtype": DTYPES[dtype]})


def complex_scalar(value: complex, dtype) -> list[Out]:
    """A complex number as a 0-d tensor of the complex type `dtype` (the result's: a Python complex
    times float32 values is complex64): complex(real, imag) of two `full` scalars of its parts' type."""
    part = {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype)
    if part is None:
        raise Refuse(f"a complex number {value} in a result of element type {dtype}")
    real, imag = scalar(value.real, part), scalar(value.imag, part)
    return [real, imag, Out("complex", [real, imag])]


def operands(n, c, name: str, a, b, reverse_ok: bool = True) -> list:
    """`name` of a and b, either of which may be a number: the op with a `constant` (and `reverse`
    when the number comes first), or where the result is whole numbers (int64 ids plus 1) the number
    as a 0-d tensor of the result's type, so the integers stay integers.  Returns the nodes to emit."""
    if c.is_value(a) and c.is_value(b):
        return [Out(name, [a, b])]
    if isinstance(b if c.is_value(a) else a, complex):  # 1j * x: the number as a 0-d complex tensor
        const = complex_scalar(b if c.is_value(a) else a, c.dtype(n))
        return [*const, Out(name, [a, const[-1]] if c.is_value(a) else [const[-1], b])]
    number, tensor, first = (c.number(b), a, False) if c.is_value(a) else (c.number(a), b, True)
    result = c.dtype(n) if c.is_value(n) else None
    if name not in COMPARISONS and result is not None and not is_float(result):
        const = scalar(number, torch.bool if isinstance(number, bool) else
                       torch.int64 if isinstance(number, int) else result)
        return [const, Out(name, [const, tensor] if first else [tensor, const])]
    if first and not reverse_ok:
        return [Out(name, [tensor], {"constant": float(number)})]
    return [Out(name, [tensor], {"constant": float(number), **({"reverse": True} if first else {})})]


def _binary(name: str, reverse_ok: bool = True):
    def convert(n, c):
        a, b = n.args[0], n.args[1]
        alpha = n.kwargs.get("alpha", n.args[2] if len(n.args) > 2 else 1)
        scaled: list = []
        if alpha != 1:  # torch.add(a, b, alpha=k): a + k·b
            if not c.is_value(b):
                b = c.number(b) * alpha
            else:
                scaled = operands(n, c, "mul", b, alpha)
                b = scaled[-1]
        if isinstance(b, Out):
            return [*scaled, Out(name, [a, b])]
        return operands(n, c, name, a, b, reverse_ok)
    return convert


rule(aten.add.Tensor, aten.add.Scalar)(_binary("add", reverse_ok=False))
rule(aten.mul.Tensor, aten.mul.Scalar)(_binary("mul", reverse_ok=False))
rule(aten.sub.Tensor, aten.sub.Scalar)(_binary("sub"))
rule(aten.div.Tensor, aten.div.Scalar)(_binary("div"))
rule(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor)(_binary("pow"))
rule(aten.maximum.default)(_binary("maximum"))
rule(aten.minimum.default)(_binary("minimum"))
for _name in COMPARISONS:
    rule(getattr(aten, _name).Tensor, getattr(aten, _name).Scalar)(_binary(_name))


@rule(aten.pow.Scalar)
def _rpow(n, c):
    return operands(n, c, "pow", n.args[0], n.args[1])


@rule(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(n, c):
    if n.kwargs.get("alpha", 1) != 1:
        raise Refuse(f"alpha={n.kwargs['alpha']}")
    return operands(n, c, "sub", n.args[1], n.args[0])


# -- plumbing --------------------------------------------------------------------------------------
@rule(aten.view.default, aten.reshape.default, aten._unsafe_view.default)
def _reshape(n, c):
    return Out("reshape", [n.args[0]], {"shape": [c.size(d) for d in n.args[1]]})


@rule(aten.transpose.int)
def _transpose(n, c):
    return Out("transpose", [n.args[0]], {"dim0": n.args[1], "dim1": n.args[2]})


@rule(aten.t.default)
def _t(n, c):
    return Out("transpose", [n.args[0]], {"dim0": 0, "dim1": 1})


@rule(aten.permute.default)
def _permute(n, c):
    return Out("permute", [n.args[0]], {"dims": list(n.args[1])})


@rule(aten.unsqueeze.default)
def _unsqueeze(n, c):
    return Out("unsqueeze", [n.args[0]], {"dim": n.args[1]})


@rule(aten.squeeze.dim)
def _squeeze(n, c):
    return Out("squeeze", [n.args[0]], {"dim": n.args[1]})


@rule(aten.expand.default)
def _expand(n, c):
    return Out("expand", [n.args[0]], {"sizes": [c.size(d) for d in n.args[1]]})


@rule(aten.flatten.using_ints)
def _flatten(n, c):
    start = n.args[1] if len(n.args) > 1 else 0
    end = n.args[2] if len(n.args) > 2 else -1
    return Out("flatten", [n.args[0]], {"start_dim": start, "end_dim": end})


@rule(aten.cat.default, aten.concat.default)
def _cat(n, c):
    """torch.cat, its empty inputs left out (t[..., 8:] of a dim of 8, concatenated back: rotary over a
    head's every dim), as they add nothing; one input left is that input."""
    parts = [t for t in n.args[0] if not empty(t)] or list(n.args[0])[:1]
    if len(parts) == 1:
        return Alias(parts[0])
    return Out("concat", parts, {"dim": n.args[1] if len(n.args) > 1 else 0})


def empty(t) -> bool:
    """Whether the traced value holds no element for every size of the inputs (a dim of 0)."""
    value = t.meta.get("val") if isinstance(t, torch.fx.Node) else None
    return isinstance(value, torch.Tensor) and any(isinstance(d, int) and d == 0 for d in value.shape)


@rule(aten.slice.Tensor)
def _slice(n, c):
    dim = n.args[1] if len(n.args) > 1 else 0
    start = n.args[2] if len(n.args) > 2 else None
    end = n.args[3] if len(n.args) > 3 else None
    step = n.args[4] if len(n.args) > 4 else 1
    start, end = (from_start(n.args[0], dim, v) for v in (start, end))
    within(c, n.args[0], dim, end)
    hp = {"dim": dim}
    if start not in (None, 0):
        hp["start"] = c.size(start)
    if end is not None and end != INT_MAX:
        hp["end"] = c.size(end)
    if hp.get("start") == 0:
        del hp["start"]
    if step != 1:
        hp["step"] = step
    if len(hp) == 1 or whole(c, n.args[0], hp):  # x[:], x[:, 0:n] of n: the value itself
        return Alias(n.args[0])
    return Out("slice", [n.args[0]], hp)


def whole(c, x, hp: dict) -> bool:
    """Whether a slice of step 1 from 0 ends at or past its dim's size (x[:, 0:12] of 12, which a loop's
    first window takes): the tensor itself, as a later repetition of the same loop reads it."""
    size, end = c.size(x.meta["val"].shape[hp["dim"]]), hp.get("end")
    if "start" in hp or "step" in hp or end is None:
        return False
    return end == size or isinstance(end, int) and isinstance(size, int) and end >= size


def from_start(x, dim: int, bound):
    """A slice's symbolic bound that is negative (x[..., -n:] of a symbolic n: torch counts it from the
    end, having checked its sign for every size) as the index from the start, the dim's size plus it:
    a spec's negative bound is a number, its symbolic one an index."""
    value = bound.meta.get("val") if isinstance(bound, torch.fx.Node) else bound
    if not isinstance(value, torch.SymInt) or value.node.hint is None or value.node.hint >= 0:
        return bound
    size = x.meta["val"].shape[dim]
    return size + value


def within(c, x, dim: int, end) -> None:
    """Refuse a slice's symbolic end that the sizes' ranges do not place within the dim or past its end
    (x[:, :S] of a dim of S2, which torch took to be no longer): a spec's sizes hold no relation between
    two names, so it could not decide the slice's length.  A bound of the trace counts (S <= 64 of a
    table of 64; S >= 9 of a table of 8, which the slice takes whole)."""
    if end is None or end == INT_MAX:
        return
    size = x.meta["val"].shape[dim]
    end = end.meta.get("val") if isinstance(end, torch.fx.Node) else end
    if isinstance(end, int) and (isinstance(size, int) or end < 0):
        return
    from torch.utils._sympy.value_ranges import bound_sympy
    as_expr = lambda v: v.node.expr if isinstance(v, torch.SymInt) else v  # noqa: E731
    room = bound_sympy(as_expr(size) - as_expr(end), c.ep.range_constraints)
    if not (room.lower >= 0 or room.upper <= 0):  # neither within the dim nor past its end for every size
        raise Refuse(f"a slice ending at {c.size(end)} of a dim of size {c.size(size)}, which torch took to be at "
                     "least as long: archgraph's sizes cannot say that one size is at most another")


@rule(aten.select.int)
def _select(n, c):
    return Out("select", [n.args[0]], {"dim": n.args[1], "index": n.args[2]})


@rule(aten.split.Tensor, aten.split_with_sizes.default, aten.chunk.default)
def _split(n, c):
    dim = n.args[2] if len(n.args) > 2 else 0
    parts = [c.size(t.shape[dim]) for t in n.meta["val"]]
    if n.target is aten.chunk.default and len(set(map(str, parts))) == 1:
        return Out("split", [n.args[0]], {"dim": dim, "sections": len(parts)})
    return Out("split", [n.args[0]], {"dim": dim, "sizes": parts})


@rule(aten.tril.default, aten.triu.default)
def _tri(n, c):
    return Out("tril" if n.target is aten.tril.default else "triu", [n.args[0]],
               {"diagonal": n.args[1] if len(n.args) > 1 else 0})


@rule(aten.where.self)
def _where(n, c):
    return Out("where", list(n.args[:3]))


@rule(aten.masked_scatter.default)
def _masked_scatter(n, c):
    return Out("masked_scatter", list(n.args[:3]))


@rule(aten.masked_fill.Scalar)
def _masked_fill(n, c):
    return Out("masked_fill", [n.args[0], n.args[1]], {"value": float(n.args[2])})


@rule(aten.arange.default, aten.arange.start, aten.arange.start_step)
def _arange(n, c):
    args = list(n.args)
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    hp = {"end": end if isinstance(end, float) else c.size(end)}  # a float range: arange(1 / 16, 1.0, 1 / 16)
    for key, value, default in (("start", start, 0), ("step", step, 1)):
        value = value if isinstance(value, (int, float)) else c.size(value)
        if not isinstance(value, (int, float)):  # arange(0, B * S, S): archgraph's arange steps by a number
            raise Refuse(f"a range whose {key} is the size {value} (archgraph's arange takes a number): "
                         "its length would follow from the input's sizes")
        if value != default:
            hp[key] = value
    dtype = n.meta["val"].dtype
    if dtype != torch.int64:
        hp["dtype"] = DTYPES[dtype]
    return Out("arange", [], hp)


EMPTY = (aten.empty.memory_format, aten.empty_strided.default, aten.empty_like.default, aten.new_empty.default)


@rule(aten.full.default, aten.ones.default, aten.zeros.default, aten.new_ones.default, aten.new_zeros.default,
      aten.ones_like.default, aten.zeros_like.default, aten.full_like.default, aten.new_full.default,
      aten.fill.Scalar, aten.scalar_tensor.default, *EMPTY)
def _full(n, c):
    """A tensor of one value, its shape the node's (sizes symbolic where the trace keeps them); an empty
    one (uninitialised memory, which the program writes before it reads) holds zeros."""
    value = {aten.ones.default: 1.0, aten.new_ones.default: 1.0, aten.ones_like.default: 1.0}.get(n.target, 0.0)
    if n.target in (aten.full.default, aten.full_like.default, aten.fill.Scalar):
        value = c.number(n.args[1])
    elif n.target in (aten.new_full.default,):
        value = c.number(n.args[2])
    elif n.target is aten.scalar_tensor.default:
        value = c.number(n.args[0])
    dtype = n.meta["val"].dtype
    if dtype not in DTYPES:
        raise Refuse(f"a tensor of element type {dtype}, which archgraph does not name")
    shape = [c.size(d) for d in n.meta["val"].shape]
    return Out("full", [], {"shape": shape, "value": float(value), "dtype": DTYPES[dtype]})


@rule(operator.getitem)
def _getitem(n, c):
    return Alias((n.args[0], n.args[1]))


# nodes that compute nothing a spec holds: shape assertions and reads of sizes (a size read is used
# through `c.size`, as a number or an expression of B and S)
SKIP = {aten._assert_tensor_metadata.default, aten.sym_size.int, aten._assert_scalar.default,
        aten.sym_constrain_range_for_size.default, torch.ops.aten._assert_async.msg, aten.sym_numel.default,
        aten.sym_stride.int, aten.sym_storage_offset.default, aten.sym_is_contiguous.default}

# Core ATen ops a spec cannot hold, each refused with its reason (tests/test_core_aten.py lists the
# rest of the Core ATen set as imported)
BACKWARD = "a gradient op (a backward pass), which the inference graph archgraph imports does not hold"
RANDOM = ("random numbers, which a spec does not draw (its forward computes the same values each run): "
          "give the values as an input")
REFUSED = {
    **dict.fromkeys([aten._adaptive_avg_pool2d_backward.default, aten.avg_pool2d_backward.default,
                     aten.convolution_backward.default, aten.embedding_dense_backward.default,
                     aten.max_pool2d_with_indices_backward.default, aten.native_group_norm_backward.default,
                     aten.native_layer_norm_backward.default], BACKWARD),
    **dict.fromkeys([aten.rand.default, aten.randn.default, aten.randperm.default, aten.rand_like.default,
                     aten.randn_like.default, aten.randint.default, aten.randint.low, aten.bernoulli.default,
                     aten.bernoulli.p, aten.multinomial.default, aten.normal.Tensor_Tensor], RANDOM),
    aten.nonzero.default: "the number of non-zero values is the length of its output, which depends on the "
                          "data (archgraph's sizes follow from the inputs' sizes)",
    aten._local_scalar_dense.default: "a tensor's value read into Python (Tensor.item()): what it decides "
                                      "depends on the data",
}


def _refuse(why: str) -> Rule:
    def refuse(n, c):
        raise Refuse(why)
    return refuse


for _target, _why in REFUSED.items():
    rule(_target)(_refuse(_why))


@rule(aten.gather.default)
def _gather(n, c):
    return Out("gather", [n.args[0], n.args[2]], {"dim": n.args[1]})


@rule(aten.index_select.default)
def _index_select(n, c):
    return Out("index_select", [n.args[0], n.args[2]], {"dim": n.args[1]})


@rule(aten.repeat_interleave.self_int)
def _repeat_interleave(n, c):
    """x.repeat_interleave(r, dim): each entry r times in a row, as x[..., None].expand(.., r).flatten.
    The count may be a size (positions repeated for each row of the batch: B); without a dim, of the
    flattened tensor, as torch repeats it."""
    x, repeats = n.args[0], n.args[1]
    dim = n.args[2] if len(n.args) > 2 else n.kwargs.get("dim")
    if c.is_value(repeats):
        raise Refuse("repeat_interleave by a tensor of counts")
    repeats, flat = c.size(repeats), []
    if dim is None:
        flat, dim = [Out("flatten", [x], {"start_dim": 0})], 0
    shape = [c.size(x.meta["val"].numel())] if flat else c.shape(x)
    d = dim % len(shape)
    wide = Out("unsqueeze", [flat[0] if flat else x], {"dim": d + 1})
    grown = Out("expand", [wide], {"sizes": [*shape[:d + 1], repeats, *shape[d + 1:]]})
    return [*flat, wide, grown, Out("flatten", [grown], {"start_dim": d, "end_dim": d + 1})]


@rule(aten.repeat_interleave.Tensor)
def _repeat_counts(n, c):
    """torch.repeat_interleave(counts): each index k counts[k] times, its length the counts' sum, which
    a trace specialised to the example fixes (Qwen-VL's towers: an image's patch count per frame).
    Index j of the result is the number of running sums of the counts at most j: cumsum, arange of the
    length, a comparison of every pair, and a sum."""
    counts = n.args[0]
    length = n.meta["val"].shape[0]
    if len(c.shape(counts)) != 1:
        raise Refuse("repeat_interleave of counts that are not one list")
    try:
        length = c.size(length)  # a number the example fixed, or one the trace pinned (u0 = 6)
    except Refuse:
        raise Refuse("repeat_interleave whose length (the counts' sum) depends on the data") from None
    ends = Out("cumsum", [counts], {"dim": 0})
    positions = Out("arange", [], {"end": length, **({} if c.dtype(n) == torch.int64 else
                                                             {"dtype": DTYPES[c.dtype(n)]})})
    column = Out("unsqueeze", [positions], {"dim": 1})
    past = Out("le", [ends, column])  # [length, k]: the ends at or before each position
    ones = Out("cast", [past], {"dtype": DTYPES[c.dtype(n)]})
    return [ends, positions, column, past, ones, Out("sum", [ones], {"dim": 1})]


@rule(aten.topk.default)
def _topk(n, c):
    k = n.args[1]
    dim = n.args[2] if len(n.args) > 2 else -1
    largest = n.args[3] if len(n.args) > 3 else True
    ordered = n.args[4] if len(n.args) > 4 else True
    hp = {"k": c.size(k), "dim": dim}
    if not largest:
        hp["largest"] = False
    if not ordered:
        hp["sorted"] = False
    return Out("topk", [n.args[0]], hp)


@rule(aten.baddbmm.default)
def _baddbmm(n, c):
    bias, a, b = n.args[:3]
    if n.kwargs.get("beta", 1) != 1 or n.kwargs.get("alpha", 1) != 1:
        raise Refuse("beta or alpha other than 1")
    product = Out("matmul", [a, b])
    return [product, Out("add", [product, bias])]

