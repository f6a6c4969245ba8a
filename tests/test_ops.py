"""Per-op conformance harness (in the spirit of Keras `run_layer_test` and ONNX shape tests).

Every expected value below is derived by hand from PyTorch's documented semantics
(nn.Linear, nn.Conv2d's output-size formula, MaxPool2d's ceil_mode rule, ...) and the
Hugging Face tensor-naming conventions -- never read back from archgraph itself.

A positive case is
    (op name, hyperparameters, input shapes, expected output(s), tensors, buffers, flops)
where the expected output is one shape tuple, or a *list* of shapes for multi-output
ops; tensors and buffers are {name: shape}; flops is the exact count or None when
the op's cost convention is not documented (FLOPs = 2 x multiply-accumulates).
Cases contradicting PyTorch are marked xfail(strict=True): fixing the op turns them
into XPASS failures, the cue to drop the mark.
"""
from __future__ import annotations

import pytest
import sympy

from archgraph.dims import Poly, fmt, fmt_shape, symbol, to_sympy
from archgraph.errors import ShapeError, SpecError
from archgraph.ops import REGISTRY

B, S, T, H, W, L = (symbol(n) for n in ("B", "S", "T", "H", "W", "L"))  # archgraph's symbolic sizes


class sym:  # the same sizes as sympy symbols, for expectations archgraph's sizes do not compute
    H, W, L = (sympy.Symbol(n, integer=True, positive=True) for n in ("H", "W", "L"))


def reject(op, hp, inputs, error, words, *, id=None, bug=None):
    """A case that must raise `error` (at build when inputs is None), its message holding `words`."""
    marks = [pytest.mark.xfail(reason=bug, strict=True)] if bug else []
    kind = "build" if inputs is None else "shape"
    return pytest.param(op, hp, inputs, error, words, id=id or f"{op}-{kind}", marks=marks)


def case(op, hp, inputs, out, params=None, buffers=None, flops=None, *, id=None, bug=None):
    """One row of the table; `bug` (a reason) marks a known PyTorch mismatch as xfail."""
    marks = [pytest.mark.xfail(reason=bug, strict=True)] if bug else []
    return pytest.param(op, hp, inputs, out, params or {}, buffers or {}, flops,
                        id=id or op, marks=marks)


