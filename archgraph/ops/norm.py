"""Normalisation: `layer_norm`, `rms_norm`, `batch_norm`, `group_norm`."""
from __future__ import annotations

from typing import Literal

from ..dims import prod
from .base import Op, Saved, Tensor, expect_dim, expect_rank, invalid, keeps_own, op, positive


@op("layer_norm", category="norm", aliases=("nn.LayerNorm",), example={"normalized_shape": 768})
class LayerNorm(Op):
    """Normalise over the trailing dims `normalized_shape`; weight and bias of that shape."""

    normalized_shape: int | tuple[int, ...]  # the trailing dims normalised over (their sizes)
    eps: float = 1e-5  # added to the variance for stability
    elementwise_affine: bool = True  # learned weight (and bias) after normalising
    bias: bool = True  # a learned bias with the weight

    @property
    def dims(self) -> tuple[int, ...]:
        s = self.normalized_shape
        return (s,) if isinstance(s, int) else s

    def __post_init__(self):
        if any(d <= 0 for d in self.dims):
            raise invalid(self, f"normalized_shape must be positive; received {self.normalized_shape}")

    def infer_shape(self, x):
        n = len(self.dims)
        expect_rank(x, tuple(range(n, 9)))
        for got, want in zip(x[len(x) - n:], self.dims):
            expect_dim(got, want, "trailing dimension of the input (normalized_shape)")
        return x

    def params(self):
        if self.elementwise_affine:
            yield Tensor("weight", self.dims)
            if self.bias:
                yield Tensor("bias", self.dims)

    def flops(self, inputs, outputs):
        return 5 * prod(inputs[0])

    def saved(self, inputs, outputs, eager):
        """The input, and each row's mean and 1/std in float32 (torch's native_layer_norm)."""
        rows = prod(inputs[0][:len(inputs[0]) - len(self.dims)])
        return [Saved(input=0), keeps_own(2 * rows, "fp32")]

    def forward(self, run, x):
        weight = run.tensor("weight") if self.elementwise_affine else None
        bias = run.tensor("bias") if self.elementwise_affine and self.bias else None
        return run.F.layer_norm(x, self.dims, weight, bias, self.eps)


