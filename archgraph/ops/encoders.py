"""Tensors a module owns outside any layer: `parameter` (a free-standing nn.Parameter such as
BERT's `cls.predictions.bias`), `buffer` (register_buffer: a tensor that is not learned,
saved by state_dict() or not) and `class_token` (ViT's class token and learned positions)."""
from __future__ import annotations

import math
from typing import Literal

from ..dims import fmt_shape, prod
from .base import Op, Tensor, TensorType, check, expect_dim, expect_rank, invalid, op, positive


@op("parameter", aliases=("nn.Parameter",), example={"shape": [1, 1, 768], "tensor": "cls_token"})
class Parameter(Op):
    """A free-standing learned tensor of `shape`, named `tensor` (no input); its output is the tensor.

    `tensor: ''` names it by the node alone, as an nn.Parameter that is a module's own attribute
    (DiT's `pos_embed`, BLIP-2's `query_tokens` on the model itself); `shape: []` is a single
    value (CLIP's `logit_scale`, a 0-dim tensor).  A size may be 0, an empty tensor that
    state_dict() still names, as nn.Parameter(torch.zeros(1, 0, H)) (DINOv2 with 0 register tokens).
    `complex: true` holds complex numbers (the Fourier Neural Operator's spectral weights, torch.cfloat),
    of the complex type of the weights' (complex64 beside float32).  `initial` is its first value in
    a new module: normal (std 0.02; a tensor named bias 0), ones (a scale: nn.Parameter(torch.ones(..)),
    Cohere's per-head q/k norm weights) or zeros.
    """

    shape: tuple[int, ...]  # the tensor's shape
    tensor: str = "weight"  # the tensor's name inside the node ('': the node's own name)
    complex: bool = False  # complex elements (torch.cfloat: complex64 beside float32 weights), each one counted
    initial: Literal["normal", "ones", "zeros"] = "normal"  # its first value in a new module (normal: std 0.02, a bias 0)

    def __post_init__(self):
        if any(d < 0 for d in self.shape):
            raise invalid(self, f"shape must list sizes of 0 or more ([] for a single value); "
                                f"received {list(self.shape)}")
        if self.tensor and not self.tensor.isidentifier():
            raise invalid(self, f"tensor must be a tensor name such as bias (or '' for the node's own name); "
                                f"received {self.tensor!r}")

    def infer_shape(self):
        return tuple(self.shape)

    def params(self):
        yield Tensor(self.tensor, tuple(self.shape), dtype="complex64" if self.complex else "float32")

    def forward(self, run):
        return run.tensor(self.tensor)

    def init(self, tensor, value, init):
        if self.initial == "ones":
            init.ones(value)
        elif self.initial == "zeros" or tensor.name.endswith("bias"):
            init.zeros(value)
        else:
            init.normal(value, std=0.02)


@op("buffer", aliases=("register_buffer", "nn.Module.register_buffer"),
    example={"shape": [1, 512], "persistent": False, "dtype": "int64"})
class Buffer(Op):
    """A free-standing buffer (register_buffer): a tensor of `shape` and `dtype` that is not learned,
    named by the node (or `tensor`); `persistent: false` keeps it out of state_dict().  Its value is
    its input when it has one (computed from constants: arange, pow, ...; no parameter, no model input),
    which must have its shape: `to_module` computes it when it builds the module, converted to `dtype`,
    and forward only reads it, so a value `load_state_dict` put there stays.  Its output is the
    buffer: [*shape] ([] for a scalar, as RecurrentGemma's normalizer).  `dtype` is the tensor's, as
    torch names it (BERT's position_ids int64, GPT-Neo's causal mask bool, Llama 4's rotary table
    complex64): `memory` prices it at that many bytes a value."""

    shape: tuple[int, ...]  # the buffer's shape
    persistent: bool = True  # saved in state_dict() (false: register_buffer(persistent=False))
    tensor: str = ""  # the buffer's name inside the node ('': the node's own name)
    dtype: TensorType = "float32"  # its element type (torch's name: int64, bool, complex64, bfloat16, ...)

    def __post_init__(self):
        if any(d <= 0 for d in self.shape):
            raise invalid(self, f"shape must list positive sizes ([] for a single value); received {list(self.shape)}")
        if self.tensor and not self.tensor.isidentifier():
            raise invalid(self, f"tensor must be a tensor name (or '' for the node's own name); "
                                f"received {self.tensor!r}")

    def infer_shape(self, value=None):
        if value is not None:
            check(len(value) == len(self.shape), f"its value {fmt_shape(value)} must have the shape "
                                                  f"{list(self.shape)}")
            for got, want in zip(value, self.shape):
                expect_dim(got, want, "a dimension of its value")
        return tuple(self.shape)

    def buffers(self):
        yield Tensor(self.tensor, tuple(self.shape), self.persistent, self.dtype)

    def stored_input(self):
        return self.tensor

    def forward(self, run, value=None):
        return run.tensor(self.tensor)  # its value was computed when the module was built, or loaded


