"""Pooling: `max_pool1d/2d/3d`, `avg_pool1d/2d/3d`, `adaptive_avg_pool1d/2d/3d`, `adaptive_max_pool1d/2d`,
`global_avg_pool`, `global_max_pool`,
`last_token`; and `padding_mask`, the padding a call's token ids hold when it gives no mask."""
from __future__ import annotations

from ..dims import prod
from .base import Op, Saved, expect_dim, expect_padding_mask, expect_rank, invalid, keeps_own, op
from .conv import _tuple, window_out


def _input_and_argmax(self, inputs, outputs, eager):
    """What a max pooling keeps for backward: its input and the argmax of each window."""
    return [Saved(input=0), keeps_own(prod(outputs[0]), "index")]


class _Pool(Op):
    rank = 0

    def __post_init__(self):
        for name in ("kernel_size", "stride"):
            value = getattr(self, name)
            if value is not None and any(v <= 0 for v in _tuple(value, self.rank)):
                raise invalid(self, f"{name} must be positive; received {value}")
        ks, ds = _tuple(self.kernel_size, self.rank), _tuple(getattr(self, "dilation", 1), self.rank)
        for p, k, d in zip(_tuple(self.padding, self.rank), ks, ds):
            if p < 0 or p > (d * (k - 1) + 1) // 2:
                raise invalid(self, f"padding {self.padding} must lie between 0 and half the window "
                                    f"({(d * (k - 1) + 1) // 2}), as PyTorch requires")

    def infer_shape(self, x):
        expect_rank(x, self.rank + 2)
        ks = _tuple(self.kernel_size, self.rank)
        ss = _tuple(self.stride if self.stride is not None else self.kernel_size, self.rank)
        ps = _tuple(self.padding, self.rank)
        ds = _tuple(getattr(self, "dilation", 1), self.rank)
        return (x[0], x[1], *(window_out(n, k, s, p, d, self.ceil_mode)
                               for n, k, s, p, d in zip(x[2:], ks, ss, ps, ds)))

    def flops(self, inputs, outputs):
        return prod(outputs[0]) * prod(_tuple(self.kernel_size, self.rank))


@op("max_pool1d", aliases=("nn.MaxPool1d",), example={"kernel_size": 2})
class MaxPool1d(_Pool):
    """Sliding maximum over [B, C, L]."""

    kernel_size: int  # the window's size
    stride: int | None = None  # the step between windows (default kernel_size)
    padding: int = 0  # added on each side
    dilation: int = 1  # the spacing between window elements
    ceil_mode: bool = False  # round the output size up (a last partial window counts)
    rank = 1

    saved = _input_and_argmax

    def forward(self, run, x):
        return run.F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


@op("max_pool2d", aliases=("nn.MaxPool2d",), example={"kernel_size": 3, "stride": 2, "padding": 1})
class MaxPool2d(_Pool):
    """Sliding maximum over [B, C, H, W]."""

    kernel_size: int | tuple[int, int]  # the window's size
    stride: int | tuple[int, int] | None = None  # the step between windows (default kernel_size)
    padding: int | tuple[int, int] = 0  # added on each side
    dilation: int | tuple[int, int] = 1  # the spacing between window elements
    ceil_mode: bool = False  # round the output size up (a last partial window counts)
    rank = 2

    saved = _input_and_argmax

    def forward(self, run, x):
        return run.F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


@op("max_pool3d", aliases=("nn.MaxPool3d",), example={"kernel_size": 2})
class MaxPool3d(_Pool):
    """Sliding maximum over [B, C, D, H, W]."""

    kernel_size: int | tuple[int, int, int]  # the window's size
    stride: int | tuple[int, int, int] | None = None  # the step between windows (default kernel_size)
    padding: int | tuple[int, int, int] = 0  # added on each side
    dilation: int | tuple[int, int, int] = 1  # the spacing between window elements
    ceil_mode: bool = False  # round the output size up (a last partial window counts)
    rank = 3

    saved = _input_and_argmax

    def forward(self, run, x):
        return run.F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class _AvgPool(_Pool):
    """A sliding mean: over the window's values and its padding (count_include_pad), or its values
    only, or a sum over a fixed divisor (divisor_override)."""

    def __post_init__(self):
        super().__post_init__()
        if self.divisor_override is not None and self.divisor_override <= 0:
            raise invalid(self, f"divisor_override must be positive; received {self.divisor_override}")

    def forward(self, run, x):
        pool = (run.F.avg_pool1d, run.F.avg_pool2d, run.F.avg_pool3d)[self.rank - 1]
        extra = () if self.rank == 1 else (self.divisor_override,)
        return pool(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad, *extra)