# Linear/attention/MLP FLOPs below are written as 2 * (multiply-accumulates), term by term.
CASES = [
    # ---- linear (nn.Linear: y = x W^T + b, W [out, in]) ---------------------------------
    case("linear", {"in_features": 768, "out_features": 3072}, [(2, 5, 768)], (2, 5, 3072),
         {"weight": (3072, 768), "bias": (3072,)}, flops=2 * 10 * 768 * 3072),
    case("linear", {"in_features": 768, "out_features": 3072}, [(B, S, 768)], (B, S, 3072),
         {"weight": (3072, 768), "bias": (3072,)}, flops=2 * B * S * 768 * 3072, id="linear-symbolic"),
    case("linear", {"in_features": 8, "out_features": 3, "bias": False}, [(8,)], (3,),
         {"weight": (3, 8)}, flops=2 * 8 * 3, id="linear-1d-nobias"),
    case("linear", {"in_features": 768, "out_features": 2304, "weight_layout": "in_out"},
         [(B, S, 768)], (B, S, 2304), {"weight": (768, 2304), "bias": (2304,)},
         flops=2 * B * S * 768 * 2304, id="linear-gpt2-conv1d-layout"),
    case("bilinear", {"in1_features": 8, "in2_features": 6, "out_features": 4}, [(B, S, 8), (B, S, 6)], (B, S, 4),
         {"weight": (4, 8, 6), "bias": (4,)}, flops=2 * B * S * 4 * 9 * 6),

    # ---- embeddings ---------------------------------------------------------------------
    # nn.EmbeddingBag(1000, 64): one row of [num, dim] per bag (offsets [n]); include_last_offset: n - 1 bags;
    # a sum over the bag's rows (a product too with per_sample_weights)
    case("embedding_bag", {"num_embeddings": 1000, "embedding_dim": 64}, [(S,), (B,)], (B, 64),
         {"weight": (1000, 64)}, flops=S * 64),
    case("embedding_bag", {"num_embeddings": 10, "embedding_dim": 3, "mode": "sum", "include_last_offset": True},
         [(12,), (5,), (12,)], (4, 3), {"weight": (10, 3)}, flops=2 * 12 * 3, id="embedding_bag-weighted"),
    case("embedding", {"num_embeddings": 50257, "embedding_dim": 768}, [(B, S)], (B, S, 768),
         {"weight": (50257, 768)}),
    case("embedding", {"num_embeddings": 10, "embedding_dim": 4}, [(3,)], (3, 4),
         {"weight": (10, 4)}, id="embedding-1d-ids"),
    # Gemma's scaled word embedding: a 0-d embed_scale buffer, one product per output value
    case("embedding", {"num_embeddings": 10, "embedding_dim": 4, "scale": 2.0}, [(B, S)], (B, S, 4),
         {"weight": (10, 4)}, buffers={"embed_scale": ()}, flops=B * S * 4, id="embedding-scaled"),
    case("position_embedding", {"num_positions": 1024, "embedding_dim": 768}, [(2, 1024, 768)],
         (1, 1024, 768), {"weight": (1024, 768)}),
    case("position_embedding", {"num_positions": 2050, "embedding_dim": 64, "offset": 2},
         [(B, 2048)], (1, 2048, 64), {"weight": (2050, 64)}, id="position_embedding-opt-offset"),
    # RoBERTa: positions count the tokens that are not pad (one row of positions per sequence)
    case("position_embedding", {"num_positions": 514, "embedding_dim": 64, "pad": 1},
         [(B, 512)], (B, 512, 64), {"weight": (514, 64)}, id="position_embedding-skips-pad"),
    case("sinusoidal_position", {"embedding_dim": 512}, [(B, S, 512)], (1, S, 512)),
    case("sinusoidal_position", {"embedding_dim": 512, "num_positions": 1500}, [(2, 1500, 512)],
         (1, 1500, 512), buffers={"weight": (1500, 512)}, id="sinusoidal_position-table"),
    case("sine_position_2d", {"num_position_features": 128, "normalize": True}, [(B, 2048, 25, 34)],
         (B, 256, 25, 34)),
    case("learned_position_2d", {"num_position_features": 128}, [(B, 2048, 25, 34)], (B, 256, 25, 34),
         {"row_embeddings.weight": (50, 128), "column_embeddings.weight": (50, 128)}),
    # RoPE: inv_freq has rotary_dim/2 entries; cos/sin = cat(freqs, freqs) -> rotary_dim wide.
    case("rotary_embedding", {"head_dim": 128}, [(B, S, 4096)], [(1, S, 128), (1, S, 128)],
         buffers={"inv_freq": (64,)}),
    case("rotary_embedding", {"head_dim": 64, "rotary_dim": 16}, [(2, 7, 2560)],
         [(1, 7, 16), (1, 7, 16)], buffers={"inv_freq": (8,)}, id="rotary_embedding-partial"),
    # T5: relative_attention_bias = nn.Embedding(num_buckets, n_heads).
    case("rotary_embedding", {"head_dim": 12, "rotary_dim": 3}, [(B, S)], [(1, S, 4), (1, S, 4)],
         buffers={"inv_freq": (2,)}, id="rotary_embedding-odd"),
    # GPT-J / CodeGen: a table of every position, [sin | cos], named by the node; no inv_freq
    case("rotary_embedding", {"head_dim": 256, "rotary_dim": 64, "positions": 2048}, [(B, 9, 4096)],
         [(1, 9, 64), (1, 9, 64)], buffers={"": (2048, 64)}, id="rotary_embedding-positions-table"),
    case("rotary_embedding", {"head_dim": 8, "scaling": "linear", "factor": 8.0}, [(B, S)], [(1, S, 8), (1, S, 8)],
         buffers={"inv_freq": (4,)}, id="rotary_embedding-linear-factor"),
    # Qwen2-VL: M-RoPE (the head's 64 frequencies in runs turned by time, row, column) and the
    # vision tower's axial 2-D rotation (rows and columns each with the 20 frequencies of 40 dims)
    case("rotary_embedding", {"head_dim": 128, "axes": 3, "sections": [16, 24, 24]}, [(B, S, 1536), (3, B, S)],
         [(B, S, 128), (B, S, 128)], buffers={"inv_freq": (64,)}, id="rotary_embedding-mrope"),
    case("rotary_embedding", {"head_dim": 80, "axes": 2}, [(B, 256, 1280), (2, 1, 256)],
         [(1, 256, 80), (1, 256, 80)], buffers={"inv_freq": (20,)}, id="rotary_embedding-axial"),
    case("rotary_embedding", {"head_dim": 16}, [(B, S, 64), (B, S)], [(B, S, 16), (B, S, 16)],
         buffers={"inv_freq": (8,)}, id="rotary_embedding-position-ids"),
    case("grid_positions", {"grid": [16, 16], "tile": [2, 2]}, [], (2, 1, 256)),
    case("grid_positions", {"grid": [14, 14], "centers": True, "scale": 6.28, "prefix": 5}, [], (2, 1, 201)),
    case("multimodal_positions", {"token": 151655, "grid": [1, 8, 8]}, [(B, S)], (3, B, S)),
    case("alibi", {"heads": 8}, [(B, S)], (1, 8, 1, S)),
    case("alibi", {"heads": 12, "dtype": "bfloat16"}, [(2, 7, 64)], (1, 12, 1, 7), id="alibi-bfloat16"),
    case("relative_position_bias", {"num_buckets": 32, "heads": 8}, [(B, S, 512)], (1, 8, S, S),
         {"weight": (32, 8)}),
    case("relative_position_bias", {"num_buckets": 32, "heads": 8}, [(B, S, 512), (B, T, 512)],
         (1, 8, S, T), {"weight": (32, 8)}, id="relative_position_bias-cross"),
    # DeBERTa-v3-base: 256 buckets each side, the positions' keys and queries from key_proj and query_proj
    case("disentangled_attention", {"hidden": 768, "heads": 12, "span": 256, "buckets": 256, "share_att_key": True},
         [(2, 10, 768), (512, 768)], (2, 10, 768),
         {f"{n}_proj.{w}": (768, 768) if w == "weight" else (768,) for n in ("query", "key", "value")
          for w in ("weight", "bias")},
         flops=3 * 2 * 2 * 10 * 768 * 768 + 2 * 2 * 2 * 12 * 10 * 10 * 64
         + 2 * (2 * 2 * 256 * 768 * 768 + 2 * 2 * 12 * 10 * 512 * 64)),
    case("disentangled_attention", {"hidden": 12, "heads": 3, "span": 4, "p2c": False}, [(B, S, 12), (8, 12)],
         (B, S, 12), {f"{n}.{w}": (12, 12) if w == "weight" else (12,)
                      for n in ("query_proj", "key_proj", "value_proj", "pos_key_proj") for w in ("weight", "bias")},
         id="disentangled_attention-c2p-own-keys"),
    case("disentangled_attention", {"hidden": 12, "heads": 3, "span": 4, "share_att_key": True},
         [(B, S, 12), (8, 12), (B, S)], (B, S, 12),
         {f"{n}.{w}": (12, 12) if w == "weight" else (12,) for n in ("query_proj", "key_proj", "value_proj")
          for w in ("weight", "bias")}, id="disentangled_attention-padding-mask"),

    # ---- normalisation ------------------------------------------------------------------
    case("layer_norm", {"normalized_shape": 768}, [(B, S, 768)], (B, S, 768),
         {"weight": (768,), "bias": (768,)}),
    case("layer_norm", {"normalized_shape": [4, 5]}, [(2, 3, 4, 5)], (2, 3, 4, 5),
         {"weight": (4, 5), "bias": (4, 5)}, id="layer_norm-2d-shape"),
    case("layer_norm", {"normalized_shape": 16, "bias": False}, [(2, 16)], (2, 16),
         {"weight": (16,)}, id="layer_norm-nobias"),
    case("layer_norm", {"normalized_shape": 16, "elementwise_affine": False}, [(2, 16)], (2, 16),
         id="layer_norm-no-affine"),
    case("rms_norm", {"dim": 4096}, [(B, S, 4096)], (B, S, 4096), {"weight": (4096,)}),
    case("rms_norm", {"dim": 8, "elementwise_affine": False}, [(3, 8)], (3, 8), id="rms_norm-no-affine"),
    case("rms_norm", {"dim": 64, "axis": 1}, [(B, 64, 7, 5)], (B, 64, 7, 5), {"weight": (64,)},
         id="rms_norm-channels"),
    case("batch_norm", {"num_features": 64}, [(B, 64, 56, 56)], (B, 64, 56, 56),
         {"weight": (64,), "bias": (64,)},
         {"running_mean": (64,), "running_var": (64,), "num_batches_tracked": ()}),
    case("batch_norm", {"num_features": 10, "affine": False, "track_running_stats": False},
         [(4, 10)], (4, 10), id="batch_norm-bare"),
    case("batch_norm", {"num_features": 8, "frozen": True}, [(B, 8, 5, 5)], (B, 8, 5, 5),
         buffers={"weight": (8,), "bias": (8,), "running_mean": (8,), "running_var": (8,)},
         id="batch_norm-frozen"),
    case("group_norm", {"num_groups": 32, "num_channels": 256}, [(2, 256, 8, 8)], (2, 256, 8, 8),
         {"weight": (256,), "bias": (256,)}),
    case("group_norm", {"num_groups": 4, "num_channels": 8, "affine": False}, [(2, 8, 10)], (2, 8, 10),
         id="group_norm-no-affine"),

    # ---- convolution: out = floor((n + 2p - d(k-1) - 1) / s) + 1 ---------------------------
    case("conv2d", {"in_channels": 3, "out_channels": 64, "kernel_size": 7, "stride": 2, "padding": 3,
                    "bias": False},
         [(1, 3, 224, 224)], (1, 64, 112, 112), {"weight": (64, 3, 7, 7)},
         flops=2 * (64 * 112 * 112) * (3 * 7 * 7), id="conv2d-resnet-stem"),
    case("conv2d", {"in_channels": 32, "out_channels": 32, "kernel_size": 3, "padding": 1, "groups": 32},
         [(2, 32, 16, 16)], (2, 32, 16, 16), {"weight": (32, 1, 3, 3), "bias": (32,)},
         flops=2 * (2 * 32 * 16 * 16) * (1 * 3 * 3), id="conv2d-depthwise"),
    case("conv2d", {"in_channels": 4, "out_channels": 6, "kernel_size": [3, 2], "stride": [2, 1],
                    "padding": [1, 0], "dilation": [1, 2], "groups": 2},
         # H: floor((10 + 2 - 2 - 1)/2) + 1 = 5;  W: floor((12 - 2*1 - 1)/1) + 1 = 10
         [(2, 4, 10, 12)], (2, 6, 5, 10), {"weight": (6, 2, 3, 2), "bias": (6,)},
         flops=2 * (2 * 6 * 5 * 10) * (2 * 3 * 2), id="conv2d-asymmetric-dilated-grouped"),
    case("conv2d", {"in_channels": 3, "out_channels": 8, "kernel_size": 3, "stride": 2, "padding": 1},
         [(B, 3, H, W)], (B, 8, sympy.ceiling(sym.H / 2), sympy.ceiling(sym.W / 2)),
         {"weight": (8, 3, 3, 3), "bias": (8,)}, id="conv2d-symbolic-stride2"),
    case("conv2d", {"in_channels": 3, "out_channels": 8, "kernel_size": 5, "padding": "same"},
         [(1, 3, 9, 9)], (1, 8, 9, 9), {"weight": (8, 3, 5, 5), "bias": (8,)}, id="conv2d-same"),
    # TensorFlow's SAME (MobileNet's tf_padding): ceil(n / stride) outputs, whatever the kernel
    case("conv2d", {"in_channels": 8, "out_channels": 8, "kernel_size": 3, "stride": 2, "padding": "tf_same",
                    "groups": 8, "bias": False}, [(1, 8, 7, 8)], (1, 8, 4, 4), {"weight": (8, 1, 3, 3)},
         flops=2 * (8 * 4 * 4) * (1 * 3 * 3), id="conv2d-tf-same"),
    case("conv2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": "tf_same"},
         [(B, 3, H, W)], (B, 4, sympy.ceiling(sym.H / 2), sympy.ceiling(sym.W / 2)),
         {"weight": (4, 3, 3, 3), "bias": (4,)}, id="conv2d-tf-same-symbolic"),
    # weight normalisation (wav2vec 2.0's positional convolution): g [1, 1, K] over dim 2, v the weight
    case("conv1d", {"in_channels": 16, "out_channels": 16, "kernel_size": 6, "padding": 3, "groups": 2,
                    "weight_norm": 2}, [(2, 16, 9)], (2, 16, 10),
         {"parametrizations.weight.original0": (1, 1, 6), "parametrizations.weight.original1": (16, 8, 6),
          "bias": (16,)}, flops=2 * 2 * 16 * 10 * 8 * 6, id="conv1d-weight-norm"),
    case("conv2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "weight_norm": 0}, [(1, 3, 5, 5)],
         (1, 4, 3, 3), {"parametrizations.weight.original0": (4, 1, 1, 1),
                        "parametrizations.weight.original1": (4, 3, 3, 3), "bias": (4,)}, id="conv2d-weight-norm"),
    case("conv_frames_mask", {"kernels": [10, 3], "strides": [5, 2]}, [(B, L), (B, T, 8)], (B, T), flops=0),
    case("conv1d", {"in_channels": 80, "out_channels": 384, "kernel_size": 3, "padding": 1},
         [(B, 80, 3000)], (B, 384, 3000), {"weight": (384, 80, 3), "bias": (384,)},
         flops=2 * (B * 384 * 3000) * (80 * 3), id="conv1d-whisper-conv1"),
    case("conv1d", {"in_channels": 384, "out_channels": 384, "kernel_size": 3, "stride": 2, "padding": 1},
         [(B, 384, 3000)], (B, 384, 1500), {"weight": (384, 384, 3), "bias": (384,)},
         id="conv1d-whisper-conv2"),
    case("conv1d", {"in_channels": 4, "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 1},
         [(B, 4, L)], (B, 4, sympy.ceiling(sym.L / 2)), {"weight": (4, 4, 3), "bias": (4,)},
         id="conv1d-symbolic-stride2"),
    case("conv1d", {"in_channels": 2, "out_channels": 2, "kernel_size": 3, "padding": "valid",
                    "dilation": 3, "bias": False},
         [(1, 2, 20)], (1, 2, 14), {"weight": (2, 2, 3)}, id="conv1d-valid-dilated"),
    # padding='same' pads d*(k-1) in total (left = total//2, the extra one on the right): L stays L.
    case("conv1d", {"in_channels": 4, "out_channels": 4, "kernel_size": 4, "padding": "same"},
         [(1, 4, 10)], (1, 4, 10), {"weight": (4, 4, 4), "bias": (4,)}, id="conv1d-same-even-kernel"),

    # ---- pooling: same size rule; ceil_mode drops a last window starting in the right padding --
    case("max_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, [(1, 64, 112, 112)],
         (1, 64, 56, 56), id="max_pool2d-resnet"),
    case("max_pool2d", {"kernel_size": 2}, [(B, 8, 7, 7)], (B, 8, 3, 3), id="max_pool2d-default-stride"),
    case("max_pool2d", {"kernel_size": 2, "ceil_mode": True}, [(B, 8, 7, 7)], (B, 8, 4, 4),
         id="max_pool2d-ceil"),
    case("max_pool2d", {"kernel_size": 3, "stride": 1, "dilation": 2}, [(1, 1, 10, 12)], (1, 1, 6, 8),
         id="max_pool2d-dilated"),
    # floor((5 + 2 - 1 - 1)/2) + 1 = 3 with ceil_mode rounding up to 4, but the 4th window would
    # start at index 5 (= input + left padding), inside the right padding, so PyTorch drops it: 3.
    case("max_pool1d", {"kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": True}, [(1, 4, 5)],
         (1, 4, 3), id="max_pool1d-ceil-last-window-in-padding"),
    # kernel 1 stride 2 on 4: windows at 0 and 2; a third would start at 4, past the input.
    case("max_pool2d", {"kernel_size": 1, "stride": 2, "ceil_mode": True}, [(1, 4, 4, 4)], (1, 4, 2, 2),
         id="max_pool2d-ceil-stride-gt-kernel"),
    # a window wider than the input: ceil_mode still gives one (EfficientNet's AvgPool2d(hidden_dim))
    case("avg_pool2d", {"kernel_size": 2560, "ceil_mode": True}, [(2, 16, 19, 19)], (2, 16, 1, 1),
         id="avg_pool2d-ceil-window-wider-than-input"),
    case("max_pool1d", {"kernel_size": 3, "stride": 2}, [(2, 4, 11)], (2, 4, 5)),
    case("avg_pool2d", {"kernel_size": 2}, [(B, 3, H, W)], (B, 3, sympy.floor(sym.H / 2), sympy.floor(sym.W / 2)),
         id="avg_pool2d-symbolic"),
    case("avg_pool2d", {"kernel_size": 3, "stride": 2, "ceil_mode": True}, [(1, 2, 8, 8)], (1, 2, 4, 4),
         id="avg_pool2d-ceil"),
    case("avg_pool1d", {"kernel_size": 3, "stride": 1, "padding": 1}, [(2, 4, 9)], (2, 4, 9)),
    case("adaptive_avg_pool2d", {"output_size": 1}, [(B, 2048, 7, 7)], (B, 2048, 1, 1)),
    case("adaptive_avg_pool2d", {"output_size": [5, 7]}, [(2, 3, 32, 33)], (2, 3, 5, 7),
         id="adaptive_avg_pool2d-pair"),
    case("adaptive_avg_pool1d", {"output_size": 4}, [(2, 3, L)], (2, 3, 4)),
    # nn.MaxPool3d(2) / nn.AvgPool3d(3, 1, 1): floor((n + 2p - k) / s) + 1; FLOPs one per window element
    case("max_pool3d", {"kernel_size": 2}, [(B, 3, 4, 7, 6)], (B, 3, 2, 3, 3), flops=B * 3 * 2 * 3 * 3 * 8),
    case("avg_pool3d", {"kernel_size": 3, "stride": 1, "padding": 1, "count_include_pad": False},
         [(2, 3, 4, 5, 6)], (2, 3, 4, 5, 6), flops=2 * 3 * 4 * 5 * 6 * 27),
    case("avg_pool2d", {"kernel_size": 3, "stride": 2, "divisor_override": 4}, [(1, 2, 9, 8)], (1, 2, 4, 3),
         id="avg_pool2d-divisor"),
    case("adaptive_avg_pool3d", {"output_size": [1, 2, 2]}, [(B, 3, 4, 8, 8)], (B, 3, 1, 2, 2),
         flops=B * 3 * 4 * 8 * 8),
    case("global_avg_pool", {}, [(B, 512, 7, 7)], (B, 512)),
    case("global_max_pool", {}, [(2, 16, 9)], (2, 16)),
    case("last_token", {"pad": 0}, [(B, S, 5), (B, S)], (B, 5)),
    case("last_token", {}, [(2, 7, 3, 4), (2, 7)], (2, 3, 4), id="last_token-no-pad"),
    case("last_token", {"token": 2}, [(B, S, 5), (B, S)], (B, 5), id="last_token-eos"),
    case("last_token", {"pad": 0, "offset": 1}, [(B, T, 5), (B, S)], (B, 5), id="last_token-offset-other-length"),
    case("padding_mask", {"pad": 0}, [(B, S)], (B, S), flops=0),
    case("padding_mask", {"pad": 0}, [(B, S), (B, S)], (B, S), flops=0, id="padding_mask-given"),

    # ---- pointwise ----------------------------------------------------------------------
    case("relu", {}, [(B, 64, 56, 56)], (B, 64, 56, 56)),
    case("gelu", {"approximate": "tanh"}, [(B, S, 3072)], (B, S, 3072)),
    case("silu", {}, [(2, 11008)], (2, 11008)),
    case("activation", {"fn": "quick_gelu"}, [(2, 3, 4)], (2, 3, 4), flops=5 * 24),
    case("activation", {"fn": "identity"}, [(2, 3)], (2, 3), flops=0, id="activation-identity"),
    case("tanh", {}, [(2, 768)], (2, 768)),
    case("softcap", {"cap": 30.0}, [(B, S, 100)], (B, S, 100), flops=6 * B * S * 100),
    case("sigmoid", {}, [(2, 3, 4)], (2, 3, 4)),
    case("identity", {}, [(B, S, 768)], (B, S, 768), flops=0),
    case("dropout", {"p": 0.1}, [(B, S, 768)], (B, S, 768), flops=0),
    case("softmax", {"dim": -1}, [(B, 12, S, S)], (B, 12, S, S)),
    case("add", {}, [(B, S, 768), (B, S, 768)], (B, S, 768)),
    case("add", {}, [(2, 1, 5), (3, 1)], (2, 3, 5), id="add-broadcast"),
    case("mul", {}, [(B, S, 1), (1, 768), (B, S, 768)], (B, S, 768), id="mul-three-inputs"),

    # ---- tensor plumbing (torch.matmul / reshape / transpose / ...) ---------------------
    case("matmul", {}, [(B, 12, S, 64), (B, 12, 64, S)], (B, 12, S, S), flops=2 * B * 12 * S * S * 64),
    case("matmul", {}, [(2, 1, 3, 4), (5, 4, 6)], (2, 5, 3, 6), flops=2 * (2 * 5 * 3 * 6) * 4,
         id="matmul-broadcast"),
    case("matmul", {}, [(4,), (4, 3)], (3,), flops=2 * 4 * 3, id="matmul-1d-vector"),
    case("reshape", {"shape": [4, -1]}, [(2, 3, 4)], (4, 6)),
    case("reshape", {"shape": [-1, 768]}, [(B, S, 768)], (B * S, 768), id="reshape-symbolic-infer"),
    case("reshape", {"shape": [0, 0, 12, -1]}, [(B, S, 768)], (B, S, 12, 64), id="reshape-copy-dims"),
    case("transpose", {"dim0": 1, "dim1": 2}, [(B, S, 12, 64)], (B, 12, S, 64)),
    case("transpose", {"dim0": -1, "dim1": -2}, [(2, 3, 4)], (2, 4, 3), id="transpose-negative"),
    case("permute", {"dims": [0, 2, 1, 3]}, [(B, S, 12, 64)], (B, 12, S, 64)),
    case("permute", {"dims": [2, 0, -2]}, [(2, 3, 4)], (4, 2, 3), id="permute-negative"),
    # a 6 x 4 grid of 1024-wide patches, each 2 x 2 block one token of 4096 values (Mistral 3's merger)
    case("pixel_unshuffle", {"grid": [6, 4], "factor": 2}, [(B, 24, 1024)], (B, 6, 4096)),
    case("pixel_unshuffle", {"grid": [6, 6], "factor": 3, "order": "patches_first"}, [(2, 36, 8)], (2, 4, 72),
         id="pixel_unshuffle-patches-first"),
    case("concat", {"dim": 1}, [(B, S, 64), (B, T, 64)], (B, S + T, 64)),
    case("concat", {}, [(2, 3), (2, 4), (2, 5)], (2, 12), id="concat-three"),
    case("split", {"sizes": [768, 768, 768]}, [(B, S, 2304)], [(B, S, 768)] * 3),
    case("split", {"dim": 0, "sections": 2}, [(6, 5)], [(3, 5), (3, 5)], id="split-sections"),
    case("split", {"dim": 1, "sizes": [1, 3]}, [(2, 4, 5)], [(2, 1, 5), (2, 3, 5)], id="split-uneven"),
    case("flatten", {}, [(B, 512, 7, 7)], (B, 512 * 7 * 7)),
    case("flatten", {"start_dim": 0, "end_dim": 1}, [(B, S, 768)], (B * S, 768), id="flatten-batch-seq"),
    case("select", {}, [(B, S, 768)], (B, 768)),
    case("select", {"dim": 0, "index": -1}, [(3, 4)], (4,), id="select-negative-index"),

    # ---- encoders: free-standing learned tensors (nn.Parameter on a module) -----------------
    # BERT's cls.predictions.bias: a [V] vector the decoder's bias ties to; no input
    case("parameter", {"shape": [30522], "tensor": "bias"}, [], (30522,), {"bias": (30522,)}, flops=0),
    case("parameter", {"shape": [2, 3]}, [], (2, 3), {"weight": (2, 3)}, flops=0, id="parameter-default-name"),
    # nn.Parameter(torch.tensor(2.6592)): CLIP's logit_scale, a 0-dim tensor of one value
    case("parameter", {"shape": [], "tensor": ""}, [], (), {"": ()}, flops=0, id="parameter-single-value"),
    # tensor '': named by the node alone, as a module's own nn.Parameter (DiT's pos_embed, BLIP-2's query_tokens)
    case("parameter", {"shape": [1, 8, 64], "tensor": ""}, [], (1, 8, 64), {"": (1, 8, 64)}, flops=0,
         id="parameter-named-by-its-node"),
    # nn.Parameter(torch.zeros(1, 0, H)): an empty tensor state_dict() still names (DINOv2 with 0 registers)
    case("parameter", {"shape": [1, 0, 64], "tensor": ""}, [], (1, 0, 64), {"": (1, 0, 64)}, flops=0,
         id="parameter-empty"),
    # ViT-B/16 at 224: 196 patches + the class token; cls_token [1, 1, 768], positions [1, 197, 768];
    # FLOPs: the position add, one per output element
    case("class_token", {"hidden": 768, "num_patches": 196}, [(B, 196, 768)], (B, 197, 768),
         {"cls_token": (1, 1, 768), "position_embeddings": (1, 197, 768)}, flops=B * 197 * 768),
    # DINOv2 on another grid: the 14 x 14 table resampled to 16 x 20 patches, the same tensors
    case("class_token", {"hidden": 768, "num_patches": 196, "grid": [16, 20], "interpolate": "bicubic"},
         [(B, 320, 768)], (B, 321, 768), {"cls_token": (1, 1, 768), "position_embeddings": (1, 197, 768)},
         flops=B * 321 * 768, id="class_token-resampled"),
    # SigLIP 2's NaFlex positions: a 16 x 16 table resampled to each image's grid, up to 256 patches;
    # the table is the one tensor, FLOPs 7 per output value (a bilinear blend)
    case("resized_positions", {"num_positions": 256, "embedding_dim": 768}, [(B, 256, 768), (B, 2)],
         (B, 256, 768), {"weight": (256, 768)}, flops=7 * B * 256 * 768),

    # ---- attention (HF naming; GQA: k/v have kv_heads * head_dim outputs) ------------------
    # self-attention on [B, S, 768], 12 heads of 64: four 768x768 projections (q, k, v, o)
    # plus q.k^T and attn.v, each B*12*S*S*64 MACs.
    case("attention", {"hidden": 768, "heads": 12, "qkv": "fused", "names": ["c_attn", "c_proj"]},
         [(B, S, 768)], (B, S, 768),
         {"c_attn.weight": (2304, 768), "c_attn.bias": (2304,),
          "c_proj.weight": (768, 768), "c_proj.bias": (768,)},
         flops=4 * (2 * B * S * 768 * 768) + 2 * (2 * B * 12 * S * S * 64), id="attention-gpt2"),
    # Llama-style GQA: hidden 64, 8 heads of 8, 2 kv heads -> k/v project to 16.
    case("attention", {"hidden": 64, "heads": 8, "kv_heads": 2, "qkv_bias": False, "out_bias": False},
         [(2, 10, 64)], (2, 10, 64),
         {"q_proj.weight": (64, 64), "k_proj.weight": (16, 64), "v_proj.weight": (16, 64),
          "o_proj.weight": (64, 64)},
         flops=(2 * 20 * 64 * 64) + 2 * (2 * 20 * 64 * 16) + (2 * 20 * 64 * 64)
         + 2 * (2 * 2 * 8 * 10 * 10 * 8), id="attention-gqa"),
    # Qwen3-Next's gated attention: q_proj makes each head's query and gate (2 x 8 heads x 8 wide); the gate
    # costs its projection, a sigmoid and a product (5 per value)
    case("attention", {"hidden": 64, "heads": 8, "kv_heads": 2, "qkv_bias": False, "out_bias": False,
                       "output_gate": True},
         [(2, 10, 64)], (2, 10, 64),
         {"q_proj.weight": (128, 64), "k_proj.weight": (16, 64), "v_proj.weight": (16, 64),
          "o_proj.weight": (64, 64)},
         flops=(2 * 20 * 64 * 64) + 2 * (2 * 20 * 64 * 16) + (2 * 20 * 64 * 64)
         + 2 * (2 * 2 * 8 * 10 * 10 * 8) + 2 * 20 * 64 * 64 + 5 * 20 * 64, id="attention-output-gate"),
    case("attention", {"hidden": 64, "heads": 4, "kv_heads": 1}, [(2, 3, 64)], (2, 3, 64),
         {"q_proj.weight": (64, 64), "q_proj.bias": (64,), "k_proj.weight": (16, 64), "k_proj.bias": (16,),
          "v_proj.weight": (16, 64), "v_proj.bias": (16,), "o_proj.weight": (64, 64), "o_proj.bias": (64,)},
         id="attention-mqa"),
    case("attention", {"hidden": 64, "heads": 8, "kv_heads": 2, "qkv": "fused", "qkv_bias": False},
         [(B, S, 64)], (B, S, 64),
         {"qkv_proj.weight": ((8 + 2 * 2) * 8, 64), "o_proj.weight": (64, 64), "o_proj.bias": (64,)},
         id="attention-fused-gqa"),
    # CodeGen: one bias-free qkv_proj [3·hidden, hidden] read as 4 groups of [q | v | k]: same tensors
    case("attention", {"hidden": 64, "heads": 8, "qkv": "fused", "qkv_groups": 4, "qkv_order": "qvk",
                       "qkv_bias": False, "out_bias": False, "names": ["qkv_proj", "out_proj"]},
         [(B, S, 64)], (B, S, 64), {"qkv_proj.weight": (192, 64), "out_proj.weight": (64, 64)},
         flops=4 * (2 * B * S * 64 * 64) + 2 * (2 * B * 8 * S * S * 8), id="attention-fused-groups-codegen"),
    # cross-attention: queries [2, 5, 64], keys/values from [2, 7, 32]; 4 heads of 16.
    case("attention", {"hidden": 64, "heads": 4, "kv_hidden": 32}, [(2, 5, 64), (2, 7, 32)], (2, 5, 64),
         {"q_proj.weight": (64, 64), "q_proj.bias": (64,), "k_proj.weight": (64, 32), "k_proj.bias": (64,),
          "v_proj.weight": (64, 32), "v_proj.bias": (64,), "o_proj.weight": (64, 64), "o_proj.bias": (64,)},
         flops=(2 * 10 * 64 * 64) + 2 * (2 * 14 * 32 * 64) + (2 * 10 * 64 * 64)
         + 2 * (2 * 2 * 4 * 5 * 7 * 16), id="attention-cross"),
    # explicit head_dim (Gemma-style): hidden need not equal heads * head_dim.
    case("attention", {"hidden": 50, "heads": 4, "head_dim": 16, "qkv_bias": False, "out_bias": False},
         [(1, 3, 50)], (1, 3, 50),
         {"q_proj.weight": (64, 50), "k_proj.weight": (64, 50), "v_proj.weight": (64, 50),
          "o_proj.weight": (50, 64)}, id="attention-head-dim"),
    # Whisper: k_proj has no bias, q/v/out do.
    case("attention", {"hidden": 32, "heads": 2, "k_bias": False, "names": ["q_proj", "k_proj", "v_proj",
                                                                            "out_proj"]},
         [(1, 3, 32)], (1, 3, 32),
         {"q_proj.weight": (32, 32), "q_proj.bias": (32,), "k_proj.weight": (32, 32),
          "v_proj.weight": (32, 32), "v_proj.bias": (32,), "out_proj.weight": (32, 32),
          "out_proj.bias": (32,)}, id="attention-whisper-k-bias"),
    case("attention", {"hidden": 32, "heads": 4, "qkv_bias": False, "out_bias": False},
         [(2, 5, 32), None, (1, 4, 5, 5)], (2, 5, 32),
         {"q_proj.weight": (32, 32), "k_proj.weight": (32, 32), "v_proj.weight": (32, 32),
          "o_proj.weight": (32, 32)}, id="attention-t5-bias"),
    # rotary cos table [1, S, rotary_dim] (rotary_dim <= head_dim = 16) fed by keyword.
    case("attention", {"hidden": 64, "heads": 4, "qkv_bias": False, "out_bias": False},
         [(B, S, 64), None, None, (1, S, 16)], (B, S, 64),
         {"q_proj.weight": (64, 64), "k_proj.weight": (64, 64), "v_proj.weight": (64, 64),
          "o_proj.weight": (64, 64)}, id="attention-rope"),
    # HF masks are [B, 1, S, T]: sdpa's attn_mask only has to broadcast to [B, heads, S, T].
    case("attention", {"hidden": 32, "heads": 4, "qkv_bias": False, "out_bias": False},
         [(2, 5, 32), None, (2, 1, 5, 5)], (2, 5, 32),
         {"q_proj.weight": (32, 32), "k_proj.weight": (32, 32), "v_proj.weight": (32, 32),
          "o_proj.weight": (32, 32)}, id="attention-broadcast-mask"),
    # sdpa, flattened heads: q [B, S, 12*64], k/v [B, T, 12*64].
    case("sdpa", {"heads": 12}, [(B, S, 768), (B, T, 768), (B, T, 768)], (B, S, 768),
         flops=2 * (2 * B * 12 * S * T * 64)),
    case("sdpa", {"heads": 8, "kv_heads": 2}, [(2, 5, 64), (2, 7, 16), (2, 7, 16)], (2, 5, 64),
         flops=2 * (2 * 2 * 8 * 5 * 7 * 8), id="sdpa-gqa"),
    case("sdpa", {"heads": 8, "kv_heads": 2}, [(2, 8, 5, 16), (2, 2, 7, 16), (2, 2, 7, 32)], (2, 8, 5, 32),
         flops=(2 * 2 * 8 * 5 * 7 * 16) + (2 * 2 * 8 * 5 * 7 * 32), id="sdpa-4d-dv"),

    # ---- feed-forward blocks ------------------------------------------------------------
    case("mlp", {"hidden": 768, "intermediate": 3072}, [(B, S, 768)], (B, S, 768),
         {"fc1.weight": (3072, 768), "fc1.bias": (3072,), "fc2.weight": (768, 3072), "fc2.bias": (768,)},
         flops=2 * (2 * B * S * 768 * 3072)),
    case("mlp", {"hidden": 8, "intermediate": 32, "bias": False, "activation": "relu",
                 "names": ["intermediate.dense", "output.dense"]}, [(3, 8)], (3, 8),
         {"intermediate.dense.weight": (32, 8), "output.dense.weight": (8, 32)},
         flops=2 * (2 * 3 * 8 * 32), id="mlp-named"),
    case("gated_mlp", {"hidden": 64, "intermediate": 172}, [(2, 10, 64)], (2, 10, 64),
         {"gate_proj.weight": (172, 64), "up_proj.weight": (172, 64), "down_proj.weight": (64, 172)},
         flops=3 * (2 * 20 * 64 * 172)),
    case("gated_mlp", {"hidden": 64, "intermediate": 172, "fused": True}, [(B, S, 64)], (B, S, 64),
         {"gate_up_proj.weight": (344, 64), "down_proj.weight": (64, 172)},
         flops=3 * (2 * B * S * 64 * 172), id="gated_mlp-fused"),
    # MoE: router 48 -> 8 per token, then top_k=2 experts each run 3 projections 48 <-> 20.
    case("moe", {"hidden": 48, "intermediate": 20, "experts": 8}, [(2, 10, 48)], (2, 10, 48),
         {"gate.weight": (8, 48), "experts.gate_up_proj": (8, 40, 48), "experts.down_proj": (8, 48, 20)},
         flops=(2 * 20 * 48 * 8) + 2 * 3 * (2 * 20 * 48 * 20)),
    case("moe", {"hidden": 48, "intermediate": 20, "experts": 2, "top_k": 1, "router_bias": True,
                 "expert_layout": "separate"}, [(B, S, 48)], (B, S, 48),
         {"gate.weight": (2, 48), "gate.bias": (2,),
          "experts.0.w1.weight": (20, 48), "experts.0.w3.weight": (20, 48), "experts.0.w2.weight": (48, 20),
          "experts.1.w1.weight": (20, 48), "experts.1.w3.weight": (20, 48), "experts.1.w2.weight": (48, 20)},
         id="moe-separate-mixtral"),
    # experts (lib.moe's fused primitive): each token through its top_k=2 of 8 experts, 3 projections 48 <-> 20
    case("experts", {"hidden": 48, "intermediate": 20, "experts": 8}, [(B, S, 48), (B, S, 2), (B, S, 2)],
         (B, S, 48), {"gate_up_proj": (8, 40, 48), "down_proj": (8, 48, 20)}, flops=2 * 3 * (2 * B * S * 48 * 20)),
    # ---- state-space mixers -------------------------------------------------------------------
    # Mamba (transformers' MambaMixer): hidden 48, intermediate 96, state 16, kernel 4, dt_rank ceil(48/16) = 3;
    # per token 2x(48*192 + 96*35 + 3*96 + 96*48) for the projections, 2*96*4 the conv, 9*96*16 the scan
    case("mamba_mixer", {"hidden": 48, "intermediate": 96}, [(B, S, 48)], (B, S, 48),
         {"A_log": (96, 16), "D": (96,), "conv1d.weight": (96, 1, 4), "conv1d.bias": (96,),
          "in_proj.weight": (192, 48), "x_proj.weight": (35, 96), "dt_proj.weight": (96, 3),
          "dt_proj.bias": (96,), "out_proj.weight": (48, 96)},
         flops=B * S * (2 * (48 * 192 + 96 * 35 + 3 * 96 + 96 * 48) + 2 * 96 * 4 + 9 * 96 * 16)),
    # Jamba's: biases on in_proj and out_proj, none on the conv, weighted norms of dt [dt_rank], B and C [state]
    case("mamba_mixer", {"hidden": 20, "intermediate": 40, "state_size": 3, "conv_kernel": 2, "dt_rank": 5,
                         "bias": True, "conv_bias": False, "bcdt_norm": "weighted"}, [(2, 7, 20)], (2, 7, 20),
         {"A_log": (40, 3), "D": (40,), "conv1d.weight": (40, 1, 2), "in_proj.weight": (80, 20),
          "in_proj.bias": (80,), "x_proj.weight": (11, 40), "dt_proj.weight": (40, 5), "dt_proj.bias": (40,),
          "out_proj.weight": (20, 40), "out_proj.bias": (20,), "dt_layernorm.weight": (5,),
          "b_layernorm.weight": (3,), "c_layernorm.weight": (3,)}, id="mamba_mixer-jamba"),
    # Falcon-Mamba's: the norms have no weights; transformers registers unused buffers (dt's of width intermediate)
    case("mamba_mixer", {"hidden": 20, "intermediate": 40, "state_size": 3, "dt_rank": 5, "bcdt_norm": "weightless"},
         [(2, 7, 20)], (2, 7, 20),
         {"A_log": (40, 3), "D": (40,), "conv1d.weight": (40, 1, 4), "conv1d.bias": (40,),
          "in_proj.weight": (80, 20), "x_proj.weight": (11, 40), "dt_proj.weight": (40, 5), "dt_proj.bias": (40,),
          "out_proj.weight": (20, 40)},
         {"dt_layernorm.weight": (40,), "b_layernorm.weight": (3,), "c_layernorm.weight": (3,)},
         id="mamba_mixer-falcon"),
    # DeepSeek's latent attention: q through a rank-12 pair, keys and values from a latent of 10 per token
    case("latent_attention", {"hidden": 32, "heads": 4, "kv_rank": 10, "nope_dim": 6, "rope_dim": 4, "v_dim": 5,
                              "q_rank": 12}, [(2, 7, 32), (1, 7, 4), (1, 7, 4)], (2, 7, 32),
         {"q_a_proj.weight": (12, 32), "q_a_layernorm.weight": (12,), "q_b_proj.weight": (40, 12),
          "kv_a_proj_with_mqa.weight": (14, 32), "kv_a_layernorm.weight": (10,), "kv_b_proj.weight": (44, 10),
          "o_proj.weight": (32, 20)},
         flops=2 * 14 * (12 * 32 + 40 * 12 + 14 * 32 + 44 * 10 + 20 * 32) + 2 * 2 * 4 * 7 * 7 * (10 + 5)),
    # ---- issue "the spec language": transposed and 3-D convolutions ---------------------------
    # nn.ConvTranspose2d(128, 64, 2, stride=2): out = (n - 1)*2 + 1*(2 - 1) + 0 + 1 = 2n; weight [in, out, k, k]
    case("conv_transpose2d", {"in_channels": 128, "out_channels": 64, "kernel_size": 2, "stride": 2},
         [(B, 128, H, 16)], (B, 64, 2 * H, 32), {"weight": (128, 64, 2, 2), "bias": (64,)},
         flops=2 * (B * 128 * H * 16) * 64 * 4),
    # groups 2, padding 1, output_padding 1: (5 - 1)*2 - 2 + 2 + 1 + 1 = 10, (7 - 1)*2 - 2 + 2 + 1 + 1 = 14
    case("conv_transpose2d", {"in_channels": 8, "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 1,
                              "output_padding": 1, "groups": 2, "bias": False},
         [(1, 8, 5, 7)], (1, 4, 10, 14), {"weight": (8, 2, 3, 3)}, id="conv_transpose2d-groups-output-padding"),
    # nn.ConvTranspose3d(6, 4, (2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1), groups=2): D' = (D - 1) + 1 + 1 = D + 1,
    # H' = (5 - 1)*2 - 2 + 2 + 1 = 9; weight [in, out / groups, *kernel]; FLOPs 2 * inputs * (out / groups) * kernel
    case("conv_transpose3d", {"in_channels": 6, "out_channels": 4, "kernel_size": [2, 3, 3], "stride": [1, 2, 2],
                              "padding": [0, 1, 1], "groups": 2},
         [(B, 6, T, 5, 5)], (B, 4, T + 1, 9, 9), {"weight": (6, 2, 2, 3, 3), "bias": (4,)},
         flops=2 * (B * 6 * T * 25) * 2 * 18),
    # dilation 2: (6 - 1)*1 + 2*(3 - 1) + 1 = 10
    case("conv_transpose1d", {"in_channels": 4, "out_channels": 6, "kernel_size": 3, "dilation": 2},
         [(2, 4, 6)], (2, 6, 10), {"weight": (4, 6, 3), "bias": (6,)}),
    # Qwen2-VL's patch embedding: kernel = stride = [2, 14, 14] on [N, 3, 2, 14, 14] -> [N, 96, 1, 1, 1]
    case("conv3d", {"in_channels": 3, "out_channels": 96, "kernel_size": [2, 14, 14], "stride": [2, 14, 14],
                    "bias": False}, [(B, 3, 2, 14, 14)], (B, 96, 1, 1, 1), {"weight": (96, 3, 2, 14, 14)},
         flops=2 * B * 96 * (3 * 2 * 14 * 14)),

    # ---- expand (Tensor.expand), pad (F.pad), reductions, scale --------------------------------
    case("expand", {"sizes": [B, -1, -1]}, [(1, 16, 64)], (B, 16, 64), id="expand-latents-to-batch"),
    case("expand", {"sizes": [3, 4, 5]}, [(4, 1)], (3, 4, 5), id="expand-new-leading-dim"),
    case("pad", {"pad": [1, 2]}, [(B, 3, 10)], (B, 3, 13)),
    case("pad", {"pad": [1, 1, 2, 0], "mode": "reflect"}, [(2, 3, 8, 8)], (2, 3, 10, 10), id="pad-2d-reflect"),
    case("mean", {"dim": 1}, [(B, S, 64)], (B, 64), flops=B * S * 64),
    case("mean", {"dim": [-2, -1], "keepdim": True}, [(2, 8, 4, 4)], (2, 8, 1, 1), id="mean-keepdim"),
    case("mean", {}, [(2, 3)], (), id="mean-all"),
    case("sum", {"dim": -1}, [(B, S, 5)], (B, S)),
    case("amax", {"dim": 0}, [(4, 7)], (7,)),
    # torch.argmax drops the searched dim (keepdim keeps it with size 1); the indices have no tensors
    case("argmax", {"dim": -1}, [(B, S)], (B,), flops=B * S),
    case("argmax", {"dim": 1, "keepdim": True}, [(2, 5, 7)], (2, 1, 7), flops=70, id="argmax-keepdim"),
    case("scale", {"factor": 0.125}, [(B, S, 64)], (B, S, 64), flops=B * S * 64),

    # ---- nn.MultiheadAttention(64, 4, kdim=32, vdim=48): separate q/k/v weights, packed bias -----
    case("multihead_attention", {"embed_dim": 64, "num_heads": 4, "kdim": 32, "vdim": 48},
         [(7, 2, 64), (9, 2, 32), (9, 2, 48)], [(7, 2, 64), (2, 7, 9)],
         {"q_proj_weight": (64, 64), "k_proj_weight": (64, 32), "v_proj_weight": (64, 48),
          "in_proj_bias": (192,), "out_proj.weight": (64, 64), "out_proj.bias": (64,)},
         flops=2 * 14 * 64 * 64 * 2 + 2 * 18 * 64 * (32 + 48) + 2 * 2 * 14 * 9 * 64),
    # widths equal: one packed in_proj_weight [3E, E]; batch_first; add_bias_kv adds a key position
    case("multihead_attention", {"embed_dim": 32, "num_heads": 2, "batch_first": True, "add_bias_kv": True},
         [(B, S, 32), (B, T, 32), (B, T, 32)], [(B, S, 32), (B, S, T + 1)],
         {"in_proj_weight": (96, 32), "in_proj_bias": (96,), "out_proj.weight": (32, 32), "out_proj.bias": (32,),
          "bias_k": (1, 1, 32), "bias_v": (1, 1, 32)}, id="multihead_attention-packed-bias-kv"),
    # forward(query, key, value, key_padding_mask, attn_mask): the masks change no shape (torchaudio's Conformer)
    case("multihead_attention", {"embed_dim": 32, "num_heads": 4}, [(T, B, 32), (T, B, 32), (T, B, 32), (B, T)],
         [(T, B, 32), (B, T, T)], {"in_proj_weight": (96, 32), "in_proj_bias": (96,), "out_proj.weight": (32, 32),
                                   "out_proj.bias": (32,)}, id="multihead_attention-key-padding-mask"),
    case("multihead_attention", {"embed_dim": 32, "num_heads": 4, "batch_first": True},
         [(2, 5, 32), (2, 7, 32), (2, 7, 32), None, (8, 5, 7)], [(2, 5, 32), (2, 5, 7)],
         {"in_proj_weight": (96, 32), "in_proj_bias": (96,), "out_proj.weight": (32, 32), "out_proj.bias": (32,)},
         id="multihead_attention-3d-attn-mask"),
    # attention with keys and values from sources of other widths (a Perceiver's cross-attention)
    case("attention", {"hidden": 64, "heads": 4, "kdim": 32, "vdim": 48, "qkv_bias": False},
         [(2, 16, 64), None, None, None, (2, 50, 32), (2, 50, 48)], (2, 16, 64),
         {"q_proj.weight": (64, 64), "k_proj.weight": (64, 32), "v_proj.weight": (64, 48),
          "o_proj.weight": (64, 64), "o_proj.bias": (64,)},
         flops=2 * 32 * 64 * 64 + 2 * 100 * (32 + 48) * 64 + 2 * 32 * 64 * 64 + 2 * (2 * 2 * 4 * 16 * 50 * 16),
         id="attention-kdim-vdim"),
    # ---- issue "research building blocks": parameter-free arithmetic (torch semantics) ---------
    case("add", {"constant": 1.0}, [(B, S, 8)], (B, S, 8), flops=B * S * 8, id="add-constant"),
    case("mul", {"constant": 0.5}, [(B, 4)], (B, 4), id="mul-constant"),
    case("sub", {}, [(B, 1, 8), (1, S, 8)], (B, S, 8)),
    case("sub", {"constant": 1.0, "reverse": True}, [(B, S)], (B, S), id="sub-one-minus-x"),
    case("div", {}, [(4, 5), (5,)], (4, 5)),
    case("maximum", {}, [(3, 1), (1, 4)], (3, 4)),
    case("minimum", {"constant": 0.0}, [(3, 4)], (3, 4)),
    case("pow", {"constant": 2.0}, [(B, 8)], (B, 8), flops=4 * B * 8),
    case("pow", {"constant": 0.9, "reverse": True}, [(S, S)], (S, S), id="pow-decay-base"),
    case("eq", {}, [(2, 3), (2, 3)], (2, 3)),
    case("ne", {"constant": 0.0}, [(2, 3)], (2, 3)),
    case("lt", {}, [(S, 1), (1, S)], (S, S)),
    case("le", {}, [(S, 1), (1, S)], (S, S)),
    case("gt", {"constant": 0.5}, [(B, S)], (B, S)),
    case("ge", {}, [(S, 1), (1, S)], (S, S)),
    case("neg", {}, [(B, 3)], (B, 3)),
    case("exp", {}, [(B, 3)], (B, 3), flops=4 * B * 3),
    case("log", {}, [(2, 3)], (2, 3)),
    case("sin", {}, [(B, 3)], (B, 3)),
    case("cos", {}, [(B, 3)], (B, 3)),
    case("abs", {}, [(2, 3)], (2, 3)),
    case("floor", {}, [(2, 3)], (2, 3)),
    case("sqrt", {}, [(2, 3)], (2, 3)),
    case("rsqrt", {}, [(2, 3)], (2, 3)),
    case("reciprocal", {}, [(2, 3)], (2, 3)),
    case("square", {}, [(2, 3)], (2, 3)),
    case("clamp", {"min": -1.0, "max": 1.0}, [(B, 3)], (B, 3)),
    case("where", {}, [(S, S), (B, 1, S, S), ()], (B, 1, S, S)),
    case("masked_fill", {"value": -1e9}, [(B, 4, S, S), (S, S)], (B, 4, S, S)),
    case("masked_scatter", {}, [(B, S, 8), (B, S, 1), (2, 5, 8)], (B, S, 8), flops=0),
    case("tril", {}, [(S, S)], (S, S)),
    case("triu", {"diagonal": 1}, [(B, S, S)], (B, S, S)),
    case("cumsum", {"dim": -1}, [(B, S)], (B, S)),
    # Tensor.to(torch.float32) keeps the shape (positions made floats for rotary frequencies)
    case("cast", {"dtype": "float32"}, [(B, S)], (B, S)),
    # torch.arange(S) has S entries; arange(1, 10, 3) is 1, 4, 7
    case("arange", {"end": S}, [], (S,)),
    case("arange", {"end": 10, "start": 1, "step": 3}, [], (3,), id="arange-step"),
    case("full", {"shape": [S, S], "value": 1.0}, [], (S, S)),

    # ---- token routing: topk, gather, index_select, scatter_add, index_add ----------------------
    case("topk", {"k": 4, "dim": 1}, [(B, S)], [(B, 4), (B, 4)]),
    case("gather", {"dim": 1}, [(B, S, 8), (B, 4, 8)], (B, 4, 8)),
    case("index_select", {"dim": 1}, [(B, S, 8), (5,)], (B, 5, 8)),
    case("scatter_add", {"dim": 1}, [(B, S, 8), (B, 4, 8), (B, 4, 8)], (B, S, 8), flops=B * 4 * 8),
    case("index_add", {"dim": 0}, [(10, 8), (3,), (3, 8)], (10, 8)),

    # ---- slicing and resampling ---------------------------------------------------------------
    case("slice", {"dim": 1, "start": 1}, [(B, S, 8)], (B, S - 1, 8), id="slice-drop-first"),
    case("slice", {"dim": -1, "end": L}, [(B, 4, 2 * L)], (B, 4, L), id="slice-first-L"),
    case("slice", {"dim": -1, "start": -3, "end": -1}, [(2, 10)], (2, 2), id="slice-negative"),
    case("slice", {"dim": 0, "start": 1, "end": 100, "step": 2}, [(10, 3)], (5, 3), id="slice-clamped-step"),
    case("unsqueeze", {"dim": -1}, [(B, S)], (B, S, 1)),
    case("squeeze", {"dim": 1}, [(B, 1, 8)], (B, 8)),
    case("interpolate", {"scale_factor": 2.0, "mode": "nearest"}, [(B, 8, H, W)], (B, 8, 2 * H, 2 * W)),
    case("interpolate", {"size": [7, 9], "mode": "bilinear"}, [(1, 3, 4, 4)], (1, 3, 7, 9), id="interpolate-size"),
    case("interpolate", {"scale_factor": 1.5, "mode": "linear"}, [(1, 3, 5)], (1, 3, 7), id="interpolate-floor"),
    case("glu", {"dim": -1}, [(B, S, 16)], (B, S, 8)),
    # diffusers: t [B] -> [B, 256]
    case("timestep_embedding", {"dim": 256}, [(B,)], (B, 256)),
    # x [B, C, L] with a kernel per channel [C, L]; three real FFTs of n = 2L: 2.5·n·log2(n) each
    case("fft_conv", {}, [(2, 4, 1000), (4, 1000)], (2, 4, 1000),
         flops=2 * 4 * (3 * 5 * 2000 * 11 // 2 + 6 * 1001)),
    # register_buffer: not learned; its value may come from an input of its shape
    case("buffer", {"shape": [4], "persistent": False}, [], (4,), buffers={"": (4,)}),
    case("buffer", {"shape": [2, 3], "tensor": "table"}, [(2, 3)], (2, 3), buffers={"table": (2, 3)},
         id="buffer-with-value"),
    # torch.linspace(0, 1, 64) has 64 entries; torch.sort gives values and indices
    case("linspace", {"start": 0.0, "end": 1.0, "steps": 64}, [], (64,)),
    case("sort", {"dim": 1}, [(B, S)], [(B, S), (B, S)]),
    case("median", {"dim": 1}, [(B, S, 8)], [(B, 8), (B, 8)]),
    case("median", {"dim": -1, "keepdim": True}, [(B, S, 8)], [(B, S, 1), (B, S, 1)], id="median-keepdim"),
    case("median", {}, [(B, S)], (), id="median-all"),
    # a scalar: RecurrentGemma's normalizer, sqrt(hidden) held in bfloat16
    case("full", {"shape": [], "value": 50.596, "dtype": "bfloat16"}, [], (), id="full-scalar"),
    case("buffer", {"shape": [], "persistent": False, "tensor": "normalizer"}, [()], (),
         buffers={"normalizer": ()}, id="buffer-scalar"),
    # BERT's position_ids: an int64 buffer (its dtype: test_buffers_keep_their_dtype)
    case("buffer", {"shape": [1, 512], "dtype": "int64"}, [], (1, 512), buffers={"": (1, 512)}, id="buffer-int64"),
    # torch.view_as_complex / view_as_real: (real, imaginary) pairs as one complex value, and back
    case("view_as_complex", {}, [(S, 1, 44, 2)], (S, 1, 44), flops=0),
    case("view_as_real", {}, [(S, 1, 44)], (S, 1, 44, 2), flops=0),
    # ---- fixed-state layers: nn.Conv1d(C, C, K, groups=C) weight [C, 1, K]; Griffin's RG-LRU
    # (RecurrentGemmaRglru: block-diagonal gates [heads, W/heads, W/heads]); Mamba-2 (Mamba2Mixer:
    # I = heads·head_dim = 8192, conv over I + 2·groups·state = 10240, in_proj 8192 + 10240 + 128 wide)
    case("causal_conv1d", {"channels": 2560, "kernel_size": 4}, [(B, S, 2560)], (B, S, 2560),
         {"weight": (2560, 1, 4), "bias": (2560,)}, flops=2 * B * S * 2560 * 4),
    case("rg_lru", {"width": 2560, "heads": 10}, [(B, S, 2560)], (B, S, 2560),
         {"recurrent_param": (2560,), "input_gate_weight": (10, 256, 256), "input_gate_bias": (10, 256),
          "recurrent_gate_weight": (10, 256, 256), "recurrent_gate_bias": (10, 256)},
         flops=2 * 2 * B * S * 2560 * 256 + 2 * B * S * 2560),
    case("mamba2_mixer", {"hidden": 4096, "heads": 128, "head_dim": 64, "state": 128, "groups": 8},
         [(B, S, 4096)], (B, S, 4096),
         {"conv1d.weight": (10240, 1, 4), "conv1d.bias": (10240,), "in_proj.weight": (18560, 4096),
          "dt_bias": (128,), "A_log": (128,), "norm.weight": (8192,), "D": (128,), "out_proj.weight": (4096, 8192)}),
    case("mamba2_mixer", {"hidden": 24, "heads": 4, "head_dim": 18, "state": 8, "bias": True, "conv_bias": False},
         [(2, 7, 24)], (2, 7, 24),
         {"conv1d.weight": (88, 1, 4), "in_proj.weight": (164, 24), "in_proj.bias": (164,), "dt_bias": (4,),
          "A_log": (4,), "norm.weight": (72,), "D": (4,), "out_proj.weight": (24, 72), "out_proj.bias": (24,)},
         id="mamba2_mixer-biases"),
    # Falcon-H1's mixer: no norm (mamba_rms_norm false), out_proj's bias apart (projectors_bias), and the five
    # muP multipliers of in_proj's output as the non-persistent buffer mup_vector [1, 1, 164]
    case("mamba2_mixer", {"hidden": 24, "heads": 4, "head_dim": 18, "state": 8, "norm": "none", "out_bias": True,
                          "multipliers": [0.5, 1.0, 2.0, 2.0, 0.25]},
         [(2, 7, 24)], (2, 7, 24),
         {"conv1d.weight": (88, 1, 4), "conv1d.bias": (88,), "in_proj.weight": (164, 24), "dt_bias": (4,),
          "A_log": (4,), "D": (4,), "out_proj.weight": (24, 72), "out_proj.bias": (24,)},
         {"mup_vector": (1, 1, 164)}, id="mamba2_mixer-falcon-h1"),
    # Gated DeltaNet's recurrence (Qwen3-Next-80B's sizes: 16 key heads of 128 serve 32 value heads of 128):
    # no tensors; the output keeps the value heads apart for the gated norm; 7 FLOPs per state value and token
    case("gated_delta_rule", {"heads": 32, "key_heads": 16, "key_dim": 128, "value_dim": 128},
         [(B, S, 2048), (B, S, 2048), (B, S, 4096), (B, S, 32), (B, S, 32)], (B, S, 32, 128),
         flops=7 * B * S * 32 * 128 * 128),
    # Gemma 4's audio attention (8 heads of 128, blocks of 12 frames with 12 frames back): no tensors; each
    # query scores its block's 24-frame context and 13 relative positions, and weighs 24 values
    case("local_attention", {"heads": 8, "chunk": 12, "past": 12, "window_past": 11, "softcap": 50.0},
         [(B, S, 1024), (B, S, 1024), (B, S, 1024), (13, 1024), (B, S)], (B, S, 1024),
         flops=2 * B * S * 1024 * (2 * 24 + 13)),
    # Swin's windows: torch.roll keeps the shape; the shift mask is one [49, 49] per 7x7 window of
    # a 14x21 map (6 windows) for each image; the bias table has (2·7-1)² rows, its index 7⁴ entries
    case("roll", {"shifts": [-3, -3], "dims": [1, 2]}, [(B, 14, 14, 96)], (B, 14, 14, 96), flops=0),
    case("window_mask", {"window": 7, "shift": 3}, [(B, 14, 21, 96)], (6 * B, 1, 49, 49), flops=0),
    case("grid_window_mask", {"grid": [16, 12], "window": 8, "tile": [2, 2]}, [(B, 192, 32)], (1, 1, 192, 192),
         flops=0),
    case("window_position_bias", {"window": 7, "heads": 3}, [], (1, 3, 49, 49),
         {"relative_position_bias_table": (169, 3)}, {"relative_position_index": (2401,)}, flops=0),
]


# Each: (op name, hyperparameters, input shapes or None for "fails at build", error, words in message).
ERRORS = [
    # LLaVA / Qwen2-VL: image features must be as wide as the token embeddings they replace
    reject("masked_scatter", {}, [(B, S, 8), (B, S, 1), (2, 5, 6)], ShapeError,
           ["the source's rows [6] must be the input's [8]", "mask [B, S, 1]"], id="masked_scatter-rows"),
    reject("mamba2_mixer", {"hidden": 64, "heads": 6, "head_dim": 16, "state": 8, "groups": 4}, None, SpecError,
           ["heads=6 is not divisible by groups=4"]),
    reject("mamba2_mixer", {"hidden": 64, "heads": 4, "head_dim": 16, "state": 8, "multipliers": [1.0, 2.0]}, None,
           SpecError, ["multipliers needs 5 factors (z, x, B, C, dt); received [1.0, 2.0]"]),
    reject("mamba2_mixer", {"hidden": 64, "heads": 4, "head_dim": 16, "state": 8, "norm": "before"}, None,
           SpecError, ["mamba2_mixer.norm must be one of gated, gate_after, none; received 'before'"]),
    reject("rg_lru", {"width": 10, "heads": 4}, None, SpecError, ["width=10 is not divisible by heads=4"]),
    reject("gated_delta_rule", {"heads": 4, "key_dim": 8, "value_dim": 8},
           [(2, 7, 32), (2, 7, 32), (2, 7, 24), (2, 7, 4), (2, 7, 4)], ShapeError,
           ["value (heads·value_dim)", "24", "32"]),
    reject("causal_conv1d", {"channels": 8, "kernel_size": 4}, [(2, 7, 6)], ShapeError, ["channels", "6", "8"]),
    reject("local_attention", {"heads": 3, "chunk": 4}, [(2, 7, 8), (2, 7, 8), (2, 7, 8)], ShapeError,
           ["the width 8 is not a multiple of heads=3"]),
    reject("local_attention", {"heads": 2, "chunk": 4, "future": 1, "window_future": 2}, None, SpecError,
           ["window_future=2 must lie in -1..future=1"]),
    reject("split", {"dim": -1, "sizes": [-2, 18]}, None, SpecError, ["positive"], id="split-negative-size"),
    reject("split", {"dim": -1, "sizes": [10, -1]}, [(2, 8)], ShapeError, ["more than"], id="split-rest-negative"),
    reject("add", {}, [(2, 3)], ShapeError, ["second input, or a constant"], id="add-one-input"),
    reject("sub", {"constant": 1.0}, [(2, 3), (2, 3)], ShapeError, ["two inputs, or one input and a constant"]),
    reject("topk", {"k": 9, "dim": 1}, [(2, 8)], ShapeError, ["k=9"]),
    reject("slice", {"dim": 1, "start": 5, "end": 2}, [(2, 8)], ShapeError, ["empty"]),
    reject("slice", {"dim": 0, "step": 0}, None, SpecError, ["step"]),
    reject("interpolate", {}, None, SpecError, ["size or scale_factor"]),
    reject("interpolate", {"scale_factor": 1.5}, [(1, 3, H)], ShapeError, ["scale"], id="interpolate-symbolic-fraction"),
    reject("glu", {}, [(2, 7)], ShapeError, ["divisible"]),
    reject("clamp", {}, None, SpecError, ["min, max"]),
    reject("arange", {"end": 0}, [], ShapeError, ["empty"]),
    reject("gather", {"dim": 1}, [(2, 8, 4), (2, 3)], ShapeError, ["rank"]),
    reject("fft_conv", {}, [(2, 4, 16), (3, 16)], ShapeError, ["channels"]),
    reject("sdpa", {"heads": 2}, [(2, 5, 8), (3, 5, 8), (3, 5, 8)], ShapeError, ["batch", "2", "3"],
           id="sdpa-batch-mismatch"),
    reject("matmul", {}, [(2, 5, 8), (3, 8, 4)], ShapeError, ["broadcast"], id="matmul-batch-mismatch"),
    reject("conv_transpose2d", {"in_channels": 4, "out_channels": 4, "kernel_size": 3, "stride": 2,
                                "output_padding": 2}, None, SpecError, ["output_padding"]),
    reject("expand", {"sizes": [4, 5]}, [(3, 5)], ShapeError, ["size 0"], id="expand-non-singleton"),
    reject("expand", {"sizes": [5]}, [(3, 5)], ShapeError, ["expand"], id="expand-drops-dims"),
    reject("pad", {"pad": [1]}, None, SpecError, ["pairs"]),
    reject("pad", {"pad": [8, 0], "mode": "reflect"}, [(1, 2, 8)], ShapeError, ["reflect"]),
    reject("mean", {"dim": 3}, [(2, 3)], ShapeError, ["dim=3"]),
    reject("multihead_attention", {"embed_dim": 64, "num_heads": 5}, None, SpecError, ["divisible"]),
    reject("multihead_attention", {"embed_dim": 64, "num_heads": 4, "kdim": 32},
           [(7, 2, 64), (9, 2, 64), (9, 2, 64)], ShapeError, ["kdim", "32"], id="multihead_attention-kdim"),
    reject("multihead_attention", {"embed_dim": 32, "num_heads": 4}, [(9, 2, 32)] * 3 + [(2, 8)], ShapeError,
           ["length of the key_padding_mask", "8", "9"], id="multihead_attention-key-padding-mask-length"),
    reject("multihead_attention", {"embed_dim": 32, "num_heads": 4}, [(9, 2, 32)] * 3 + [None, (2, 9, 9)],
           ShapeError, ["batch · num_heads", "2", "8"], id="multihead_attention-attn-mask-heads"),
    reject("attention", {"hidden": 64, "heads": 4, "kdim": 32, "vdim": 48}, [(2, 16, 64), (2, 50, 32)],
           ShapeError, ["separate inputs k and v"], id="attention-kdim-vdim-one-source"),
    reject("linear", {"in_features": 768, "out_features": 10}, [(2, 5, 512)], ShapeError, ["512", "768"]),
    reject("linear", {"in_features": 0, "out_features": 10}, None, SpecError, ["in_features"]),
    reject("linear", {"in_features": 8}, None, SpecError, ["out_features"]),
    reject("bilinear", {"in1_features": 8, "in2_features": 6, "out_features": 4}, [(2, 5, 8), (2, 3, 6)], ShapeError,
           ["dimension 1 of the second input", "3", "5"]),
    reject("linear", {"in_features": "8", "out_features": 10}, None, SpecError, ["in_features"]),
    reject("linear", {"in_features": 8, "out_features": 10, "weight_layout": "io"}, None, SpecError, []),
    reject("embedding", {"num_embeddings": 0, "embedding_dim": 4}, None, SpecError, ["num_embeddings"]),
    reject("position_embedding", {"num_positions": 1024, "embedding_dim": 8}, [(1, 1025, 8)], ShapeError, ["1025"]),
    reject("position_embedding", {"num_positions": 2050, "embedding_dim": 8, "offset": 2}, [(1, 2049)],
     ShapeError, ["2049"]),
    reject("position_embedding", {"num_positions": 16, "embedding_dim": 8, "pad": 1}, [(2, 15)], ShapeError,
           ["15", "after pad"], id="position_embedding-pad-rows"),
    reject("position_embedding", {"num_positions": 16, "embedding_dim": 8, "offset": 2, "pad": 1}, [(2, 5, 8)],
           ShapeError, ["token ids [B, S]"], id="position_embedding-pad-needs-ids"),
    reject("last_token", {"pad": 0, "token": 2}, None, SpecError, ["pad=0 and token=2", "give one"],
           id="last_token-pad-and-token"),
    reject("rotary_embedding", {"head_dim": 15, "rotary_dim": 15}, None, SpecError,
           ["16 columns for rotary_dim=15", "head_dim=15"]),
    reject("rotary_embedding", {"head_dim": 64, "rotary_dim": 128}, None, SpecError, ["rotary_dim=128"]),
    reject("rotary_embedding", {"head_dim": 64, "positions": 16}, [(2, 17, 64)], ShapeError,
           ["sequence length 17 exceeds the 16 positions of the rotary table"]),
    reject("attention", {"hidden": 48, "heads": 6, "qkv": "fused", "qkv_groups": 4}, None, SpecError,
           ["heads=6 and kv_heads=6 must be multiples of qkv_groups=4"], id="attention-groups-divide-heads"),
    reject("attention", {"hidden": 48, "heads": 4, "qkv_order": "kvq"}, None, SpecError,
           ["qkv_groups and qkv_order arrange a fused projection of qkv_layout blocks",
            "qkv=separate"], id="attention-order-needs-fused-blocks"),
    reject("attention", {"hidden": 48, "heads": 4, "qkv": "fused", "qkv_order": "qqv"}, None, SpecError,
           ["qkv_order"], id="attention-order-is-a-permutation"),
    reject("rotary_embedding", {"head_dim": 64, "scaling": "linear", "factor": 0.0}, None, SpecError,
           ["scaling 'linear' needs a positive factor; received factor=0.0"], id="rotary_embedding-linear-factor"),
    reject("softcap", {"cap": 0.0}, None, SpecError, ["cap must be positive; received 0.0"]),
    reject("attention", {"hidden": 32, "heads": 4, "softcap": -1.0}, None, SpecError,
           ["softcap must be positive", "-1.0"], id="attention-softcap"),
    reject("layer_norm", {"normalized_shape": 768}, [(2, 5, 512)], ShapeError, ["512", "768"]),
    reject("layer_norm", {"normalized_shape": 0}, None, SpecError, []),
    reject("rms_norm", {"dim": 64}, [(2, 32)], ShapeError, ["32", "64"]),
    reject("rms_norm", {"dim": 64, "axis": 1}, [(2, 32, 64)], ShapeError, ["channel dimension", "32", "64"]),
    reject("batch_norm", {"num_features": 64}, [(2, 32, 8, 8)], ShapeError, ["32", "64"]),
    reject("group_norm", {"num_groups": 5, "num_channels": 64}, None, SpecError, ["64", "5"]),
    reject("conv2d", {"in_channels": 3, "out_channels": 8, "kernel_size": 3}, [(1, 4, 8, 8)], ShapeError, ["4", "3"]),
    reject("conv2d", {"in_channels": 3, "out_channels": 8, "kernel_size": 5}, [(1, 3, 4, 4)], ShapeError, []),
    reject("conv2d", {"in_channels": 6, "out_channels": 8, "kernel_size": 3, "groups": 4}, None, SpecError, []),
    reject("conv2d", {"in_channels": 3, "out_channels": 8, "kernel_size": 3, "stride": 2, "padding": "same"},
     None, SpecError, []),
    reject("conv2d", {"in_channels": 3, "out_channels": 8, "kernel_size": [3, 3, 3]}, None, SpecError, []),
    reject("conv1d", {"in_channels": 3, "out_channels": 8, "kernel_size": 0}, None, SpecError, []),
    reject("conv1d", {"in_channels": 3, "out_channels": 3, "kernel_size": 3, "weight_norm": 3}, None, SpecError,
           ["weight_norm must be a dim of the 3-d weight; received 3"], id="conv1d-weight-norm-dim"),
    reject("conv_frames_mask", {"kernels": [10, 3], "strides": [5]}, None, SpecError,
           ["one length", "2 kernels and 1 strides"]),
    reject("conv_frames_mask", {"kernels": [3], "strides": [2]}, [(2, 50), (3, 7, 8)], ShapeError,
           ["batch dimension of the mask"], id="conv_frames_mask-batch"),
    reject("max_pool2d", {"kernel_size": 3}, [(1, 3, 2, 2)], ShapeError, []),
    reject("max_pool2d", {"kernel_size": 2}, [(1, 3, 8)], ShapeError, []),
    reject("avg_pool2d", {"kernel_size": 5, "stride": 2, "ceil_mode": True}, [(1, 3, 2, 2)], ShapeError,
           ["smaller than the window"], id="avg_pool2d-ceil-no-window"),
    reject("softmax", {"dim": 4}, [(2, 3, 4, 5)], ShapeError, []),
    reject("dropout", {"p": 1.5}, None, SpecError, ["1.5"]),
    reject("add", {}, [(2, 3), (4,)], ShapeError, []),
    reject("matmul", {}, [(2, 3, 4), (2, 5, 6)], ShapeError, []),
    reject("matmul", {}, [(2, 3, 4), (5, 4, 6)], ShapeError, []),
    reject("reshape", {"shape": [-1, -1]}, None, SpecError, []),
    reject("reshape", {"shape": [5, -1]}, [(2, 3, 4)], ShapeError, []),
    reject("reshape", {"shape": [5, 5]}, [(2, 3, 4)], ShapeError, ["24", "25"]),
    reject("transpose", {"dim0": 0, "dim1": 3}, [(2, 3, 4)], ShapeError, []),
    reject("permute", {"dims": [0, 0, 1]}, [(2, 3, 4)], ShapeError, []),
    reject("pixel_unshuffle", {"grid": [6, 5], "factor": 2}, None, SpecError,
           ["the grid [6, 5] is not made of whole 2x2 blocks"], id="pixel_unshuffle-partial-blocks"),
    reject("pixel_unshuffle", {"grid": [4, 4], "order": "columns"}, None, SpecError,
           ["order must be one of channels_first, patches_first", "'columns'"], id="pixel_unshuffle-order"),
    reject("pixel_unshuffle", {"grid": [4, 4]}, [(2, 15, 8)], ShapeError, ["tokens of the 4x4 grid", "15"],
           id="pixel_unshuffle-token-count"),
    reject("concat", {"dim": 1}, [(2, 3), (4, 3)], ShapeError, []),
    reject("split", {"sizes": [1, 2], "sections": 3}, None, SpecError, []),
    reject("split", {}, None, SpecError, []),
    reject("split", {"sizes": [1, 2]}, [(2, 4)], ShapeError, []),
    reject("split", {"sections": 3}, [(2, 10)], ShapeError, []),
    reject("flatten", {"start_dim": 2, "end_dim": 1}, [(2, 3, 4)], ShapeError, []),
    reject("select", {"dim": 1, "index": 5}, [(2, 5)], ShapeError, []),
    reject("parameter", {"shape": [4, -1]}, None, SpecError, ["[4, -1]"]),
    reject("buffer", {"shape": [4], "dtype": "long"}, None, SpecError,
           ["buffer.dtype must be one of float32", "int64", "bool", "complex64", "'long'"], id="buffer-dtype"),
    reject("view_as_complex", {}, [(2, 3)], ShapeError, ["last dimension (real and imaginary parts) is 3, expected 2"]),
    reject("parameter", {"shape": [4], "tensor": "my.bias"}, None, SpecError, ["my.bias"]),
    reject("resized_positions", {"num_positions": 200, "embedding_dim": 8}, None, SpecError,
           ["num_positions must be a square number", "200"], id="resized_positions-not-square"),
    reject("resized_positions", {"num_positions": 16, "embedding_dim": 8}, [(2, 16, 12), (2, 3)], ShapeError,
           ["last dimension of the grid"], id="resized_positions-grid-of-three"),
    reject("resized_positions", {"num_positions": 16, "embedding_dim": 8}, [(2, 16, 12), (3, 2)], ShapeError,
           ["batch dimension of the grid"], id="resized_positions-grid-batch"),
    reject("class_token", {"hidden": 768, "num_patches": 196}, [(2, 197, 768)], ShapeError, ["197", "196"]),
    reject("class_token", {"hidden": 768, "num_patches": 196}, [(2, 196, 512)], ShapeError, ["512", "768"]),
    reject("class_token", {"hidden": 8, "num_patches": 12, "grid": [4, 4], "interpolate": "bicubic"}, [(2, 16, 8)],
           ShapeError, ["its 12 patch positions are no square grid"], id="class_token-not-square"),
    reject("class_token", {"hidden": 8, "num_patches": 16, "interpolate": "bicubic"}, None, SpecError,
           ["interpolate needs the input's patch grid"], id="class_token-no-grid"),
    reject("attention", {"hidden": 768, "heads": 12, "kv_heads": 5}, None, SpecError, ["12", "5"]),
    reject("attention", {"hidden": 100, "heads": 12}, None, SpecError, ["head_dim"]),
    reject("attention", {"hidden": 64, "heads": 4, "qkv": "fused", "kv_hidden": 32}, None, SpecError, []),
    reject("attention", {"hidden": 64, "heads": 4, "names": ["q", "k", "v"]}, None, SpecError, []),
    reject("attention", {"hidden": 64, "heads": 4}, [(2, 5, 32)], ShapeError, ["32", "64"]),
    reject("attention", {"hidden": 64, "heads": 4, "kv_hidden": 32}, [(2, 5, 64), (3, 7, 32)], ShapeError, []),
    reject("attention", {"hidden": 64, "heads": 4}, [(2, 5, 64), None, None, (1, 5, 32)], ShapeError,
           ["32", "16"]),
    reject("attention", {"hidden": 64, "heads": 4}, [(2, 5, 64), None, None, (1, 6, 16)], ShapeError, []),
    reject("sdpa", {"heads": 4, "kv_heads": 3}, None, SpecError, []),
    reject("sdpa", {"heads": 4}, [(2, 5, 64), (2, 7, 32), (2, 7, 32)], ShapeError, []),
    reject("mlp", {"hidden": 64, "intermediate": 128}, [(2, 32)], ShapeError, ["32", "64"]),
    reject("gated_mlp", {"hidden": 64, "intermediate": 128, "names": ["a", "b"]}, None, SpecError, []),
    reject("moe", {"hidden": 64, "intermediate": 32, "experts": 2, "top_k": 3}, None, SpecError, ["top_k"]),
    reject("experts", {"hidden": 64, "intermediate": 32, "experts": 2, "top_k": 3}, None, SpecError, ["top_k"]),
    reject("experts", {"hidden": 64, "intermediate": 32, "experts": 4}, [(2, 5, 64), (2, 5, 3), (2, 5, 3)],
           ShapeError, ["top_k", "3"]),
    reject("mamba_mixer", {"hidden": 48, "intermediate": 96}, [(2, 5, 32)], ShapeError, ["32", "48"]),
    reject("mamba_mixer", {"hidden": 48, "intermediate": 96, "dt_rank": 0}, None, SpecError, ["dt_rank"]),
    reject("max_pool2d", {"kernel_size": 2, "padding": 2}, [(1, 3, 8, 8)], (SpecError, ShapeError), [],
           id="max_pool2d-padding-over-half-kernel"),
    reject("fold", {"output_size": [4, 4], "kernel_size": 2, "stride": 2}, [(1, 12, 5)], ShapeError, ["number of blocks"],
           id="fold-wrong-block-count"),
    reject("fold", {"output_size": [4, 4], "kernel_size": 2, "stride": 2}, [(1, 10, 4)], (ShapeError, SpecError), [],
           id="fold-channels-not-whole"),
    reject("grid_sample", {}, [(2, 3, 4, 4), (2, 5, 5, 3)], ShapeError, ["last dimension of the grid"]),
    reject("cdist", {}, [(2, 5, 3), (2, 4, 2)], ShapeError, ["row width of x2"]),
    reject("avg_pool2d", {"kernel_size": 2, "divisor_override": 0}, None, SpecError, ["divisor_override must be positive"],
           id="avg_pool2d-divisor-zero"),
    reject("conv1d", {"in_channels": 3, "out_channels": 3, "kernel_size": 3, "padding": -1}, [(1, 3, 10)],
           (SpecError, ShapeError), [], id="conv1d-negative-padding"),
    reject("roll", {"shifts": [1, 1], "dims": [1]}, None, SpecError, ["shifts", "dims"]),
    reject("roll", {"shifts": [1], "dims": [4]}, [(2, 3, 4)], ShapeError, ["dim 4"]),
    reject("window_mask", {"window": 7, "shift": 7}, None, SpecError, ["shift", "window"]),
    reject("grid_window_mask", {"grid": [6, 7], "window": 4, "tile": [2, 2]}, None, SpecError, ["whole", "tiles"]),
    reject("grid_window_mask", {"grid": [4, 4], "window": 2}, [(2, 15, 8)], ShapeError, ["15", "16"]),
    reject("window_mask", {"window": 7, "shift": 3}, [(2, 14, 10, 8)], ShapeError, ["10", "7"],
           id="window_mask-map-not-whole-windows"),
    reject("window_position_bias", {"window": 0, "heads": 3}, None, SpecError, ["window"]),
]


# -- helpers ------------------------------------------------------------------------------
def same_dim(got, want) -> bool:
    """Concrete dims must be plain ints; symbolic ones must agree for many integer values."""
    if isinstance(want, int):
        return type(got) is int and got == want
    if not isinstance(got, Poly):
        return False
    got, want = to_sympy(got), to_sympy(want)
    if got.free_symbols != sympy.sympify(want).free_symbols:
        return False
    if sympy.simplify(got - want) == 0:
        return True
    syms = sorted(sympy.sympify(want).free_symbols, key=str)  # e.g. ceil((H-1)/2) vs floor(H/2)
    return all(got.subs(vals) == want.subs(vals)
               for t in range(12) for vals in [{s: 16 + t + 7 * i for i, s in enumerate(syms)}])


def assert_shape(got, want, what="shape"):
    assert isinstance(got, tuple), f"{what}: expected a tuple, got {got!r}"
    ok = len(got) == len(want) and all(same_dim(g, w) for g, w in zip(got, want))
    assert ok, f"{what}: got {fmt_shape(got)}, expected {fmt_shape(want)}"


def tensors(items) -> dict:
    items = list(items)
    table = {t.name: tuple(t.shape) for t in items}
    assert len(table) == len(items), f"duplicate tensor names: {[t.name for t in items]}"
    for name, shape in table.items():
        assert all(type(d) is int for d in shape), f"{name} has a non-integer shape {shape}"
    return table


def build(name, hp):
    return REGISTRY[name].build(hp)


# -- tests --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, hp, inputs, expected, params, buffers, flops", CASES)
def test_op(name, hp, inputs, expected, params, buffers, flops):
    op = build(name, hp)
    lo, hi = op.arity()
    n_given = sum(1 for s in inputs if s is not None)  # None: an optional input left out
    assert lo <= n_given and (hi is None or len(inputs) <= hi), f"arity {lo}..{hi} vs {len(inputs)} inputs"

    out = op.infer_shape(*inputs)
    if isinstance(expected, list):
        assert isinstance(out, list) and len(out) == len(expected), f"expected {len(expected)} outputs: {out!r}"
        outs = out
        for i, (g, w) in enumerate(zip(out, expected)):
            assert_shape(g, w, f"output {i}")
    else:
        assert_shape(out, expected)
        outs = [out]

    assert tensors(op.params()) == params
    assert tensors(op.buffers()) == buffers
    if flops is not None:
        got = op.flops([s for s in inputs if s is not None], outs)
        assert sympy.simplify(to_sympy(got) - to_sympy(flops)) == 0, f"flops: got {got}, expected {flops}"


@pytest.mark.parametrize("name, hp, dtypes", [
    ("buffer", {"shape": [4]}, {"": "float32"}),   # a spec that says nothing: float32, as before
    ("buffer", {"shape": [1, 1, 8, 8], "dtype": "bool"}, {"": "bool"}),   # GPT-Neo's causal mask
    ("buffer", {"shape": [9, 1, 44], "dtype": "complex64", "tensor": "freqs_ci"}, {"freqs_ci": "complex64"}),
    ("batch_norm", {"num_features": 8}, {"running_mean": "float32", "running_var": "float32",
                                         "num_batches_tracked": "int64"}),
    ("window_position_bias", {"window": 7, "heads": 3}, {"relative_position_index": "int64"}),
    ("rotary_embedding", {"head_dim": 16}, {"inv_freq": "float32"}),
])
def test_buffers_keep_their_dtype(name, hp, dtypes):
    """Each buffer declares its dtype as torch keeps it (BatchNorm's num_batches_tracked int64, Swin's
    relative_position_index int64), which `memory` prices and `to_module` builds it in."""
    from archgraph.dtypes import ELEMENT_BYTES
    op = build(name, hp)
    assert {t.name: t.dtype for t in op.buffers()} == dtypes
    assert [t.nbytes for t in op.buffers()] == [t.count * ELEMENT_BYTES[t.dtype] for t in op.buffers()]


def test_every_registered_op_has_a_case():
    from op_cases import CASES as CONFORMANCE  # the ops whose forward is checked against torch's (torch-free data)
    covered = {p.values[0] for p in CASES} | {c.op for c in CONFORMANCE}
    assert covered == set(REGISTRY), (f"ops without a case: {sorted(set(REGISTRY) - covered)}; "
                                      f"cases for unknown ops: {sorted(covered - set(REGISTRY))}")


@pytest.mark.parametrize("name, hp, inputs, error, words", ERRORS)
def test_op_rejects(name, hp, inputs, error, words):
    with pytest.raises(error) as info:
        op = build(name, hp)
        if inputs is not None:
            op.infer_shape(*inputs)
    if inputs is not None and error is ShapeError:
        assert not isinstance(info.value, SpecError)
    message = info.value.message
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"


def test_build_errors_happen_at_build_not_at_inference():
    """Bad hyperparameters are SpecError at build; bad shapes are ShapeError at inference."""
    for name, hp, inputs, error, _ in (p.values for p in ERRORS):
        if inputs is not None and error is ShapeError:
            build(name, hp)  # must not raise


def test_unknown_hyperparameter_suggests_the_closest():
    with pytest.raises(SpecError) as info:
        build("linear", {"in_feature": 768, "out_features": 10})
    assert "in_feature" in info.value.message
    assert info.value.hint == "did you mean 'in_features'?"


def test_unknown_hyperparameter_without_close_match_lists_them():
    with pytest.raises(SpecError) as info:
        build("rms_norm", {"dim": 8, "zzz": 1})
    assert info.value.hint is not None and "dim" in info.value.hint and "eps" in info.value.hint


def test_bad_literal_suggests_the_closest_choice():
    with pytest.raises(SpecError) as info:
        build("gelu", {"approximate": "tanhh"})
    assert info.value.hint == "did you mean 'tanh'?"


def test_symbolic_dims_print_as_documented():
    conv = build("conv2d", {"in_channels": 3, "out_channels": 8, "kernel_size": 3, "stride": 2, "padding": 1})
    assert fmt_shape(conv.infer_shape((B, 3, H, W))) == "[B, 8, ceil(H/2), ceil(W/2)]"
    flat = build("flatten", {"start_dim": 0, "end_dim": 1})
    assert fmt(flat.infer_shape((B, S, 768))[0]) == "B*S"
    lin = build("linear", {"in_features": 768, "out_features": 3072})
    b, s, _ = lin.infer_shape((B, S, 768))
    assert b is B and s is S  # the very same symbols, untouched


def test_linear_shape_error_names_both_sizes():
    lin = build("linear", {"in_features": 768, "out_features": 3072})
    with pytest.raises(ShapeError) as info:
        lin.infer_shape((B, S, 512))
    assert "512" in str(info.value) and "768" in str(info.value)
