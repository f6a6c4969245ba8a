"""Complex numbers as torch keeps them: `view_as_complex` reads pairs of reals as one complex value,
`view_as_real` splits it again (Llama 4's vision tower keeps its rotary table as a complex64 buffer,
cos + i sin of each angle).  Both are views: no FLOPs; `complex` builds complex values from two
tensors of their parts (no FLOPs either)."""
from __future__ import annotations

from ..dims import fmt_shape
from .base import Op, check, expect_dim, op
from .elementwise import broadcast


@op("view_as_complex", aliases=("torch.view_as_complex",))
class ViewAsComplex(Op):
    """Pairs of reals [..., 2] read as complex values [...] (torch.view_as_complex).

    The last dimension holds the real part, then the imaginary part."""

    def infer_shape(self, x):
        check(len(x) >= 1, f"the input must end in a dimension of 2 (real and imaginary parts); received {fmt_shape(x)}")
        expect_dim(x[-1], 2, "the last dimension (real and imaginary parts)")
        return x[:-1]

    def forward(self, run, x):
        return run.torch.view_as_complex(x.contiguous())


@op("view_as_real", aliases=("torch.view_as_real",))
class ViewAsReal(Op):
    """Complex values [...] as pairs of reals [..., 2] (torch.view_as_real).

    The new last dimension holds the real part, then the imaginary part."""

    def infer_shape(self, x):
        return (*x, 2)

    def forward(self, run, x):
        return run.torch.view_as_real(x)


@op("complex", aliases=("torch.complex",))
class Complex(Op):
    """Complex values from their real and imaginary parts (torch.complex(real, imag)): the two
    inputs, of one float type, broadcast together (a complex constant 1j is complex(0, 1) of two
    scalars); float32 parts make complex64."""

    def infer_shape(self, real, imag):
        return broadcast(real, imag)

    keeps = ""

    def forward(self, run, real, imag):
        return run.torch.complex(real, imag)
