"""The per-op conformance table (ONNX's one small graph per case): for an op and its hyperparameters,
the input shapes, the expected output shape(s) and FLOPs as formulas of the symbolic sizes, and the
PyTorch computation the op's forward must equal on random inputs of each element type it takes.

Data only (no torch import): tests/test_op_conformance.py runs it, tests/test_ops.py counts its ops
as covered.  A case is `C(op, hp, inputs, out, flops, ref, kinds)`:
- `inputs`: one shape per input, written as an expression list ("B, S, 4"); `out` likewise, or a
  list of them for several outputs; `flops` an expression.  Sizes: B=2, S=5, C=3, H=6, W=4, T=3,
  symbolic (`B`) for the shape rule, those numbers for the forward.
- `ref(t, *xs)`: what torch computes (t is torch), written from PyTorch's own function, never
  from archgraph.
- `kinds`: the input variants the forward is compared on, one word per input: f (normal floats),
  u (in (-0.9, 0.9)), p (positive), g (at least 1), s (floats with NaN and infinities), c (complex64), i (int64 in
  [-5, 5]), m (int64 in [1, 5]: a divisor), nK (int64 in [0, K)), b (bool), h (float64).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

SIZES = {"B": 2, "S": 5, "C": 3, "H": 6, "W": 4, "T": 3}


@dataclass
class C:
    op: str
    hp: dict
    inputs: list[str]
    out: str | list[str]
    flops: str | None
    ref: Callable[..., Any]
    kinds: list[str] = field(default_factory=list)
    id: str | None = None

    @property
    def name(self) -> str:
        return self.id or self.op


def unary(op: str, fn: str, cost: int, kinds=("f",), **hp) -> C:
    """An elementwise function of one input, as torch.<fn> computes it."""
    return C(op, hp, ["B, S, 3"], "B, S, 3", f"{cost} * B * S * 3", lambda t, x: getattr(t, fn)(x), list(kinds))


CASES = [
    # -- pointwise: one tensor ----------------------------------------------------------------------
    unary("acos", "acos", 4, ("u", "i")),
    unary("asin", "asin", 4, ("u",)),
    unary("atan", "atan", 4, ("f", "i")),
    unary("tan", "tan", 4, ("u",)),
    unary("sinh", "sinh", 4),
    unary("cosh", "cosh", 4),
    unary("asinh", "asinh", 4),
    unary("acosh", "acosh", 4, ("g",)),
    unary("atanh", "atanh", 4, ("u",)),
    unary("erf", "erf", 4, ("f", "i")),
    unary("expm1", "expm1", 4),
    unary("log1p", "log1p", 4, ("p",)),
    unary("log2", "log2", 4, ("p", "n9")),
    unary("log10", "log10", 4, ("p",)),
    unary("ceil", "ceil", 1, ("f", "i")),
    unary("trunc", "trunc", 1, ("f", "i")),
    unary("round", "round", 1, ("f", "i")),
    unary("sign", "sign", 1, ("f", "i", "b")),
    unary("isinf", "isinf", 1, ("s", "i")),
    unary("isnan", "isnan", 1, ("s",)),
    unary("bitwise_not", "bitwise_not", 1, ("i", "b")),
    unary("logical_not", "logical_not", 1, ("f", "i", "b")),
    C("nan_to_num", {}, ["B, S"], "B, S", "B * S", lambda t, x: t.nan_to_num(x), ["s"]),
    C("nan_to_num", {"nan": 1.0, "posinf": 100.0, "neginf": -100.0}, ["B, S"], "B, S", "B * S",
      lambda t, x: t.nan_to_num(x, 1.0, 100.0, -100.0), ["s"], id="nan_to_num-given"),
    C("elu", {}, ["B, S"], "B, S", "5 * B * S", lambda t, x: t.nn.functional.elu(x), ["f"]),
    C("elu", {"alpha": 1.6732632423543772, "scale": 1.0507009873554805}, ["B, S"], "B, S", "5 * B * S",
      lambda t, x: t.nn.functional.selu(x), ["f"], id="elu-selu"),
    C("elu", {"alpha": 2.0, "input_scale": 0.5}, ["B, S"], "B, S", "5 * B * S",
      lambda t, x: t.nn.functional.celu(x, 2.0), ["f"], id="elu-celu"),
    C("hardtanh", {"min_val": 0.0, "max_val": 6.0}, ["B, S"], "B, S", "B * S",
      lambda t, x: t.nn.functional.relu6(x), ["f"], id="hardtanh-relu6"),
    C("hardtanh", {}, ["B, S"], "B, S", "B * S", lambda t, x: t.nn.functional.hardtanh(x), ["f", "i"]),
    C("leaky_relu", {"negative_slope": 0.2}, ["B, S"], "B, S", "2 * B * S",
      lambda t, x: t.nn.functional.leaky_relu(x, 0.2), ["f"]),
    C("softplus", {"beta": 2.0, "threshold": 1.0}, ["B, S"], "B, S", "4 * B * S",
      lambda t, x: t.nn.functional.softplus(x, 2.0, 1.0), ["f"]),
    C("hardsigmoid", {}, ["B, S"], "B, S", "3 * B * S", lambda t, x: t.nn.functional.hardsigmoid(x), ["f"]),
    C("logsigmoid", {}, ["B, S"], "B, S", "5 * B * S", lambda t, x: t.nn.functional.logsigmoid(x), ["f"]),
    C("log_softmax", {"dim": 1}, ["B, S, 3"], "B, S, 3", "6 * B * S * 3",
      lambda t, x: t.log_softmax(x, 1), ["f"]),

    # -- two tensors ----------------------------------------------------------------------------------
    C("atan2", {}, ["B, S", "S"], "B, S", "4 * B * S", lambda t, a, b: t.atan2(a, b), ["f f", "i i"]),
    C("bitwise_and", {}, ["B, S", "B, 1"], "B, S", "B * S", lambda t, a, b: a & b, ["i i", "b b"]),
    C("bitwise_or", {}, ["B, S", "S"], "B, S", "B * S", lambda t, a, b: a | b, ["i i", "b b"]),
    C("bitwise_xor", {}, ["B, S", "B, S"], "B, S", "B * S", lambda t, a, b: a ^ b, ["i i", "b b"]),
    C("logical_and", {}, ["B, S", "S"], "B, S", "B * S", lambda t, a, b: t.logical_and(a, b), ["f i", "b b"]),
    C("logical_or", {}, ["B, S", "S"], "B, S", "B * S", lambda t, a, b: t.logical_or(a, b), ["i f", "b b"]),
    C("logical_xor", {}, ["B, S", "S"], "B, S", "B * S", lambda t, a, b: t.logical_xor(a, b), ["f f", "b i"]),
    C("fmod", {}, ["B, S", "S"], "B, S", "B * S", lambda t, a, b: t.fmod(a, b), ["f p", "i m"]),
    C("fmod", {"constant": 1.5}, ["B, S"], "B, S", "B * S", lambda t, a: t.fmod(a, 1.5), ["f", "i"],
      id="fmod-constant"),
    C("remainder", {}, ["B, S", "S"], "B, S", "B * S", lambda t, a, b: t.remainder(a, b), ["f p", "i m"]),
    C("remainder", {"constant": 2.0, "reverse": True}, ["B, S"], "B, S", "B * S",
      lambda t, a: t.remainder(t.tensor(2.0), a), ["p"], id="remainder-reverse"),
    C("div", {"rounding_mode": "floor"}, ["B, S", "S"], "B, S", "B * S",
      lambda t, a, b: t.div(a, b, rounding_mode="floor"), ["f p", "i m"], id="div-floor"),
    C("div", {"rounding_mode": "trunc", "constant": 3.0}, ["B, S"], "B, S", "B * S",
      lambda t, a: t.div(a, 3.0, rounding_mode="trunc"), ["f"], id="div-trunc-constant"),
    C("eq", {"constant": 2.0}, ["B, S"], "B, S", "B * S", lambda t, a: a == 2, ["i", "f"], id="eq-whole-constant"),
    C("clamp", {"min": 0.0, "max": 3.0}, ["B, S"], "B, S", "B * S", lambda t, a: t.clamp(a, 0, 3), ["i"],
      id="clamp-integers"),

    # -- reductions -----------------------------------------------------------------------------------
    C("amin", {"dim": [0, 2], "keepdim": True}, ["B, S, 3"], "1, S, 1", "B * S * 3",
      lambda t, x: t.amin(x, (0, 2), keepdim=True), ["f", "i"]),
    C("argmin", {"dim": 1}, ["B, S, 3"], "B, 3", "B * S * 3", lambda t, x: t.argmin(x, 1), ["f", "i"]),
    C("argmax", {"dim": None}, ["B, S"], "", "B * S", lambda t, x: t.argmax(x), ["f"], id="argmax-flattened"),
    C("argmax", {"dim": None, "keepdim": True}, ["B, S"], "1, 1", "B * S",
      lambda t, x: t.argmax(x, keepdim=True), ["f"], id="argmax-flattened-keepdim"),
    C("max", {"dim": 1}, ["B, S, 3"], ["B, 3", "B, 3"], "B * S * 3", lambda t, x: tuple(t.max(x, 1)), ["f", "i"]),
    C("min", {"dim": -1, "keepdim": True}, ["B, S"], ["B, 1", "B, 1"], "B * S",
      lambda t, x: tuple(t.min(x, -1, keepdim=True)), ["f", "i"]),
    C("prod", {"dim": 1}, ["B, S"], "B", "B * S", lambda t, x: t.prod(x, 1), ["f", "i", "b"]),
    C("prod", {}, ["B, S"], "", "B * S", lambda t, x: t.prod(x), ["f"], id="prod-all"),
    C("any", {"dim": [0, 1]}, ["B, S, 3"], "3", "B * S * 3", lambda t, x: t.any(x, dim=(0, 1)), ["b", "i"]),
    C("all", {"dim": -1, "keepdim": True}, ["B, S"], "B, 1", "B * S",
      lambda t, x: t.all(x, -1, keepdim=True), ["b", "f"]),
    C("all", {}, ["B, S"], "", "B * S", lambda t, x: t.all(x), ["b"], id="all-all"),
    C("var", {"dim": -1}, ["B, S"], "B", "3 * B * S", lambda t, x: t.var(x, -1), ["f"]),
    C("var", {"dim": [0, 1], "correction": 0.0, "keepdim": True}, ["B, S, 3"], "1, 1, 3", "3 * B * S * 3",
      lambda t, x: t.var(x, (0, 1), correction=0, keepdim=True), ["f"], id="var-population"),
    C("std", {"dim": 1}, ["B, S"], "B", "3 * B * S", lambda t, x: t.std(x, 1), ["f"]),
    C("logsumexp", {"dim": -1}, ["B, S"], "B", "4 * B * S", lambda t, x: t.logsumexp(x, -1), ["f"]),
    C("vector_norm", {"ord": 2.0, "dim": -1, "keepdim": True}, ["B, S"], "B, 1", "2 * B * S",
      lambda t, x: t.linalg.vector_norm(x, 2, -1, True), ["f"]),
    C("vector_norm", {"ord": float("inf")}, ["B, S"], "", "2 * B * S",
      lambda t, x: t.linalg.vector_norm(x, float("inf")), ["f"], id="vector_norm-inf"),
    C("vector_norm", {"ord": 1.0, "dim": [0, 1]}, ["B, S, 3"], "3", "2 * B * S * 3",
      lambda t, x: t.linalg.vector_norm(x, 1, (0, 1)), ["f"], id="vector_norm-l1"),
    C("normalize", {"dim": -1}, ["B, S, 3"], "B, S, 3", "3 * B * S * 3",
      lambda t, x: t.nn.functional.normalize(x, dim=-1), ["f"]),
    # -- indexing and writing by index --------------------------------------------------------------
    C("index", {"dims": [0, 2]}, ["B, S, 3", "4", "4"], "4, S", None, lambda t, x, i, j: x[i, :, j], ["f n2 n3"],
      id="index-apart"),
    C("index", {"dims": [1, 2]}, ["B, S, 3", "2, 4", "4"], "B, 2, 4", None, lambda t, x, i, j: x[:, i, j],
      ["f n5 n3", "i n5 n3"], id="index-adjacent"),
    C("index", {"dims": [1]}, ["B, S, 3", "2, 4"], "B, 2, 4, 3", None, lambda t, x, i: x[:, i], ["f n5", "b n5"]),
    C("index_put", {"dims": [1]}, ["B, S, 3", "2, 3", "2"], "B, S, 3", "B * 2 * 3",
      lambda t, x, v, i: t.ops.aten.index_put(x, [None, i], v), ["f f n5", "i i n5"]),
    C("index_put", {"dims": [0], "accumulate": True}, ["S, 3", "4, 3", "4"], "S, 3", "4 * 3",
      lambda t, x, v, i: x.index_put((i,), v, accumulate=True), ["f f n5"], id="index_put-accumulate"),
    C("index_put", {"dims": [0], "mask": True}, ["B, S", "", "B, S"], "B, S", "0",
      lambda t, x, v, m: x.masked_fill(m, v), ["f f b"], id="index_put-mask"),
    C("scatter", {"dim": 1}, ["B, S", "B, 1", "B, 1"], "B, S", "0", lambda t, x, i, s: x.scatter(1, i, s),
      ["f n5 f", "i n5 i"]),
    C("scatter", {"dim": 1, "value": 2.0}, ["B, S", "B, 3"], "B, S", "0", lambda t, x, i: x.scatter(1, i, 2.0),
      ["f n5"], id="scatter-value"),
    C("scatter_reduce", {"dim": 0, "reduce": "amax"}, ["5, 3", "S, 3", "S, 3"], "5, 3", "S * 3",
      lambda t, x, i, s: x.scatter_reduce(0, i, s, "amax"), ["f n5 f", "i n5 i"]),
    C("scatter_reduce", {"dim": 1, "reduce": "mean", "include_self": False}, ["B, 4", "B, S", "B, S"], "B, 4",
      "B * S", lambda t, x, i, s: x.scatter_reduce(1, i, s, "mean", include_self=False), ["f n4 f"],
      id="scatter_reduce-mean"),
    C("select_scatter", {"dim": 1, "index": -1}, ["B, S, 3", "B, 3"], "B, S, 3", "0",
      lambda t, x, s: t.select_scatter(x, s, 1, -1), ["f f", "i i"]),
    C("slice_scatter", {"dim": 1, "start": 1, "end": 5, "step": 2}, ["B, 6, 3", "B, 2, 3"], "B, 6, 3", "0",
      lambda t, x, s: t.slice_scatter(x, s, 1, 1, 5, 2), ["f f", "b b"]),
    C("copy", {}, ["B, S, 3", "S, 1"], "B, S, 3", "0", lambda t, x, s: x.clone().copy_(s), ["f f", "i f", "b i"]),
    C("one_hot", {"num_classes": 6}, ["B, S"], "B, S, 6", "0", lambda t, x: t.nn.functional.one_hot(x, 6), ["n6"]),

    # -- rearranging ----------------------------------------------------------------------------------
    C("flip", {"dims": [0, -1]}, ["B, S, 3"], "B, S, 3", "0", lambda t, x: t.flip(x, (0, -1)), ["f", "b"]),
    C("repeat", {"repeats": [2, 1, 3]}, ["S, 3"], "2, S, 9", "0", lambda t, x: x.repeat(2, 1, 3), ["f", "i"]),
    C("stack", {"dim": 1}, ["B, 3", "B, 3", "B, 3"], "B, 3, 3", "0", lambda t, a, b, c: t.stack([a, b, c], 1),
      ["f f f", "i i i"]),
    C("unbind", {"dim": 1}, ["B, 3, S"], ["B, S", "B, S", "B, S"], "0", lambda t, x: tuple(t.unbind(x, 1)), ["f"]),
    C("diagonal", {"offset": 1, "dim1": 1, "dim2": 2}, ["B, 6, 4"], "B, 3", "0",
      lambda t, x: t.diagonal(x, 1, 1, 2), ["f", "i"]),
    C("diagonal", {"offset": -1}, ["S, S, 3"], "3, S - 1", "0", lambda t, x: t.diagonal(x, -1), ["f"],
      id="diagonal-below"),
    C("as_strided", {"size": [4, 3], "stride": [2, 1], "storage_offset": 1}, ["B, 5"], "4, 3", "0",
      lambda t, x: x.as_strided((4, 3), (2, 1), 1), ["f"]),
    C("einsum", {"equation": "bij,bjk->bik"}, ["B, S, 3", "B, 3, 4"], "B, S, 4", "2 * B * S * 3 * 4",
      lambda t, a, b: t.einsum("bij,bjk->bik", a, b), ["f f"]),
    C("einsum", {"equation": "bhqd, bhkd -> bhqk"}, ["B, 2, S, 4", "B, 2, T, 4"], "B, 2, S, T",
      "2 * B * 2 * S * 4 * T", lambda t, a, b: t.einsum("bhqd,bhkd->bhqk", a, b), ["f f"], id="einsum-scores"),
    C("einsum", {"equation": "ij,jk"}, ["S, 3", "3, 4"], "S, 4", "2 * S * 3 * 4",
      lambda t, a, b: t.einsum("ij,jk", a, b), ["f f"], id="einsum-implicit"),
    C("einsum", {"equation": "...ij->...ji"}, ["B, S, 3"], "B, 3, S", "B * S * 3",
      lambda t, x: t.einsum("...ij->...ji", x), ["f"], id="einsum-ellipsis"),
    C("einsum", {"equation": "ii->"}, ["3, 3"], "", "3", lambda t, x: t.einsum("ii->", x), ["f"], id="einsum-trace"),
    C("einsum", {"equation": "bd,d,bd->b"}, ["B, 4", "4", "B, 4"], "B", "3 * B * 4",
      lambda t, a, b, c: t.einsum("bd,d,bd->b", a, b, c), ["f f f"], id="einsum-three"),

    # -- pooling over 3 dims, and means over a window's values only ------------------------------------
    C("max_pool3d", {"kernel_size": [2, 3, 2], "stride": [1, 2, 2], "padding": [1, 1, 0]}, ["B, C, 3, 6, 4"],
      "B, C, 4, 3, 2", "B * C * 4 * 3 * 2 * 12",
      lambda t, x: t.nn.functional.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0)), ["f"]),
    C("avg_pool3d", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
      ["B, C, 3, 6, 4"], "B, C, 2, 4, 3", "B * C * 2 * 4 * 3 * 27",
      lambda t, x: t.nn.functional.avg_pool3d(x, 3, 2, 1, True, False), ["f"]),
    C("avg_pool3d", {"kernel_size": 2, "divisor_override": 3}, ["B, C, 4, 6, 4"], "B, C, 2, 3, 2",
      "B * C * 2 * 3 * 2 * 8", lambda t, x: t.nn.functional.avg_pool3d(x, 2, divisor_override=3), ["f"],
      id="avg_pool3d-divisor"),
    C("avg_pool2d", {"kernel_size": 3, "stride": 1, "padding": 1, "count_include_pad": False}, ["B, C, 6, 4"],
      "B, C, 6, 4", "B * C * 6 * 4 * 9",
      lambda t, x: t.nn.functional.avg_pool2d(x, 3, 1, 1, count_include_pad=False), ["f"], id="avg_pool2d-values-only"),
    C("avg_pool1d", {"kernel_size": 2, "padding": 1, "count_include_pad": False}, ["B, C, 5"], "B, C, 3",
      "B * C * 3 * 2", lambda t, x: t.nn.functional.avg_pool1d(x, 2, padding=1, count_include_pad=False), ["f"],
      id="avg_pool1d-values-only"),
    C("adaptive_avg_pool3d", {"output_size": [2, 3, 3]}, ["B, C, 3, 6, 4"], "B, C, 2, 3, 3", "B * C * 3 * 6 * 4",
      lambda t, x: t.nn.functional.adaptive_avg_pool3d(x, (2, 3, 3)), ["f"]),
    C("adaptive_max_pool1d", {"output_size": 3}, ["B, C, 7"], "B, C, 3", "B * C * 7",
      lambda t, x: t.nn.functional.adaptive_max_pool1d(x, 3), ["f"]),
    C("adaptive_max_pool2d", {"output_size": [2, 3]}, ["B, C, 6, 4"], "B, C, 2, 3", "B * C * 6 * 4",
      lambda t, x: t.nn.functional.adaptive_max_pool2d(x, (2, 3)), ["f"]),
    # -- sampling, folding, distances -----------------------------------------------------------------
    C("grid_sample", {}, ["B, C, 6, 4", "B, 3, 5, 2"], "B, C, 3, 5", "7 * B * C * 3 * 5",
      lambda t, x, g: t.nn.functional.grid_sample(x, g, align_corners=False), ["f u"]),
    C("grid_sample", {"mode": "nearest", "padding_mode": "border", "align_corners": True},
      ["B, C, 6, 4", "B, 3, 5, 2"], "B, C, 3, 5", "0",
      lambda t, x, g: t.nn.functional.grid_sample(x, g, "nearest", "border", True), ["f f"],
      id="grid_sample-nearest-border"),
    C("grid_sample", {"mode": "bicubic", "padding_mode": "reflection"}, ["B, C, 6, 4", "B, 2, 2, 2"], "B, C, 2, 2",
      "31 * B * C * 2 * 2", lambda t, x, g: t.nn.functional.grid_sample(x, g, "bicubic", "reflection", False),
      ["f f"], id="grid_sample-bicubic-reflection"),
    C("fold", {"output_size": [5, 4], "kernel_size": [2, 3], "padding": 1, "stride": [1, 2]}, ["B, 12, 12"],
      "B, 2, 5, 4", "B * 12 * 12", lambda t, x: t.nn.functional.fold(x, (5, 4), (2, 3), padding=1, stride=(1, 2)),
      ["f"]),
    C("cdist", {}, ["B, S, 3", "B, 4, 3"], "B, S, 4", "3 * B * S * 4 * 3", lambda t, a, b: t.cdist(a, b), ["f f"]),
    C("cdist", {"p": 1.0, "compute_mode": "donot_use_mm_for_euclid_dist"}, ["S, 3", "4, 3"], "S, 4", "3 * S * 4 * 3",
      lambda t, a, b: t.cdist(a, b, 1.0), ["f f"], id="cdist-p1"),
    C("pdist", {"p": 3.0}, ["S, 3"], "(S * S - S) // 2", "9 * ((S * S - S) // 2)",
      lambda t, x: t.nn.functional.pdist(x, 3.0), ["f"]),
    # -- Fourier transforms: 5·n·log2(n) per complex transform of length n, half that for a real one ------
    C("fft_rfft", {}, ["B, S, 8"], "B, S, 5", "60 * B * S", lambda t, x: t.fft.rfft(x), ["f"]),
    C("fft_rfft", {"dim": [1, 2], "n": [4, 7], "norm": "ortho"}, ["B, 3, 6"], "B, 4, 4", "B * 4 * 7 * 5 * (2 + 3) // 2",
      lambda t, x: t.fft.rfftn(x, s=(4, 7), dim=(1, 2), norm="ortho"), ["f"], id="fft_rfft-2d"),
    C("fft_irfft", {"n": 7}, ["B, S, 4"], "B, S, 7", "5 * B * S * 7 * 3 // 2", lambda t, x: t.fft.irfft(x, n=7), ["c"]),
    C("fft_irfft", {"dim": [-2, -1], "norm": "forward"}, ["B, 4, 5"], "B, 4, 8", "5 * B * 4 * 8 * (2 + 3) // 2",
      lambda t, x: t.fft.irfft2(x, norm="forward"), ["c"], id="fft_irfft-2d"),
    C("fft_fft", {"dim": -2}, ["B, 4, 3"], "B, 4, 3", "5 * B * 4 * 3 * 2", lambda t, x: t.fft.fft(x, dim=-2), ["f", "c"]),
    C("fft_ifft", {"n": 8, "norm": "ortho"}, ["B, S, 6"], "B, S, 8", "5 * B * S * 8 * 3",
      lambda t, x: t.fft.ifft(x, n=8, norm="ortho"), ["c"]),
    C("view_as_complex", {}, ["B, S, 2"], "B, S", "0", lambda t, x: t.view_as_complex(x), ["f"]),
    C("view_as_real", {}, ["B, S"], "B, S, 2", "0", lambda t, x: t.view_as_real(x), ["c"]),
    # -- a range of reals counted as torch counts it, in float64 (NaViT's buckets: 1/70 .. below 1 is 69 long,
    # where floor division of the floats gives 70), and the bucket of each value among sorted boundaries
    C("arange", {"start": 1 / 70, "end": 1.0, "step": 1 / 70, "dtype": "float32"}, [], "69", "0",
      lambda t: t.arange(1 / 70, 1.0, 1 / 70), [""], id="arange-real-step"),
    C("arange", {"start": 1 / 14, "end": 1.0, "step": 1 / 14, "dtype": "float32"}, [], "14", "0",
      lambda t: t.arange(1 / 14, 1.0, 1 / 14), [""], id="arange-real-step-rounding-up"),
    C("arange", {"end": 6, "dtype": "uint8"}, [], "6", "0", lambda t: t.arange(6, dtype=t.uint8), [""],
      id="arange-uint8"),  # tril's decomposition: Bailing-hybrid's chunked delta attention
    C("bucketize", {}, ["B, S, 3", "4"], "B, S, 3", "B * S * 3", lambda t, x, b: t.bucketize(x, b), ["f f"]),
    C("bucketize", {"right": True, "out_int32": True}, ["B, S", "6"], "B, S", "B * S",
      lambda t, x, b: t.bucketize(x, b, right=True, out_int32=True), ["n5 n5"], id="bucketize-right-int32"),
    # -- a convolution whose weight and bias are inputs (F.conv1d/2d: a weight computed in forward)
    C("conv", {"padding": "same", "groups": 2}, ["B, 4, S", "6, 2, 3", "6"], "B, 6, S", "2 * B * 6 * S * 2 * 3",
      lambda t, x, w, b: t.nn.functional.conv1d(x, w, b, padding="same", groups=2), ["f f f"]),
    C("conv", {"stride": 2}, ["B, 3, H, W", "5, 3, 2, 2"], "B, 5, H // 2, W // 2", "2 * B * 5 * (H // 2) * (W // 2) * 12",
      lambda t, x, w: t.nn.functional.conv2d(x, w, stride=2), ["f f"], id="conv-2d-no-bias"),
    C("conv_transpose", {"stride": 2, "padding": 1, "output_padding": 1}, ["B, 4, S", "4, 3, 3", "3"], "B, 3, 2 * S",
      "2 * B * 4 * S * 3 * 3", lambda t, x, w, b: t.nn.functional.conv_transpose1d(x, w, b, 2, 1, 1), ["f f f"]),
    C("conv_transpose", {"stride": 2, "groups": 2}, ["B, 4, H, W", "4, 1, 2, 2"], "B, 2, 2 * H, 2 * W",
      "2 * B * 4 * H * W * 4", lambda t, x, w: t.nn.functional.conv_transpose2d(x, w, stride=2, groups=2), ["f f"],
      id="conv_transpose-2d-groups"),
    C("complex", {}, ["B, S, 3", "3"], "B, S, 3", "0", lambda t, re, im: t.complex(re, im), ["f f", "h h"]),
    C("conj", {}, ["B, S"], "B, S", "B * S", lambda t, x: t.conj_physical(x), ["c", "f"]),
    C("cumprod", {"dim": 1}, ["B, S, 3"], "B, S, 3", "B * S * 3", lambda t, x: t.cumprod(x, 1), ["f", "i"]),
    C("logcumsumexp", {"dim": -1}, ["B, S, 3"], "B, S, 3", "4 * B * S * 3", lambda t, x: t.logcumsumexp(x, -1),
      ["f", "s"]),
    # -- rotary positions applied: transformers' apply_rotary_pos_emb (rotate_half), on the first 4 of 6 dims ----
    C("apply_rotary", {}, ["B, 3, S, 6", "1, S, 4", "1, S, 4"], "B, 3, S, 6", "0",
      lambda t, x, c, s: t.cat([x[..., :4] * c[:, None] + t.cat([-x[..., 2:4], x[..., :2]], -1) * s[:, None],
                                x[..., 4:]], -1), ["f f f"]),
    C("apply_rotary", {"pairs": "interleaved"}, ["B, 3, S, 4", "B, S, 4", "B, S, 4"], "B, 3, S, 4", "0",
      lambda t, x, c, s: x * c[:, None, :, :2].repeat_interleave(2, -1) + t.stack(
          [-x[..., 1::2], x[..., 0::2]], -1).flatten(-2) * s[:, None, :, :2].repeat_interleave(2, -1), ["f f f"],
      id="apply_rotary-interleaved"),
]
