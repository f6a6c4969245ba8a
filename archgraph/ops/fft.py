"""Fourier transforms with torch.fft's names and semantics, over one dim or several: `fft_rfft` (real
in, the half spectrum out: torch.fft.rfftn), `fft_irfft` (back to real: irfftn), `fft_fft` and
`fft_ifft` (complex spectra: fftn, ifftn); and `conj`, the complex conjugate (`view_as_complex`
and `view_as_real` are in `complex`).  A spectrum is a tensor of complex numbers (complex64 for
float32 inputs), as torch's is.  FLOPs follow the usual count of a radix-2 transform: 5·n·log2(n)
per complex transform of length n, half that for a real one."""
from __future__ import annotations

from typing import Literal

from ..dims import ceil_log2, floor_div, norm, prod
from .base import Op, Size, axis, check, invalid, op

Norm = Literal["backward", "ortho", "forward"]


class _FFT(Op):
    """dim: the dims transformed; n: their lengths (the input cut or padded with zeros to them)."""

    real_in = False  # the input is real (rfft)
    real_out = False  # the output is real (irfft)
    keeps = ""

    def __post_init__(self):
        dims = self.dims()
        if len(set(dims)) != len(dims):
            raise invalid(self, f"dim {self.dim} names a dim twice")
        if self.n is not None and len(self.lengths_given()) != len(dims):
            raise invalid(self, f"n lists {len(self.lengths_given())} lengths for the {len(dims)} dims of dim {self.dim}")

    def dims(self) -> list[int]:
        return [self.dim] if isinstance(self.dim, int) else list(self.dim)

    def lengths_given(self) -> list:
        return [self.n] if not isinstance(self.n, (list, tuple)) else list(self.n)

    def _axes(self, x) -> list[int]:
        picked = [axis(d, len(x)) for d in self.dims()]
        check(len(set(picked)) == len(picked), f"dim {self.dim} names a dim of {len(x)} twice")
        return picked

    def lengths(self, x) -> list:
        """The signal's length along each transformed dim (the spectrum's full length)."""
        axes = self._axes(x)
        if self.n is not None:
            return self.lengths_given()
        if self.real_out:  # the input is a half spectrum along the last dim: 2·(m - 1) real values
            return [*(x[a] for a in axes[:-1]), norm(2 * (x[axes[-1]] - 1))]
        return [x[a] for a in axes]

    def infer_shape(self, x):
        out = list(x)
        axes, lengths = self._axes(x), self.lengths(x)
        for a, length in zip(axes, lengths):
            out[a] = length
        if self.real_in:
            out[axes[-1]] = norm(floor_div(lengths[-1], 2) + 1)
        return tuple(out)

    def flops(self, inputs, outputs):
        x, lengths = inputs[0], self.lengths(inputs[0])
        signal = list(x)  # the real signal's values (cut or padded to n), or the output's
        for a, length in zip(self._axes(x), lengths):
            signal[a] = length
        count = prod(signal) if self.real_in else prod(outputs[0])
        per = 5 * count * sum(ceil_log2(length) for length in lengths)
        return floor_div(per, 2) if self.real_in or self.real_out else per

    def forward(self, run, x):
        transform = getattr(run.torch.fft, self.torch_name)
        n = None if self.n is None else [int(v) for v in self.lengths_given()]
        return transform(x, s=n, dim=self.dims(), norm=self.norm)


@op("fft_rfft", aliases=("torch.fft.rfft", "torch.fft.rfft2", "torch.fft.rfftn"), example={"dim": -1})
class FFTRFFT(_FFT):
    """The half spectrum of a real signal along `dim` (torch.fft.rfftn).

    One dim or several, the last one halved: [..., n] -> [..., n // 2 + 1] complex (rfft2 is
    dim [-2, -1])."""

    dim: int | tuple[int, ...] = -1  # the dims transformed (the last one is halved)
    n: Size | tuple[Size, ...] | None = None  # each transformed dim's length: the input cut or zero-padded to it
    norm: Norm = "backward"  # scaling: backward (none forward, 1/n back), ortho (1/sqrt(n) both), forward (1/n)
    real_in = True
    torch_name = "rfftn"


@op("fft_irfft", aliases=("torch.fft.irfft", "torch.fft.irfft2", "torch.fft.irfftn"), example={"dim": -1})
class FFTIRFFT(_FFT):
    """The real signal of a half spectrum along `dim`: [..., m] complex -> [..., n] real, n = 2·(m - 1)
    unless given (torch.fft.irfftn; the inverse of fft_rfft with the same n and norm)."""

    dim: int | tuple[int, ...] = -1  # the dims transformed (the last one is the halved one)
    n: Size | tuple[Size, ...] | None = None  # the output's length along each dim (default 2·(m - 1) for the last)
    norm: Norm = "backward"  # scaling: backward (1/n here), ortho (1/sqrt(n)), forward (none here)
    real_out = True
    torch_name = "irfftn"


@op("fft_fft", aliases=("torch.fft.fft", "torch.fft.fft2", "torch.fft.fftn"), example={"dim": -1})
class FFTFFT(_FFT):
    """The complex spectrum of a real or complex signal along `dim` (torch.fft.fftn)."""

    dim: int | tuple[int, ...] = -1  # the dims transformed
    n: Size | tuple[Size, ...] | None = None  # each transformed dim's length: the input cut or zero-padded to it
    norm: Norm = "backward"  # scaling: backward (none forward, 1/n back), ortho (1/sqrt(n) both), forward (1/n)
    torch_name = "fftn"


@op("fft_ifft", aliases=("torch.fft.ifft", "torch.fft.ifft2", "torch.fft.ifftn"), example={"dim": -1})
class FFTIFFT(_FFT):
    """The complex signal of a spectrum along `dim` (torch.fft.ifftn)."""

    dim: int | tuple[int, ...] = -1  # the dims transformed
    n: Size | tuple[Size, ...] | None = None  # each transformed dim's length: the input cut or zero-padded to it
    norm: Norm = "backward"  # scaling: backward (1/n here), ortho (1/sqrt(n)), forward (none here)
    torch_name = "ifftn"


@op("conj", aliases=("torch.conj", "conj_physical"))
class Conj(Op):
    """The complex conjugate (the imaginary part negated); a real input as it is."""

    keeps = ""

    def infer_shape(self, x):
        return tuple(x)

    def flops(self, inputs, outputs):
        return prod(outputs[0])

    def forward(self, run, x):
        return run.torch.conj_physical(x)
