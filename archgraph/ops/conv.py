"""Convolutions over [B, C, L], [B, C, H, W] and [B, C, D, H, W]: `conv1d`, `conv2d`, `conv3d`,
and the transposed ones that upsample, `conv_transpose1d/2d/3d` (PyTorch's
names, hyperparameters, weight layouts and output-size rules).  Besides PyTorch's paddings,
`padding: tf_same` pads as TensorFlow's SAME: ceil(size / stride) outputs, the padding
computed from each input's size, the odd pixel after (MobileNet's tf_padding).  `weight_norm: d`
stores the weight as torch.nn.utils.parametrizations.weight_norm does (wav2vec 2.0's positional
convolution).  `conv_frames_mask` carries a padding mask through a stack of 1-D convolutions.  `conv`
takes its weight (and bias) as inputs, as F.conv1d/2d/3d do: a weight computed in forward."""
from __future__ import annotations

from typing import Literal

from ..dims import Dim, ceil_div, floor_div, norm, prod
from ..errors import ShapeError
from .base import Op, Tensor, check, expect_dim, expect_rank, invalid, op, positive, quotient


def window_out(size: Dim, kernel: int, stride: int, padding: int, dilation: int = 1,
               ceil_mode: bool = False) -> Dim:
    """Output length of a sliding window (PyTorch's rule); symbolic sizes stay exact (`ceil(S/2)`)."""
    span = dilation * (kernel - 1) + 1
    reach = size + 2 * padding - span  # (out - 1) * stride <= reach
    if isinstance(reach, int) and reach < 0 and not (ceil_mode and reach > -stride):  # ceil_mode: one window
        raise ShapeError(f"input size {size} (padding {padding}) is smaller than the window {span}",
                         hint='use a smaller kernel or more padding, or a larger input')
    if not ceil_mode:
        return norm(_readable(ceil_div(reach + 1, stride), floor_div(reach, stride) + 1))
    out = ceil_div(reach, stride) + 1
    # PyTorch drops a last window that would start inside the right padding
    if isinstance(out, int) and isinstance(size, int) and (out - 1) * stride >= size + padding:
        out -= 1
    return norm(out)


def causal_depthwise(F, x, weight, bias):
    """Depthwise convolution of x [B, C, S] along S with weight [C, 1, K]: output t sees inputs
    t-K+1 .. t (zeros before the start), nn.Conv1d(padding=K-1) cut to the first S outputs (the
    short convolutions of Mamba, Mamba-2 and Griffin)."""
    return F.conv1d(x, weight, bias, padding=weight.shape[-1] - 1, groups=x.shape[1])[..., :x.shape[-1]]


def _readable(*forms: Dim) -> Dim:
    """Equal forms of one size; for symbols, the shortest to read (`floor(H/2)` over `ceil(H/2 - 1/2)`)."""
    return min(forms, key=lambda f: len(str(f))) if not isinstance(forms[0], int) else forms[0]


# the names torch.nn.utils.parametrizations.weight_norm gives a weight's magnitude g and direction v
WEIGHT_G, WEIGHT_V = "parametrizations.weight.original0", "parametrizations.weight.original1"


def _tuple(v, n: int) -> tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


