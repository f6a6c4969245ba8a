"""The Fourier transforms of an exported graph (`_fft_r2c`, `_fft_c2r`, `_fft_c2c`, which torch.fft's
functions become, the zero padding of `n` already a `constant_pad_nd` before them) and the complex
plumbing around them, each as the archgraph op of the same meaning (`fft_rfft`, `fft_irfft`,
`fft_fft`, `fft_ifft`, `view_as_complex`, `view_as_real`, `complex`, `conj`)."""
from __future__ import annotations

from .aten import Out, aten, named, rule

# ATen's normalization codes: 0 none, 1 by 1/sqrt(n), 2 by 1/n; torch.fft's norm names them by the
# direction: a forward transform's "backward" scales by none, an inverse's by 1/n
FORWARD_NORM = {0: "backward", 1: "ortho", 2: "forward"}
INVERSE_NORM = {0: "forward", 1: "ortho", 2: "backward"}


def _hp(dims, norm: str) -> dict:
    dims = list(dims)
    hp = {"dim": dims[0] if len(dims) == 1 else dims}
    if norm != "backward":
        hp["norm"] = norm
    return hp


@rule(aten._fft_r2c.default)
def _rfft(n, c):
    a = named(n)
    hp = _hp(a["dim"], FORWARD_NORM[a["normalization"]])
    return Out("fft_rfft" if a["onesided"] else "fft_fft", [a["self"]], hp)


@rule(aten._fft_c2r.default)
def _irfft(n, c):
    a = named(n)
    hp = _hp(a["dim"], INVERSE_NORM[a["normalization"]])
    dims = list(a["dim"])
    spectrum = c.shape(a["self"])
    half = spectrum[dims[-1]]
    if not isinstance(half, int) or c.size(a["last_dim_size"]) != 2 * (half - 1):  # n given (an odd length)
        out = c.shape(n)
        lengths = [out[d] for d in dims]
        hp["n"] = lengths[0] if len(lengths) == 1 else lengths
    return Out("fft_irfft", [a["self"]], hp)


@rule(aten._fft_c2c.default)
def _fft(n, c):
    a = named(n)
    forward = bool(a["forward"])
    hp = _hp(a["dim"], (FORWARD_NORM if forward else INVERSE_NORM)[a["normalization"]])
    return Out("fft_fft" if forward else "fft_ifft", [a["self"]], hp)


rule(aten.view_as_complex.default)(lambda n, c: Out("view_as_complex", [n.args[0]]))
rule(aten.view_as_real.default)(lambda n, c: Out("view_as_real", [n.args[0]]))
rule(aten.complex.default)(lambda n, c: Out("complex", [n.args[0], n.args[1]]))
rule(aten._conj.default, aten.conj_physical.default, aten.conj.default)(lambda n, c: Out("conj", [n.args[0]]))
