"""The aten ops that read or write by index or position, rearrange or combine tensors: advanced
indexing (`index`, `index_put`), `scatter`s, `select_scatter`/`slice_scatter` (what in-place writes
become), `copy`, `flip`, `repeat`, `stack`/`unbind`, `diagonal`, `as_strided`, `sort`, `one_hot`,
`einsum`, `roll` and `addmm`, each as the archgraph op of the same meaning.  Registered into
`aten.TABLE` on import."""
from __future__ import annotations

import torch

from .aten import INT_MAX, Alias, Out, Refuse, aten, named, rule, within


def _indices(n, c, indices) -> tuple[list[int], list]:
    """The dims an aten index list indexes (its entries that are not None) and their tensors."""
    dims = [d for d, i in enumerate(indices) if i is not None]
    return dims, [indices[d] for d in dims]


@rule(aten.index.Tensor, aten._unsafe_index.Tensor)
def _index(n, c):
    """x[i, :, j]: `index` (x[ids] of 1-D ids on the first dim: `index_select`)."""
    x = n.args[0]
    dims, tensors = _indices(n, c, list(n.args[1]))
    if any(c.dtype(t) == torch.bool for t in tensors):
        raise Refuse("indexing by a boolean mask (its size depends on the data)")
    if dims == [0] and len(c.shape(tensors[0])) == 1:
        return Out("index_select", [x, tensors[0]], {"dim": 0})
    return Out("index", [x, *tensors], {"dims": dims})


@rule(aten.index_put.default, aten._unsafe_index_put.default)
def _index_put(n, c):
    a = named(n)
    dims, tensors = _indices(n, c, list(a["indices"]))
    hp: dict = {"dims": dims}
    if a["accumulate"]:
        hp["accumulate"] = True
    if any(c.dtype(t) == torch.bool for t in tensors):
        if len(tensors) != 1 or dims != [0]:
            raise Refuse("writing by a boolean mask beside other indices")
        hp["mask"] = True
    return Out("index_put", [a["self"], a["values"], *tensors], hp)


@rule(aten.scatter.src, aten.scatter.value)
def _scatter(n, c):
    a = named(n)
    if n.target is aten.scatter.value:
        return Out("scatter", [a["self"], a["index"]], {"dim": a["dim"], "value": float(c.number(a["value"]))})
    return Out("scatter", [a["self"], a["index"], a["src"]], {"dim": a["dim"]})


@rule(aten.scatter_add.default)
def _scatter_add(n, c):
    a = named(n)
    return Out("scatter_add", [a["self"], a["index"], a["src"]], {"dim": a["dim"]})


@rule(aten.scatter_reduce.two)
def _scatter_reduce(n, c):
    a = named(n)
    hp = {"dim": a["dim"], "reduce": a["reduce"]}
    if not a["include_self"]:
        hp["include_self"] = False
    return Out("scatter_reduce", [a["self"], a["index"], a["src"]], hp)


@rule(aten.select_scatter.default)
def _select_scatter(n, c):
    a = named(n)
    return Out("select_scatter", [a["self"], a["src"]], {"dim": a["dim"], "index": a["index"]})


@rule(aten.slice_scatter.default)
def _slice_scatter(n, c):
    a = named(n)
    within(c, a["self"], a["dim"], a["end"])
    hp = {"dim": a["dim"]}
    if a["start"] not in (None, 0):
        hp["start"] = c.size(a["start"])
    if a["end"] is not None and a["end"] != INT_MAX:
        hp["end"] = c.size(a["end"])
    if a["step"] != 1:
        hp["step"] = a["step"]
    return Out("slice_scatter", [a["self"], a["src"]], hp)


@rule(aten.copy.default)
def _copy(n, c):
    """x.copy_(src) as a value: src itself where it has x's shape and element type, else `copy`."""
    x, src = n.args[0], n.args[1]
    if c.shape(x) == c.shape(src) and c.dtype(x) == c.dtype(src):
        return Alias(src)
    return Out("copy", [x, src])


@rule(aten.flip.default)
def _flip(n, c):
    return Out("flip", [n.args[0]], {"dims": list(n.args[1])})


@rule(aten.repeat.default)
def _repeat(n, c):
    return Out("repeat", [n.args[0]], {"repeats": [c.size(r) for r in n.args[1]]})


@rule(aten.squeeze.dims)
def _squeeze_dims(n, c):
    """Several size-1 dims dropped: one squeeze each, the last dim first (the others keep their place)."""
    rank = len(c.shape(n.args[0]))
    dims = sorted({d % rank for d in n.args[1]}, reverse=True)
    if not dims:
        return Alias(n.args[0])
    out, nodes = n.args[0], []
    for d in dims:
        out = Out("squeeze", [out], {"dim": d})
        nodes.append(out)
    return nodes