class _Conv(Op):
    rank = 0  # spatial dims

    def __post_init__(self):
        positive(self, "in_channels", "out_channels", "groups")
        for name in ("kernel_size", "stride", "dilation"):
            values = _tuple(getattr(self, name), self.rank)
            if len(values) != self.rank or any(v <= 0 for v in values):
                raise invalid(self, f"{name} must be a positive integer or a list of {self.rank}; "
                                    f"received {getattr(self, name)}")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise invalid(self, f"in_channels={self.in_channels} and out_channels={self.out_channels} "
                                f"must both be divisible by groups={self.groups}")
        if self.padding == "same" and any(s != 1 for s in _tuple(self.stride, self.rank)):
            raise invalid(self, "padding 'same' needs stride 1")
        if self.padding not in ("same", "valid", "tf_same") and any(p < 0 for p in _tuple(self.padding, self.rank)):
            raise invalid(self, f"padding must not be negative; received {self.padding}")
        if self.weight_norm is not None and not -(self.rank + 2) <= self.weight_norm < self.rank + 2:
            raise invalid(self, f"weight_norm must be a dim of the {self.rank + 2}-d weight; received {self.weight_norm}")

    def _pads(self) -> tuple[int, ...]:
        if self.padding == "valid":
            return (0,) * self.rank
        if self.padding == "same":
            ks, ds = _tuple(self.kernel_size, self.rank), _tuple(self.dilation, self.rank)
            return tuple(d * (k - 1) // 2 for k, d in zip(ks, ds))
        return _tuple(self.padding, self.rank)

    def infer_shape(self, x):
        expect_rank(x, self.rank + 2)
        expect_dim(x[1], self.in_channels, "channel dimension (dim 1) of the input (in_channels)")
        if self.padding == "same":  # PyTorch pads d·(k-1) in total, the odd one on the right
            return (x[0], self.out_channels, *x[2:])
        if self.padding == "tf_same":  # TensorFlow's SAME: one output per stride step
            return (x[0], self.out_channels, *(norm(ceil_div(n, s)) for n, s in zip(x[2:], _tuple(self.stride, self.rank))))
        spatial = tuple(window_out(n, k, s, p, d) for n, k, s, p, d in zip(
            x[2:], _tuple(self.kernel_size, self.rank), _tuple(self.stride, self.rank),
            self._pads(), _tuple(self.dilation, self.rank)))
        return (x[0], self.out_channels, *spatial)

    def _tf_pads(self, sizes) -> list[int]:
        """F.pad's list (last dim first) for TensorFlow's SAME: (ceil(n/s) - 1)·s + d·(k - 1) + 1 - n in
        total per dim, half before (rounded down) and the rest after."""
        pads: list[int] = []
        for n, k, s, d in zip(sizes, _tuple(self.kernel_size, self.rank), _tuple(self.stride, self.rank),
                              _tuple(self.dilation, self.rank)):
            total = max((-(-n // s) - 1) * s + d * (k - 1) + 1 - n, 0)
            pads[:0] = [total // 2, total - total // 2]
        return pads

    def _weight_shape(self) -> tuple:
        return (self.out_channels, quotient(self.in_channels, self.groups), *_tuple(self.kernel_size, self.rank))

    def params(self):
        shape = self._weight_shape()
        if self.weight_norm is None:
            yield Tensor("weight", shape)
        else:  # weight_norm's magnitude g (size 1 but along `weight_norm`) and direction v
            keep = self.weight_norm % len(shape)
            yield Tensor(WEIGHT_G, tuple(n if i == keep else 1 for i, n in enumerate(shape)))
            yield Tensor(WEIGHT_V, shape)
        if self.bias:
            yield Tensor("bias", (self.out_channels,))

    def flops(self, inputs, outputs):
        per_output = quotient(self.in_channels, self.groups) * prod(_tuple(self.kernel_size, self.rank))
        return 2 * prod(outputs[0]) * per_output

    def forward(self, run, x):
        conv = (run.F.conv1d, run.F.conv2d, run.F.conv3d)[self.rank - 1]
        bias = run.tensor("bias") if self.bias else None
        padding = self.padding if isinstance(self.padding, str) else _tuple(self.padding, self.rank)
        if padding == "tf_same":
            x, padding = run.F.pad(x, self._tf_pads(x.shape[2:])), 0
        if self.weight_norm is None:
            weight = run.tensor("weight")
        else:  # g · v / ‖v‖, the norm over every dim but `weight_norm` (torch's _weight_norm)
            weight = run.torch._weight_norm(run.tensor(WEIGHT_V), run.tensor(WEIGHT_G),
                                            self.weight_norm % (self.rank + 2))
        return conv(x, weight, bias, _tuple(self.stride, self.rank), padding, _tuple(self.dilation, self.rank),
                    self.groups)


@op("conv1d", category="conv",
     aliases=("nn.Conv1d",), example={"in_channels": 80, "out_channels": 384, "kernel_size": 3, "padding": 1})
class Conv1d(_Conv):
    """1-D convolution: [B, in_channels, L] -> [B, out_channels, L']."""

    in_channels: int  # channels of the input
    out_channels: int  # channels of the output
    kernel_size: int | tuple[int]  # the kernel's size (one number for every spatial dim, or one each)
    stride: int | tuple[int] = 1  # the step between applications of the kernel
    padding: int | tuple[int] | Literal["same", "valid", "tf_same"] = 0  # zeros added on each side: a size, or same,
    #   valid, tf_same (TensorFlow's SAME)
    dilation: int | tuple[int] = 1  # the spacing between kernel taps
    groups: int = 1  # channels are split into this many independent groups (in_channels: depthwise)
    bias: bool = True  # a learned bias per output channel
    weight_norm: int | None = None  # weight normalisation over this dim of the weight (its g and v)
    rank = 1


@op("conv2d", category="conv",
     aliases=("nn.Conv2d", "convolution"),
     example={"in_channels": 3, "out_channels": 64, "kernel_size": 7, "stride": 2, "padding": 3})
class Conv2d(_Conv):
    """2-D convolution: [B, in_channels, H, W] -> [B, out_channels, H', W'].

    `padding` is PyTorch's (a size, same, valid) or tf_same: TensorFlow's SAME, ceil(H / stride)
    outputs, the padding computed from the input's size with the odd pixel after."""

    in_channels: int  # channels of the input
    out_channels: int  # channels of the output
    kernel_size: int | tuple[int, int]  # the kernel's size (one number for every spatial dim, or one each)
    stride: int | tuple[int, int] = 1  # the step between applications of the kernel
    padding: int | tuple[int, int] | Literal["same", "valid", "tf_same"] = 0  # zeros added on each side: a size, or
    #   same, valid, tf_same (TensorFlow's SAME)
    dilation: int | tuple[int, int] = 1  # the spacing between kernel taps
    groups: int = 1  # channels are split into this many independent groups (in_channels: depthwise)
    bias: bool = True  # a learned bias per output channel
    weight_norm: int | None = None  # weight normalisation over this dim of the weight (its g and v)
    rank = 2


@op("conv3d", category="conv", aliases=("nn.Conv3d",),
    example={"in_channels": 3, "out_channels": 96, "kernel_size": [2, 14, 14], "stride": [2, 14, 14]})
class Conv3d(_Conv):
    """3-D convolution: [B, in_channels, D, H, W] -> [B, out_channels, D', H', W'] (video, 3-D patches)."""

    in_channels: int  # channels of the input
    out_channels: int  # channels of the output
    kernel_size: int | tuple[int, int, int]  # the kernel's size (one number for every spatial dim, or one each)
    stride: int | tuple[int, int, int] = 1  # the step between applications of the kernel
    padding: int | tuple[int, int, int] | Literal["same", "valid", "tf_same"] = 0  # zeros added on each side: a size,
    #   or same, valid, tf_same (TensorFlow's SAME)
    dilation: int | tuple[int, int, int] = 1  # the spacing between kernel taps
    groups: int = 1  # channels are split into this many independent groups (in_channels: depthwise)
    bias: bool = True  # a learned bias per output channel
    weight_norm: int | None = None  # weight normalisation over this dim of the weight (its g and v)
    rank = 3


class _ConvTranspose(Op):
    """out = (n - 1)·stride - 2·padding + dilation·(kernel - 1) + output_padding + 1, per spatial dim."""

    rank = 0

    def __post_init__(self):
        positive(self, "in_channels", "out_channels", "groups")
        for name in ("kernel_size", "stride", "dilation"):
            values = _tuple(getattr(self, name), self.rank)
            if len(values) != self.rank or any(v <= 0 for v in values):
                raise invalid(self, f"{name} must be a positive integer or a list of {self.rank}; "
                                    f"received {getattr(self, name)}")
        for name in ("padding", "output_padding"):
            values = _tuple(getattr(self, name), self.rank)
            if len(values) != self.rank or any(v < 0 for v in values):
                raise invalid(self, f"{name} must be a whole number of at least 0 or a list of {self.rank}; "
                                    f"received {getattr(self, name)}")
        for op_, s, d in zip(*(_tuple(getattr(self, n), self.rank) for n in ("output_padding", "stride", "dilation"))):
            if op_ >= s and op_ >= d:
                raise invalid(self, f"output_padding {op_} must be smaller than stride {s} or dilation {d} "
                                    "(as PyTorch requires)")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise invalid(self, f"in_channels={self.in_channels} and out_channels={self.out_channels} "
                                f"must both be divisible by groups={self.groups}")

    def infer_shape(self, x):
        expect_rank(x, self.rank + 2)
        expect_dim(x[1], self.in_channels, "channel dimension (dim 1) of the input (in_channels)")
        spatial = []
        for n, k, s, p, d, extra in zip(x[2:], *(_tuple(getattr(self, f), self.rank) for f in (
                "kernel_size", "stride", "padding", "dilation", "output_padding"))):
            size = (n - 1) * s - 2 * p + d * (k - 1) + extra + 1
            if isinstance(size, int) and size <= 0:
                raise ShapeError(f"input size {n} gives an output size of {size}",
                                 hint='use a smaller kernel, stride or dilation, more padding, or a larger input')
            spatial.append(size)
        return (x[0], self.out_channels, *spatial)

    def params(self):
        yield Tensor("weight", (self.in_channels, quotient(self.out_channels, self.groups),
                                *_tuple(self.kernel_size, self.rank)))
        if self.bias:
            yield Tensor("bias", (self.out_channels,))

    def flops(self, inputs, outputs):
        per_input = quotient(self.out_channels, self.groups) * prod(_tuple(self.kernel_size, self.rank))
        return 2 * prod(inputs[0]) * per_input

    def forward(self, run, x):
        conv = (run.F.conv_transpose1d, run.F.conv_transpose2d, run.F.conv_transpose3d)[self.rank - 1]
        bias = run.tensor("bias") if self.bias else None
        return conv(x, run.tensor("weight"), bias, _tuple(self.stride, self.rank), _tuple(self.padding, self.rank),
                    _tuple(self.output_padding, self.rank), self.groups, _tuple(self.dilation, self.rank))


@op("conv_transpose1d", category="conv", aliases=("nn.ConvTranspose1d", "deconv1d"),
    example={"in_channels": 64, "out_channels": 32, "kernel_size": 4, "stride": 2, "padding": 1})
class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution (upsampling): [B, in_channels, L] -> [B, out_channels, L'];
    L' = (L - 1)·stride - 2·padding + dilation·(kernel_size - 1) + output_padding + 1."""

    in_channels: int  # channels of the input
    out_channels: int  # channels of the output
    kernel_size: int | tuple[int]  # the kernel's size (one number for every spatial dim, or one each)
    stride: int | tuple[int] = 1  # the step between applications of the kernel
    padding: int | tuple[int] = 0  # removed from each side of the output
    output_padding: int | tuple[int] = 0  # added to one side of the output's size
    groups: int = 1  # channels are split into this many independent groups (in_channels: depthwise)
    bias: bool = True  # a learned bias per output channel
    dilation: int | tuple[int] = 1  # the spacing between kernel taps
    rank = 1


@op("conv_transpose2d", category="conv", aliases=("nn.ConvTranspose2d", "deconv2d", "deconvolution"),
    example={"in_channels": 128, "out_channels": 64, "kernel_size": 2, "stride": 2})
class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution (a U-Net's upsampling): [B, in_channels, H, W] -> [B, out_channels,
    H', W']; H' = (H - 1)·stride - 2·padding + dilation·(kernel_size - 1) + output_padding + 1."""

    in_channels: int  # channels of the input
    out_channels: int  # channels of the output
    kernel_size: int | tuple[int, int]  # the kernel's size (one number for every spatial dim, or one each)
    stride: int | tuple[int, int] = 1  # the step between applications of the kernel
    padding: int | tuple[int, int] = 0  # removed from each side of the output
    output_padding: int | tuple[int, int] = 0  # added to one side of the output's size
    groups: int = 1  # channels are split into this many independent groups (in_channels: depthwise)
    bias: bool = True  # a learned bias per output channel
    dilation: int | tuple[int, int] = 1  # the spacing between kernel taps
    rank = 2


@op("conv_transpose3d", category="conv", aliases=("nn.ConvTranspose3d", "deconv3d"),
    example={"in_channels": 64, "out_channels": 32, "kernel_size": 2, "stride": 2})
class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution (a 3-D U-Net's upsampling): [B, in_channels, D, H, W] -> [B, out_channels,
    D', H', W']; D' = (D - 1)·stride - 2·padding + dilation·(kernel_size - 1) + output_padding + 1."""

    in_channels: int  # channels of the input
    out_channels: int  # channels of the output
    kernel_size: int | tuple[int, int, int]  # the kernel's size (one number for every spatial dim, or one each)
    stride: int | tuple[int, int, int] = 1  # the step between applications of the kernel
    padding: int | tuple[int, int, int] = 0  # removed from each side of the output
    output_padding: int | tuple[int, int, int] = 0  # added to one side of the output's size
    groups: int = 1  # channels are split into this many independent groups (in_channels: depthwise)
    bias: bool = True  # a learned bias per output channel
    dilation: int | tuple[int, int, int] = 1  # the spacing between kernel taps
    rank = 3


@op("conv_frames_mask", category="conv", aliases=("feature_vector_attention_mask",),
    example={"kernels": [10, 3, 3, 3, 3, 2, 2], "strides": [5, 2, 2, 2, 2, 2, 2]})
class ConvFramesMask(Op):
    """The padding mask of the frames a stack of unpadded 1-D convolutions makes: a mask [B, N] of
    the samples (1: a sample, 0: padding after it) and the frames x [B, T, ...] -> a mask [B, T],
    true for the first L(n) frames of a row of n samples, L the stack's output length (per layer
    floor((n - kernel) / stride) + 1), as wav2vec 2.0's and HuBERT's feature encoders compute it."""

    kernels: tuple[int, ...]  # each convolution's kernel size, first layer first
    strides: tuple[int, ...]  # each convolution's stride, first layer first

    keeps = ""

    def __post_init__(self):
        if len(self.kernels) != len(self.strides) or not self.kernels:
            raise invalid(self, f"kernels and strides must be lists of one length (one entry per convolution); "
                                f"received {len(self.kernels)} kernels and {len(self.strides)} strides")
        if any(k <= 0 for k in self.kernels) or any(s <= 0 for s in self.strides):
            raise invalid(self, f"kernels and strides must be positive; received {list(self.kernels)} and "
                                f"{list(self.strides)}")

    def infer_shape(self, mask, x):
        expect_rank(mask, 2, "mask [B, N]")
        if len(x) < 2:
            raise ShapeError(f"the frames must be [B, T, ...]; received rank {len(x)}",
                             hint='give the frames as [B, T, ...]')
        expect_dim(mask[0], x[0], "batch dimension of the mask (that of the frames)")
        return (x[0], x[1])

    def flops(self, inputs, outputs):
        return 0

    def forward(self, run, mask, x):
        lengths = mask.sum(-1)  # [B]: samples in each row
        for kernel, stride in zip(self.kernels, self.strides):
            lengths = run.torch.div(lengths - kernel, stride, rounding_mode="floor") + 1
        frames = run.torch.arange(x.shape[1], device=x.device)
        return frames[None, :] < lengths[:, None]


@op("conv", category="conv", aliases=("F.conv1d", "F.conv2d", "F.conv3d", "torch.nn.functional.conv1d"))
class Conv(Op):
    """A convolution whose weight and bias are inputs (F.conv1d/2d/3d).

    x [B, in, *spatial] convolved with the weight input [out, in / groups, *kernel] (1 to 3 spatial
    dims, as the weight has), plus the bias input [out] when given."""

    stride: int | tuple[int, ...] = 1  # the step between applications of the kernel
    padding: int | tuple[int, ...] | Literal["same", "valid"] = 0  # zeros added on each side, or same, valid
    dilation: int | tuple[int, ...] = 1  # the spacing between kernel taps
    groups: int = 1  # channels are split into this many independent groups

    def __post_init__(self):
        if self.groups <= 0:
            raise invalid(self, f"groups must be positive; received {self.groups}")

    def infer_shape(self, x, weight, bias=None):
        rank = len(weight) - 2
        check(1 <= rank <= 3, f"the weight must have 3 to 5 dimensions [out, in / groups, *kernel]; received {len(weight)}")
        expect_rank(x, rank + 2)
        expect_dim(x[1], weight[1] * self.groups, "channel dimension (dim 1) of the input (the weight's dim 1 x groups)")
        if bias is not None:
            expect_rank(bias, 1, "bias")
            expect_dim(bias[0], weight[0], "bias (the weight's output channels)")
        if self.padding == "same":
            check(all(s == 1 for s in _tuple(self.stride, rank)), "padding 'same' needs stride 1")
            return (x[0], weight[0], *x[2:])
        pads = (0,) * rank if self.padding == "valid" else _tuple(self.padding, rank)
        for name, values in (("stride", _tuple(self.stride, rank)), ("dilation", _tuple(self.dilation, rank)),
                             ("padding", pads)):
            check(len(values) == rank, f"{name} must be one number or {rank}; received {list(values)}")
        spatial = tuple(window_out(n, k, s, p, d) for n, k, s, p, d in zip(
            x[2:], weight[2:], _tuple(self.stride, rank), pads, _tuple(self.dilation, rank)))
        return (x[0], weight[0], *spatial)

    def flops(self, inputs, outputs):
        return 2 * prod(outputs[0]) * prod(inputs[1][1:])  # (in / groups) x kernel products an output

    def forward(self, run, x, weight, bias=None):
        rank = weight.dim() - 2
        conv = (run.F.conv1d, run.F.conv2d, run.F.conv3d)[rank - 1]
        padding = self.padding if isinstance(self.padding, str) else _tuple(self.padding, rank)
        return conv(x, weight, bias, _tuple(self.stride, rank), padding, _tuple(self.dilation, rank), self.groups)


@op("conv_transpose", category="conv", aliases=("F.conv_transpose1d", "F.conv_transpose2d", "F.conv_transpose3d"))
class ConvTranspose(Op):
    """Transposed convolution of weight and bias inputs.

    F.conv_transpose1d/2d/3d: x [B, in, *spatial] with the weight input [in, out / groups, *kernel]
    (1 to 3 spatial dims, as the weight has), plus the bias input [out] when given; sizes as
    conv_transpose1d/2d/3d's."""

    stride: int | tuple[int, ...] = 1  # the step between applications of the kernel
    padding: int | tuple[int, ...] = 0  # dilation·(kernel - 1) - padding zeros added on each side
    output_padding: int | tuple[int, ...] = 0  # added to one side of the output
    dilation: int | tuple[int, ...] = 1  # the spacing between kernel taps
    groups: int = 1  # channels are split into this many independent groups

    def __post_init__(self):
        if self.groups <= 0:
            raise invalid(self, f"groups must be positive; received {self.groups}")

    def infer_shape(self, x, weight, bias=None):
        rank = len(weight) - 2
        check(1 <= rank <= 3, f"the weight must have 3 to 5 dimensions [in, out / groups, *kernel]; received {len(weight)}")
        expect_rank(x, rank + 2)
        expect_dim(x[1], weight[0], "channel dimension (dim 1) of the input (the weight's dim 0)")
        out = weight[1] * self.groups
        if bias is not None:
            expect_rank(bias, 1, "bias")
            expect_dim(bias[0], out, "bias (the weight's dim 1 x groups)")
        spatial = []
        for n, k, s, p, d, extra in zip(x[2:], weight[2:], *(_tuple(getattr(self, f), rank) for f in (
                "stride", "padding", "dilation", "output_padding"))):
            size = (n - 1) * s - 2 * p + d * (k - 1) + extra + 1
            check(not isinstance(size, int) or size > 0, f"input size {n} gives an output size of {size}")
            spatial.append(size)
        return (x[0], out, *spatial)

    def flops(self, inputs, outputs):
        return 2 * prod(inputs[0]) * prod(inputs[1][1:])  # out / groups x kernel products an input

    def forward(self, run, x, weight, bias=None):
        rank = weight.dim() - 2
        conv = (run.F.conv_transpose1d, run.F.conv_transpose2d, run.F.conv_transpose3d)[rank - 1]
        return conv(x, weight, bias, _tuple(self.stride, rank), _tuple(self.padding, rank),
                    _tuple(self.output_padding, rank), self.groups, _tuple(self.dilation, rank))
