"""The operator library: one family per module, each op registered by name.

`REGISTRY` maps op names to op classes.  A module is imported when one of its ops is first
asked for (`INDEX` says which module declares which op), so a spec pays only for the op
families it uses; iterating the registry imports them all.  A test keeps `INDEX` equal to
what the modules register.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from . import base
from .base import Op, Tensor

INDEX = {  # op name -> the module of archgraph.ops that declares it
    **dict.fromkeys(["activation", "dropout", "gelu", "glu", "identity", "relu", "sigmoid", "silu", "softcap",
                     "softmax", "tanh"],
                    "activation"),
    **dict.fromkeys(["attention", "multihead_attention", "sdpa"], "attention"),
    "latent_attention": "latent_attention",
    "local_attention": "local_attention",
    **dict.fromkeys(["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                     "conv_frames_mask", "conv", "conv_transpose"], "conv"),
    **dict.fromkeys(["view_as_complex", "view_as_real", "complex"], "complex"),
    "disentangled_attention": "disentangled",
    "einsum": "einsum",
    "experts": "experts",
    "embedding_bag": "bags",
    **dict.fromkeys(["conj", "fft_fft", "fft_ifft", "fft_irfft", "fft_rfft"], "fft"),
    **dict.fromkeys(["add", "mul", "scale"], "elementwise"),
    **dict.fromkeys(["atan2", "bitwise_and", "bitwise_or", "bitwise_xor", "fmod", "logical_and", "logical_or",
                     "logical_xor", "remainder"],
                    "binary"),
    **dict.fromkeys(["acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_not", "ceil", "cosh", "elu", "erf",
                     "expm1", "hardsigmoid", "hardtanh", "isinf", "isnan", "leaky_relu", "log10", "log1p", "log2",
                     "log_softmax", "logical_not", "logsigmoid", "nan_to_num", "round", "sign", "sinh", "softplus",
                     "tan", "trunc"],
                    "pointwise"),
    **dict.fromkeys(["alibi", "embedding", "learned_position_2d", "position_embedding", "relative_position_bias",
                     "resized_positions", "sine_position_2d", "sinusoidal_position"], "embedding"),
    **dict.fromkeys(["grid_positions", "multimodal_positions", "rotary_embedding"], "rotary"),
    "apply_rotary": "rotate",
    **dict.fromkeys(["buffer", "class_token", "parameter"], "encoders"),
    **dict.fromkeys(["slice", "squeeze", "unsqueeze"], "indexing"),
    **dict.fromkeys(["as_strided", "diagonal", "flip", "repeat", "stack", "unbind"], "layout"),
    **dict.fromkeys(["copy", "index", "index_put", "one_hot", "scatter", "scatter_reduce", "select_scatter",
                     "slice_scatter"],
                    "scatter"),
    **dict.fromkeys(["bilinear", "linear"], "linear"),
    **dict.fromkeys(["abs", "arange", "cast", "clamp", "cos", "cumsum", "div", "eq", "exp", "floor", "full", "ge", "gt", "le", "linspace",
                     "log", "lt", "masked_fill", "masked_scatter", "maximum", "minimum", "ne", "neg", "pow", "reciprocal", "rsqrt",
                     "sin", "sqrt", "square", "sub", "tril", "triu", "where"], "math"),
    **dict.fromkeys(["gated_mlp", "mlp", "moe"], "mlp"),
    **dict.fromkeys(["batch_norm", "group_norm", "layer_norm", "rms_norm"], "norm"),
    **dict.fromkeys(["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
                     "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d",
                     "avg_pool3d", "global_avg_pool", "global_max_pool", "last_token", "max_pool1d", "max_pool2d",
                     "max_pool3d", "padding_mask"], "pool"),
    **dict.fromkeys(["causal_conv1d", "gated_delta_rule", "mamba2_mixer", "rg_lru"], "recurrent"),
    **dict.fromkeys(["all", "amax", "amin", "any", "argmax", "argmin", "logsumexp", "max", "mean", "min", "normalize",
                     "prod", "std", "sum", "var", "vector_norm"],
                    "reduce"),
    "mamba_mixer": "ssm",
    **dict.fromkeys(["bucketize", "gather", "index_add", "index_select", "median", "scatter_add", "sort", "topk"],
                   "routing"),
    **dict.fromkeys(["cdist", "fold", "grid_sample", "pdist"], "sampling"),
    **dict.fromkeys(["cumprod", "logcumsumexp"], "scan"),
    **dict.fromkeys(["fft_conv", "interpolate", "timestep_embedding"], "signal"),
    **dict.fromkeys(["concat", "expand", "flatten", "matmul", "pad", "permute", "pixel_unshuffle", "reshape", "select",
                     "split", "transpose"], "tensor"),
    **dict.fromkeys(["grid_window_mask", "roll", "window_mask", "window_position_bias"], "windows"),
}


class _Registry(Mapping):
    """Op name -> op class, importing an op's module when the op is first asked for."""

    def __getitem__(self, name: str) -> type[Op]:
        if name not in base.REGISTRY and name in INDEX:
            importlib.import_module(f"{__name__}.{INDEX[name]}")
        return base.REGISTRY[name]

    def get(self, name: str, default=None):
        found = base.REGISTRY.get(name)
        return found if found is not None else self[name] if name in INDEX else default

    def __contains__(self, name: object) -> bool:
        return name in INDEX or name in base.REGISTRY

    def __iter__(self) -> Iterator[str]:
        load_all()
        return iter(dict(base.REGISTRY))

    def __len__(self) -> int:
        load_all()
        return len(base.REGISTRY)


def load_all() -> None:
    """Import every op module (what listing the ops needs)."""
    for module in sorted(set(INDEX.values())):
        importlib.import_module(f"{__name__}.{module}")


REGISTRY = _Registry()

__all__ = ["INDEX", "REGISTRY", "Op", "Tensor", "load_all"]
