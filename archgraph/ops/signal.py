"""Signals over time and space without parameters: `timestep_embedding` (a value t [B] as sinusoidal
features, diffusion and flow-matching times), `interpolate` (nearest or linear resampling),
`fft_conv` (a long convolution whose kernel comes from another node, through the FFT)."""
from __future__ import annotations

import math
from typing import Literal

from ..dims import ceil_log2, prod
from ..errors import InconclusiveDimError
from .base import Op, Size, check, expect_dim, expect_rank, invalid, op


@op("timestep_embedding", category="embedding", aliases=("get_timestep_embedding", "Timesteps",
                                                          "sinusoidal_time_embedding"),
    example={"dim": 256, "flip_sin_to_cos": True, "downscale_freq_shift": 0})
class TimestepEmbedding(Op):
    """Sinusoidal features of values (not positions): t [...] -> [..., dim], as diffusers'
    get_timestep_embedding: exponents -log(max_period)·k / (dim/2 - downscale_freq_shift), sin
    then cos (cos then sin with flip_sin_to_cos), times `scale`; a zero column pads an odd dim."""

    dim: int  # width of the output features
    max_period: float = 10000.0  # the longest period of the frequencies
    flip_sin_to_cos: bool = False  # cos first, then sin
    downscale_freq_shift: float = 1.0  # shifts the exponent's denominator (dim/2 - shift)
    scale: float = 1.0  # multiplies the arguments of sin and cos

    keeps = ""

    def __post_init__(self):
        if self.dim < 2:
            raise invalid(self, f"dim must be at least 2; received {self.dim}")

    def infer_shape(self, t):
        return (*t, self.dim)

    def flops(self, inputs, outputs):
        return 6 * prod(outputs[0])

    def forward(self, run, t):
        torch = run.torch
        half = self.dim // 2
        exponent = -math.log(self.max_period) * torch.arange(half, dtype=torch.float32, device=t.device)
        frequencies = torch.exp(exponent / (half - self.downscale_freq_shift))
        angles = self.scale * (t[..., None].float() * frequencies)
        sin, cos = torch.sin(angles), torch.cos(angles)
        out = torch.cat([cos, sin] if self.flip_sin_to_cos else [sin, cos], dim=-1)
        return run.F.pad(out, (0, 1)) if self.dim % 2 else out


@op("interpolate", aliases=("F.interpolate", "nn.Upsample", "upsample", "resize"),
    example={"scale_factor": 2, "mode": "nearest"})
class Interpolate(Op):
    """F.interpolate of [B, C, *spatial]: to `size`, or each spatial dim times `scale_factor`
    (floored, as PyTorch does); modes nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area."""

    size: tuple[Size, ...] | None = None  # the output's spatial size
    scale_factor: float | tuple[float, ...] | None = None  # multiplies each spatial size instead (floored)
    mode: Literal["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"] = "nearest"  # the
    #   interpolation: nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area
    align_corners: bool | None = None  # the corner pixels of input and output line up (linear modes only)
    antialias: bool = False  # downsampling filters over every input pixel it covers (bilinear, bicubic only)

    keeps = ""

    def __post_init__(self):
        if (self.size is None) == (self.scale_factor is None):
            raise invalid(self, "give exactly one of size or scale_factor")
        if self.antialias and self.mode not in ("bilinear", "bicubic"):
            raise invalid(self, f"antialias is for modes bilinear and bicubic; received mode '{self.mode}'",
                          "drop antialias, or resample with mode bilinear or bicubic")

    def infer_shape(self, x):
        expect_rank(x, (3, 4, 5), "input [B, C, *spatial]")
        spatial = x[2:]
        rank = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}.get(self.mode)
        check(rank is None or rank == len(spatial), f"mode '{self.mode}' resamples {rank} spatial dims; "
                                                    f"the input has {len(spatial)}")
        if self.size is not None:
            check(len(self.size) in (1, len(spatial)), f"size lists {len(self.size)} sizes for "
                                                       f"{len(spatial)} spatial dims")
            sizes = self.size * len(spatial) if len(self.size) == 1 else self.size
            return (x[0], x[1], *sizes)
        factors = (self.scale_factor,) * len(spatial) if isinstance(self.scale_factor, float) \
            else self.scale_factor
        check(len(factors) == len(spatial), f"scale_factor lists {len(factors)} factors for "
                                            f"{len(spatial)} spatial dims")
        return (x[0], x[1], *(_scaled(n, f) for n, f in zip(spatial, factors)))

    def flops(self, inputs, outputs):
        per = {"nearest": 0, "nearest-exact": 0, "area": 1, "linear": 3, "bilinear": 7, "trilinear": 15}
        return per.get(self.mode, 31) * prod(outputs[0])

    def forward(self, run, x):
        size = tuple(int(s) for s in self.size) if self.size is not None else None
        if size is not None and len(size) == 1:
            size = size * (x.dim() - 2)
        return run.F.interpolate(x, size=size, scale_factor=self.scale_factor, mode=self.mode,
                                 align_corners=self.align_corners, antialias=self.antialias)


def _scaled(n, factor: float):
    """floor(n · factor), exact for a whole factor of a symbolic size."""
    if isinstance(n, int):
        return int(n * factor)
    if float(factor).is_integer():
        return n * int(factor)
    raise InconclusiveDimError(f"cannot scale the symbolic size {n} by {factor} exactly",
                               hint="give the size a value with --set, or a whole scale_factor")


@op("fft_conv", aliases=("fftconv", "long_conv", "hyena_conv", "FFTConv"))
class FFTConv(Op):
    """A causal long convolution by the FFT: x [B, C, L] with a kernel from another node,
    [C, K] or [B, C, K] (K <= L, one filter per channel, Hyena's implicit filters):
    y[t] = sum over s <= t of k[s]·x[t-s], -> [B, C, L].  FLOPs follow the FFT: three real
    transforms of size 2L (2.5·n·log2 n each) and the product of spectra, per channel."""

    def infer_shape(self, x, kernel):
        expect_rank(x, 3, "input [B, C, L]")
        expect_rank(kernel, (2, 3), "kernel [C, K] or [B, C, K]")
        expect_dim(kernel[-2], x[1], "channels of the kernel")
        if len(kernel) == 3 and not (isinstance(kernel[0], int) and kernel[0] == 1):
            expect_dim(kernel[0], x[0], "batch dim of the kernel")
        return tuple(x)

    def flops(self, inputs, outputs):
        b, c, length = inputs[0]
        n = 2 * length
        return b * c * (3 * 5 * n * ceil_log2(n) // 2 + 6 * (length + 1))

    def forward(self, run, x, kernel):
        torch = run.torch
        length = x.shape[-1]
        n = 2 * length
        spectrum = torch.fft.rfft(x.float(), n=n) * torch.fft.rfft(kernel.float(), n=n)
        return torch.fft.irfft(spectrum, n=n)[..., :length].to(x.dtype)