@op("avg_pool1d", aliases=("nn.AvgPool1d",), example={"kernel_size": 2})
class AvgPool1d(_AvgPool):
    """Sliding mean over [B, C, L]."""

    kernel_size: int  # the window's size
    stride: int | None = None  # the step between windows (default kernel_size)
    padding: int = 0  # added on each side
    ceil_mode: bool = False  # round the output size up (a last partial window counts)
    count_include_pad: bool = True  # the padding counts in the mean (false: the window's values only)
    rank = 1
    divisor_override = None  # F.avg_pool1d has none


@op("avg_pool2d", aliases=("nn.AvgPool2d",), example={"kernel_size": 2})
class AvgPool2d(_AvgPool):
    """Sliding mean over [B, C, H, W]."""

    kernel_size: int | tuple[int, int]  # the window's size
    stride: int | tuple[int, int] | None = None  # the step between windows (default kernel_size)
    padding: int | tuple[int, int] = 0  # added on each side
    ceil_mode: bool = False  # round the output size up (a last partial window counts)
    count_include_pad: bool = True  # the padding counts in the mean (false: the window's values only)
    divisor_override: int | None = None  # divide each window's sum by this instead
    rank = 2


@op("avg_pool3d", aliases=("nn.AvgPool3d",), example={"kernel_size": 2})
class AvgPool3d(_AvgPool):
    """Sliding mean over [B, C, D, H, W]."""

    kernel_size: int | tuple[int, int, int]  # the window's size
    stride: int | tuple[int, int, int] | None = None  # the step between windows (default kernel_size)
    padding: int | tuple[int, int, int] = 0  # added on each side
    ceil_mode: bool = False  # round the output size up (a last partial window counts)
    count_include_pad: bool = True  # the padding counts in the mean (false: the window's values only)
    divisor_override: int | None = None  # divide each window's sum by this instead
    rank = 3


class _Adaptive(Op):
    rank = 0

    def infer_shape(self, x):
        expect_rank(x, self.rank + 2)
        return (x[0], x[1], *_tuple(self.output_size, self.rank))

    def flops(self, inputs, outputs):
        return prod(inputs[0])


@op("adaptive_avg_pool1d", aliases=("nn.AdaptiveAvgPool1d",), example={"output_size": 1})
class AdaptiveAvgPool1d(_Adaptive):
    """Mean down to a fixed length: [B, C, L] -> [B, C, output_size]."""

    output_size: int  # the output's length
    rank = 1

    def forward(self, run, x):
        return run.F.adaptive_avg_pool1d(x, self.output_size)


@op("adaptive_avg_pool2d", aliases=("nn.AdaptiveAvgPool2d",), example={"output_size": 1})
class AdaptiveAvgPool2d(_Adaptive):
    """Mean down to a fixed size: [B, C, H, W] -> [B, C, oh, ow]."""

    output_size: int | tuple[int, int]  # the output's height and width (one number: square)
    rank = 2

    def forward(self, run, x):
        return run.F.adaptive_avg_pool2d(x, self.output_size)


@op("adaptive_avg_pool3d", aliases=("nn.AdaptiveAvgPool3d",), example={"output_size": 1})
class AdaptiveAvgPool3d(_Adaptive):
    """Mean down to a fixed size: [B, C, D, H, W] -> [B, C, od, oh, ow]."""

    output_size: int | tuple[int, int, int]  # the output's depth, height and width (one number: a cube)
    rank = 3

    def forward(self, run, x):
        return run.F.adaptive_avg_pool3d(x, self.output_size)


@op("adaptive_max_pool1d", aliases=("nn.AdaptiveMaxPool1d",), example={"output_size": 1})
class AdaptiveMaxPool1d(_Adaptive):
    """Maximum down to a fixed length: [B, C, L] -> [B, C, output_size] (window i spans
    floor(i·L/n) to ceil((i+1)·L/n))."""

    output_size: int  # the output's length
    rank = 1

    saved = _input_and_argmax

    def forward(self, run, x):
        return run.F.adaptive_max_pool1d(x, self.output_size)


@op("adaptive_max_pool2d", aliases=("nn.AdaptiveMaxPool2d",), example={"output_size": 1})
class AdaptiveMaxPool2d(_Adaptive):
    """Maximum down to a fixed size: [B, C, H, W] -> [B, C, oh, ow]."""

    output_size: int | tuple[int, int]  # the output's height and width (one number: square)
    rank = 2

    saved = _input_and_argmax

    def forward(self, run, x):
        return run.F.adaptive_max_pool2d(x, self.output_size)


class _Global(Op):
    def infer_shape(self, x):
        expect_rank(x, (3, 4, 5))
        return (x[0], x[1])

    def flops(self, inputs, outputs):
        return prod(inputs[0])


@op("global_avg_pool", aliases=("global_average_pooling",))
class GlobalAvgPool(_Global):
    """Mean over all spatial dims: [B, C, ...] -> [B, C]."""

    keeps = ""

    def forward(self, run, x):
        return x.mean(dim=tuple(range(2, x.dim())))