@op("rms_norm", category="norm", aliases=("nn.RMSNorm", "RMSNorm", "LlamaRMSNorm"), example={"dim": 4096})
class RMSNorm(Op):
    """Root-mean-square norm: over the last dim (computed in float32, as Llama's and T5's), times a
    weight of size `dim` plus `offset` (Gemma's norms scale by 1 + weight: offset 1); no bias.
    `axis: 1` normalises over dim 1 instead, the channels of a [B, C, H, W] map (timm's RmsNorm2d)."""

    dim: int  # width of the normalised dimension
    eps: float = 1e-6  # added to the mean square for stability
    elementwise_affine: bool = True  # a learned weight after normalising
    offset: float = 0.0  # added to the weight before scaling (Gemma: 1)
    axis: Literal[-1, 1] = -1  # the dimension normalised: -1 (the last) or 1 (a map's channels)

    def __post_init__(self):
        positive(self, "dim")

    def infer_shape(self, x):
        if self.axis == 1:
            expect_rank(x, tuple(range(2, 9)))
            expect_dim(x[1], self.dim, "channel dimension (dim 1) of the input (dim)")
            return x
        expect_rank(x, tuple(range(1, 9)))
        expect_dim(x[-1], self.dim, "last dimension of the input (dim)")
        return x

    def params(self):
        if self.elementwise_affine:
            yield Tensor("weight", (self.dim,))

    def flops(self, inputs, outputs):
        return 4 * prod(inputs[0])

    def saved(self, inputs, outputs, eager):
        """The input and each row's 1/rms in float32, as a fused RMSNorm keeps them (torch's
        F.rms_norm, Megatron's; a norm written in eager float32 ops keeps more: docs/plan.md)."""
        x = inputs[0]
        return [Saved(input=0), keeps_own(prod(x) // x[self.axis], "fp32")]

    def forward(self, run, x):
        h = x.movedim(1, -1) if self.axis == 1 else x
        h = rms_normalize(run.torch, h, self.eps, run.tensor("weight") if self.elementwise_affine else None,
                          self.offset)
        return h.movedim(-1, 1) if self.axis == 1 else h

    def init(self, tensor, value, init):
        init.zeros(value) if self.offset else init.ones(value)


@op("batch_norm", category="norm",
     aliases=("nn.BatchNorm1d", "nn.BatchNorm2d", "nn.BatchNorm3d"), example={"num_features": 64})
class BatchNorm(Op):
    """Per-channel norm of [B, C, ...]; weight, bias; buffers running_mean, running_var, num_batches_tracked.

    `frozen: true` is a batch norm whose statistics and affine weights are all fixed buffers
    (torchvision's FrozenBatchNorm2d, DETR's DetrFrozenBatchNorm2d): weight, bias, running_mean and
    running_var are buffers, no parameters, no num_batches_tracked; it computes
    x · scale + (bias − running_mean · scale) with scale = weight · rsqrt(running_var + eps), in
    training too.
    """

    num_features: int  # number of channels C
    eps: float = 1e-5  # added to the variance for stability
    momentum: float = 0.1  # the running statistics' update rate
    affine: bool = True  # learned weight and bias
    track_running_stats: bool = True  # keep running_mean and running_var buffers
    frozen: bool = False  # statistics and affine weights are all fixed buffers (FrozenBatchNorm2d)

    def __post_init__(self):
        positive(self, "num_features")

    def infer_shape(self, x):
        expect_rank(x, (2, 3, 4, 5))
        expect_dim(x[1], self.num_features, "channel dimension (dim 1) of the input (num_features)")
        return x

    def params(self):
        if self.affine and not self.frozen:
            yield Tensor("weight", (self.num_features,))
            yield Tensor("bias", (self.num_features,))

    def buffers(self):
        if self.frozen:
            for name in ("weight", "bias", "running_mean", "running_var"):
                yield Tensor(name, (self.num_features,))
        elif self.track_running_stats:
            yield Tensor("running_mean", (self.num_features,))
            yield Tensor("running_var", (self.num_features,))
            yield Tensor("num_batches_tracked", (), dtype="int64")

    def flops(self, inputs, outputs):
        return 2 * prod(inputs[0])

    def saved(self, inputs, outputs, eager):
        """The input and each channel's batch mean and 1/std in float32 (none when frozen: a scale and shift)."""
        return [] if self.frozen else [Saved(input=0), keeps_own(2 * self.num_features, "fp32")]

    def forward(self, run, x):
        if self.frozen:
            shape = (1, -1) + (1,) * (x.dim() - 2)
            scale = run.tensor("weight") * (run.tensor("running_var") + self.eps).rsqrt()
            shift = run.tensor("bias") - run.tensor("running_mean") * scale
            return x * scale.reshape(shape) + shift.reshape(shape)
        stats = self.track_running_stats
        mean = run.tensor("running_mean") if stats else None
        var = run.tensor("running_var") if stats else None
        if run.training and stats:
            run.tensor("num_batches_tracked").add_(1)
        weight = run.tensor("weight") if self.affine else None
        bias = run.tensor("bias") if self.affine else None
        return run.F.batch_norm(x, mean, var, weight, bias, run.training or not stats, self.momentum, self.eps)

    def init(self, tensor, value, init):
        init.ones(value) if tensor.name in ("weight", "running_var") else init.zeros(value)


@op("group_norm", category="norm", aliases=("nn.GroupNorm",), example={"num_groups": 32, "num_channels": 256})
class GroupNorm(Op):
    """Norm over channel groups of [B, C, ...]; weight and bias of size num_channels."""

    num_groups: int  # number of channel groups (num_channels must be a multiple)
    num_channels: int  # number of channels C
    eps: float = 1e-5  # added to the variance for stability
    affine: bool = True  # learned weight and bias

    def __post_init__(self):
        positive(self, "num_groups", "num_channels")
        if self.num_channels % self.num_groups:
            raise invalid(self, f"num_channels={self.num_channels} is not divisible by "
                                f"num_groups={self.num_groups}")

    def infer_shape(self, x):
        expect_rank(x, (2, 3, 4, 5))
        expect_dim(x[1], self.num_channels, "channel dimension (dim 1) of the input (num_channels)")
        return x

    def params(self):
        if self.affine:
            yield Tensor("weight", (self.num_channels,))
            yield Tensor("bias", (self.num_channels,))

    def flops(self, inputs, outputs):
        return 5 * prod(inputs[0])

    def saved(self, inputs, outputs, eager):
        """The input and each sample's groups' mean and 1/std in float32."""
        return [Saved(input=0), keeps_own(2 * inputs[0][0] * self.num_groups, "fp32")]

    def forward(self, run, x):
        weight = run.tensor("weight") if self.affine else None
        bias = run.tensor("bias") if self.affine else None
        return run.F.group_norm(x, self.num_groups, weight, bias, self.eps)


def rms_normalize(torch, x, eps: float, weight=None, offset: float = 0.0):
    """x / rms(x) over the last dim, computed in float32, times `weight` (plus `offset`) when given:
    Llama's RMSNorm (and attention's q/k norms)."""
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    if weight is None:
        return h.to(x.dtype)
    if offset:
        return (h * (offset + weight.float())).to(x.dtype)
    return weight * h.to(x.dtype)