@rule(aten.diagonal.default)
def _diagonal(n, c):
    a = named(n)
    return Out("diagonal", [a["self"]], {"offset": a["offset"], "dim1": a["dim1"], "dim2": a["dim2"]})


@rule(aten.as_strided.default)
def _as_strided(n, c):
    """torch.as_strided reads its input's storage, not its elements: of a view (Longformer's chunks of a
    tensor viewed [B, chunks, 2w, D]), the strides count in the storage the view shares with the tensor
    it views.  That tensor, reached back through the ops that return views, is the op's input where it
    owns its storage whole (contiguous from its start, no element more)."""
    a = named(n)
    source = storage_owner(a["self"])
    if source is None:
        raise Refuse("a strided view of a tensor that is itself a strided view of no tensor the spec holds "
                     "whole (archgraph reads the input in its row-major order)")
    hp = {"size": [c.size(s) for s in a["size"]], "stride": [c.size(s) for s in a["stride"]]}
    if a["storage_offset"]:
        hp["storage_offset"] = c.size(a["storage_offset"])
    return Out("as_strided", [source], hp)


def storage_owner(x):
    """`x`, or the tensor whose storage it views through ops that return a view of their first input
    (view, transpose, slice, ...), where that tensor holds its storage whole; None where none does."""
    for _ in range(64):
        if _owns(x.meta.get("val")):
            return x
        schema = getattr(x.target, "_schema", None) if x.op == "call_function" else None
        if schema is None or not schema.returns or schema.returns[0].alias_info is None or schema.is_mutable \
                or not isinstance(x.args[0], torch.fx.Node):
            return None
        x = x.args[0]
    return None


def _owns(value) -> bool:
    """Whether the traced tensor is its storage, in row-major order from its start."""
    if not isinstance(value, torch.Tensor) or not value.is_contiguous() or value.storage_offset() != 0:
        return False
    from torch.fx.experimental.symbolic_shapes import statically_known_true
    try:
        return statically_known_true(value.untyped_storage().nbytes() == value.numel() * value.element_size())
    except Exception:  # noqa: BLE001  a storage whose size is not known: not known to be the tensor's
        return False


@rule(aten.sort.default, aten.sort.stable)
def _sort(n, c):
    a = named(n)
    hp = {"dim": a["dim"]}
    if a["descending"]:
        hp["descending"] = True
    if a.get("stable"):
        hp["stable"] = True
    return Out("sort", [a["self"]], hp)


@rule(aten.median.dim, aten.median.default)
def _median(n, c):
    a = named(n)
    if n.target is aten.median.default:
        return Out("median", [a["self"]], {})
    return Out("median", [a["self"]], {"dim": a["dim"], **({"keepdim": True} if a.get("keepdim") else {})})


@rule(aten.stack.default)
def _stack(n, c):
    return Out("stack", list(n.args[0]), {"dim": n.args[1] if len(n.args) > 1 else 0})


@rule(aten.unbind.int)
def _unbind(n, c):
    return Out("unbind", [n.args[0]], {"dim": n.args[1] if len(n.args) > 1 else 0})


@rule(aten.one_hot.default)
def _one_hot(n, c):
    classes = named(n)["num_classes"]
    if classes is None or classes < 0:
        raise Refuse("one_hot without num_classes (the largest class plus one depends on the data)")
    return Out("one_hot", [n.args[0]], {"num_classes": classes})


@rule(aten.einsum.default)
def _einsum(n, c):
    return Out("einsum", list(n.args[1]), {"equation": n.args[0]})


@rule(aten.roll.default)
def _roll(n, c):
    a = named(n)
    shifts, dims = list(a["shifts"]), list(a["dims"] or [])
    if len(dims) != len(shifts):
        raise Refuse("a roll of the flattened tensor (no dims)")
    return Out("roll", [a["self"]], {"shifts": [c.size(s) for s in shifts], "dims": dims})


@rule(aten.addmm.default)
def _addmm(n, c):
    """beta·bias + alpha·(m1 @ m2): matmul, its scalings as `mul`s, add (beta 0: the bias is not read)."""
    a = named(n)
    product = Out("matmul", [a["mat1"], a["mat2"]])
    nodes = [product]
    if a["alpha"] != 1:
        product = Out("mul", [product], {"constant": float(a["alpha"])})
        nodes.append(product)
    if a["beta"] == 0:
        return nodes
    bias = a["self"]
    if a["beta"] != 1:
        bias = Out("mul", [bias], {"constant": float(a["beta"])})
        nodes.append(bias)
    return [*nodes, Out("add", [product, bias])]


@rule(aten.bucketize.Tensor)
def _bucketize(n, c):
    a = named(n)
    hp = {k: True for k in ("right", "out_int32") if a[k]}
    return Out("bucketize", [a["self"], a["boundaries"]], hp)