@op("global_max_pool", aliases=("global_max_pooling",))
class GlobalMaxPool(_Global):
    """Maximum over all spatial dims: [B, C, ...] -> [B, C]."""

    def forward(self, run, x):
        return x.amax(dim=tuple(range(2, x.dim())))


@op("last_token", aliases=("last_non_pad_token",), example={"pad": 0})
class LastToken(Op):
    """Each row's last token that is not padding, or its last `token`: x [B, S, ...] and its ids [B, S] -> [B, ...].

    With `pad`, the position is the last one whose id is not `pad` (transformers' sequence
    classification heads of decoders: `(arange(S) * (ids != pad)).argmax(-1)`, so left and right
    padding both work, and a row of nothing but padding takes position 0).  With `token`, the last
    position whose id is `token` (BART's and T5's classifiers pool the last <eos>: every row must
    hold it, as many times as the others, or the module refuses as transformers does; the ids may be
    another sequence's, the encoder's for a decoder's states, of the same length when the module
    runs).  With neither, every row takes the last position, and, as transformers refuses it, a
    batch of more than one row is an error when the module runs (it cannot tell padding from text).
    `offset` moves the position by that many, at most to x's last position: T5Gemma's
    encoder-decoder classifiers read the decoder one position after the input's last token (the
    decoder's inputs are the input shifted right), so x may be as long as another sequence."""

    pad: int | None = None  # the padding id: each row's last token that is not padding
    token: int | None = None  # an id (<eos>): each row's last position holding it
    offset: int = 0  # the pooled position moved by this many, at most x's last position

    keeps = ""

    def __post_init__(self):
        if self.pad is not None and self.token is not None:
            raise invalid(self, f"pad={self.pad} and token={self.token} both choose the position: give one")

    def infer_shape(self, x, ids):
        expect_rank(x, tuple(range(2, 9)), "input")
        expect_rank(ids, 2, "token ids [B, S]")
        expect_dim(ids[0], x[0], "batch dimension of the token ids")
        if not self.offset and (self.token is None or (isinstance(ids[1], int) and isinstance(x[1], int))):
            expect_dim(ids[1], x[1], "length of the token ids")
        return (x[0], *x[2:])

    def forward(self, run, x, ids):
        torch = run.torch
        rows = torch.arange(x.shape[0], device=x.device)
        if self.pad is None and self.token is None:
            if x.shape[0] != 1:
                raise ValueError("last_token without a pad id cannot pool a batch of more than one row "
                                 "(it cannot tell padding from text): give the config a pad_token_id")
            return x[:, -1]
        keep = (ids != self.pad if self.token is None else ids == self.token).to(torch.int32)
        if self.token is not None and ids.shape[1] != x.shape[1]:
            raise ValueError(f"last_token: the token ids have {ids.shape[1]} positions and the states {x.shape[1]}: "
                             "they must be as long (BART's and T5's classifiers: decoder_input_ids as long as input_ids)")
        if self.token is not None and not _tracing(torch) and not ids.is_meta:
            counts = keep.sum(-1)
            if bool((counts != counts[0]).any()) or int(counts[0]) == 0:
                raise ValueError(f"last_token: All examples must have the same number of <eos> tokens (id "
                                 f"{self.token}), at least one; the rows hold {counts.tolist()}")
        last = (torch.arange(ids.shape[-1], device=ids.device, dtype=torch.int32) * keep).argmax(-1)
        if self.offset:
            last = torch.clamp(last + self.offset, max=x.shape[1] - 1)
        return x[rows, last.to(x.device)]


@op("padding_mask", aliases=("make_default_2d_attention_mask",), example={"pad": 0})
class PaddingMask(Op):
    """A call's attention mask, or 1 where the ids are not `pad` when it gives none.

    ids [B, S] and mask [B, S] -> [B, S] (int64).

    T5Gemma's encoder (transformers' make_default_2d_attention_mask) masks its padding tokens by
    itself when a call gives no attention_mask; the mask is an input with `default: none`, so the
    op sees that it was left out. Without `pad`, a call must give the mask (transformers refuses)."""

    pad: int | None = None  # the padding id

    keeps = ""

    differentiable = False

    def infer_shape(self, ids, mask=None):
        expect_rank(ids, 2, "token ids [B, S]")
        expect_padding_mask(mask, ids, "mask")
        return ids

    def forward(self, run, ids, mask=None):
        if mask is not None:
            return mask
        if self.pad is None:
            raise ValueError("padding_mask: the call gives no attention mask and the model has no pad_token_id to "
                             "find the padding by: give the mask")
        return (ids != self.pad).to(run.torch.long)


def _tracing(torch) -> bool:
    """Whether torch traces or exports the module (a check on the data cannot run: the values are symbolic)."""
    compiler = torch.compiler
    return torch.jit.is_tracing() or compiler.is_compiling() or getattr(compiler, "is_exporting", lambda: False)()