@op("class_token", category="embedding", aliases=("cls_token",), example={"hidden": 768, "num_patches": 196})
class ClassToken(Op):
    """Prepend a learned class token, add learned positions: [B, N, hidden] -> [B, N+1, hidden] (ViT).

    The table holds num_patches + 1 positions.  With `interpolate` (`bicubic`, DINOv2's; or
    `bicubic_antialias`, DINOv2 with registers'), the input's patch `grid` [rows, columns] may be
    another: the table's patch positions, a square grid, are resampled to it in float32 as
    transformers' interpolate_pos_encoding does (the class position kept); they are used as they
    are when the input has num_patches patches and the image is `square` (as high as wide: that
    is transformers' test)."""

    hidden: int  # width of each token
    num_patches: int  # patches per image: the position table has num_patches + 1 rows
    grid: tuple[int, ...] | None = None  # the input's patch grid [rows, columns] when it may differ from the table's
    interpolate: Literal["none", "bicubic", "bicubic_antialias"] = "none"  # how the table's positions are
    #   resampled to another grid (DINOv2: bicubic; with registers: bicubic_antialias); none: never
    square: bool = True  # the image is as high as wide (with num_patches patches the table is used as it is)

    keeps = ""

    def __post_init__(self):
        positive(self, "hidden", "num_patches")
        if self.interpolate != "none" and (self.grid is None or len(self.grid) != 2):
            raise invalid(self, "interpolate needs the input's patch grid: grid: [rows, columns]")

    @property
    def _side(self) -> int:
        return math.isqrt(self.num_patches)

    def _resampled(self) -> bool:
        return self.interpolate != "none" and not (self.grid[0] * self.grid[1] == self.num_patches and self.square)

    def infer_shape(self, x):
        expect_rank(x, 3, "patch embeddings")
        b, n, h = x
        expect_dim(h, self.hidden, "last dimension of the patch embeddings (hidden)")
        if self.interpolate == "none":
            expect_dim(n, self.num_patches, "number of patches (num_patches)")
        else:
            expect_dim(n, self.grid[0] * self.grid[1], "number of patches (grid rows x columns)")
            if self._resampled():
                check(self._side ** 2 == self.num_patches,
                      f"its {self.num_patches} patch positions are no square grid, so they cannot be resampled "
                      f"to the grid {list(self.grid)} (transformers' interpolate_pos_encoding cannot either)")
        return (b, n + 1, self.hidden)

    def params(self):
        yield Tensor("cls_token", (1, 1, self.hidden))
        yield Tensor("position_embeddings", (1, self.num_patches + 1, self.hidden))

    def flops(self, inputs, outputs):
        return prod(outputs[0])  # the position add

    def forward(self, run, x):
        cls = run.tensor("cls_token").expand(x.shape[0], -1, -1)
        table = run.tensor("position_embeddings")
        if self._resampled():
            patches = table[:, 1:].reshape(1, self._side, self._side, -1).permute(0, 3, 1, 2)
            patches = run.F.interpolate(patches.float(), size=tuple(int(g) for g in self.grid), mode="bicubic",
                                        align_corners=False, antialias=self.interpolate == "bicubic_antialias")
            patches = patches.to(table.dtype).permute(0, 2, 3, 1).reshape(1, -1, table.shape[-1])
            table = run.torch.cat([table[:, :1], patches], dim=1)
        return run.torch.cat([cls, x], dim=1) + table

    def init(self, tensor, value, init):
        init.trunc_normal(value, std=0.02)
