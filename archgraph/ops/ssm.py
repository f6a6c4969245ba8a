"""State-space mixers: `mamba_mixer` (Mamba's selective scan, v1).

A mixer reads [B, S, hidden] and returns [B, S, hidden]; while decoding it keeps a state
per sequence that does not grow with the tokens (its `cache` is a fixed `state`, no keys
or values).  Each mixer is one section of this file.
"""
from __future__ import annotations

from typing import Literal

from ..dims import prod
from .activation import ActivationName as Activation
from .activation import activate
from .base import Cache, Op, Saved, Tensor, expect_dim, expect_padding_mask, expect_rank, keeps_own, op, positive
from .conv import causal_depthwise


# -- mamba_mixer: Mamba (v1), selective scan ---------------------------------------------------
@op("mamba_mixer", category="ssm",
     aliases=("MambaMixer", "selective_scan", "selective_ssm", "S6"),
     example={"hidden": 768, "intermediate": 1536, "state_size": 16, "conv_kernel": 4, "dt_rank": 48})
class MambaMixer(Op):
    """Mamba's selective state-space mixer: x [B, S, hidden] -> [B, S, hidden].

    Tensors (Hugging Face's MambaMixer): `in_proj` [2·intermediate, hidden] (x and the gate z),
    a depthwise causal `conv1d` [intermediate, 1, conv_kernel] then `activation`, `x_proj`
    [dt_rank + 2·state_size, intermediate] (no bias: the step dt, B and C from each token),
    `dt_proj` [intermediate, dt_rank] with a bias, `A_log` [intermediate, state_size], `D`
    [intermediate], `out_proj` [hidden, intermediate]; `bias` puts biases on in_proj and
    out_proj, `conv_bias` on the convolution.  dt_rank defaults to ceil(hidden / 16)
    (time_step_rank "auto").  The scan, per channel c and state n:
    h_t = exp(dt_t·A) h_(t-1) + dt_t·B_t·u_t, y_t = C_t·h_t + D·u_t, times silu(z_t), with
    A = -exp(A_log) and dt = softplus(dt_proj(dt) + bias), run token by token in float32 as
    transformers' reference path.  `bcdt_norm` RMS-normalises dt, B and C before they are used:
    `weightless` (Falcon-Mamba: no weights; transformers registers unused non-persistent ones,
    dt_layernorm.weight [intermediate], b_ and c_layernorm.weight [state_size]) or `weighted`
    (Jamba: dt_layernorm.weight [dt_rank], b_ and c_layernorm.weight [state_size]), eps `norm_eps`.
    An optional second input `mask` [B, S] (0: padding) zeroes the padding positions of the input
    and of the convolution's output, as transformers' apply_mask_to_padding_states.
    FLOPs: the five projections and the convolution at 2 per multiply-add, and 9 per token,
    channel and state for the scan (mamba_ssm's count: discretise, update, read out).
    Decoding keeps, per sequence, a convolution state [intermediate, conv_kernel] and the SSM
    state [intermediate, state_size].
    """

    hidden: int  # width of the input and of the output
    intermediate: int  # width inside the mixer (expand · hidden)
    state_size: int = 16  # size of the state per channel (d_state)
    conv_kernel: int = 4  # taps of the causal convolution
    dt_rank: int | None = None  # width of the time-step projection (default ceil(hidden / 16))
    bias: bool = False  # in_proj and out_proj have biases
    conv_bias: bool = True  # the convolution has a bias
    activation: Activation = "silu"  # the activation after the convolution
    bcdt_norm: Literal["none", "weightless", "weighted"] = "none"  # RMS norms of B, C and the time step: none,
    #   without or with weights (Falcon-Mamba, Jamba)
    norm_eps: float = 1e-6  # the epsilon of those norms

    def __post_init__(self):
        positive(self, "hidden", "intermediate", "state_size", "conv_kernel", "dt_rank")

    @property
    def rank(self) -> int:
        return self.dt_rank if self.dt_rank is not None else (self.hidden + 15) // 16  # ceil(hidden / 16)

    def infer_shape(self, x, mask=None):
        expect_rank(x, 3)
        expect_dim(x[-1], self.hidden, "last dimension of the input (hidden)")
        expect_padding_mask(mask, x)
        return x

    def params(self):
        h, i, n, r = self.hidden, self.intermediate, self.state_size, self.rank
        yield Tensor("A_log", (i, n))
        yield Tensor("D", (i,))
        yield Tensor("conv1d.weight", (i, 1, self.conv_kernel))
        if self.conv_bias:
            yield Tensor("conv1d.bias", (i,))
        yield Tensor("in_proj.weight", (2 * i, h))
        if self.bias:
            yield Tensor("in_proj.bias", (2 * i,))
        yield Tensor("x_proj.weight", (r + 2 * n, i))
        yield Tensor("dt_proj.weight", (i, r))
        yield Tensor("dt_proj.bias", (i,))
        yield Tensor("out_proj.weight", (h, i))
        if self.bias:
            yield Tensor("out_proj.bias", (h,))
        if self.bcdt_norm == "weighted":
            yield from self._norms(r)

    def buffers(self):
        if self.bcdt_norm == "weightless":
            yield from self._norms(self.intermediate, persistent=False)

    def _norms(self, dt_width: int, persistent: bool = True):
        yield Tensor("dt_layernorm.weight", (dt_width,), persistent)
        yield Tensor("b_layernorm.weight", (self.state_size,), persistent)
        yield Tensor("c_layernorm.weight", (self.state_size,), persistent)

    def flops(self, inputs, outputs):
        tokens = prod(inputs[0][:-1])
        h, i, n, r = self.hidden, self.intermediate, self.state_size, self.rank
        projections = 2 * tokens * (h * 2 * i + i * (r + 2 * n) + r * i + i * h)
        return projections + 2 * tokens * i * self.conv_kernel + 9 * tokens * i * n

    def cache(self, inputs, outputs, decoder):
        """A fixed state per sequence: the convolution's last conv_kernel inputs and the SSM state."""
        i = self.intermediate
        return Cache("state space (conv + SSM state)", state=i * self.conv_kernel + i * self.state_size)

    def init(self, tensor, value, init):
        if tensor.name == "A_log":  # S4D-real: A = -(1, 2, ..., state_size) per channel
            value.copy_(init.torch.arange(1, self.state_size + 1, dtype=value.dtype).log().expand_as(value))
        else:  # D and the norms' weights 1, biases 0, matrices as nn.Linear's
            init.default(value, tensor.name)

    def saved(self, inputs, outputs, eager):
        """As a fused selective-scan kernel keeps them (mamba_ssm's, which recomputes the states
        in backward): x and, per token, in_proj's output (2·I), the convolution's output and its
        activation, x_proj's output (dt_rank + 2·state), dt, the scan's output, silu(z) and the
        gated product (out_proj's input)."""
        tokens, i = prod(inputs[0][:-1]), self.intermediate
        return [Saved(input=0), keeps_own(tokens * (8 * i + self.rank + 2 * self.state_size), heads=True)]

    def forward(self, run, x, mask=None):
        torch, F = run.torch, run.F
        n, r, dense = self.state_size, self.rank, run.linear
        u, z = dense("in_proj", zero_padding(x, mask), self.bias).transpose(1, 2).chunk(2, dim=1)  # [B, I, S] each
        u = causal_depthwise(F, u, run.tensor("conv1d.weight"), run.tensor("conv1d.bias") if self.conv_bias else None)
        u = activate(self.activation, run, u)
        if mask is not None:
            u = zero_padding(u.transpose(1, 2), mask).transpose(1, 2)
        dt, b, c = torch.split(dense("x_proj", u.transpose(1, 2), False), [r, n, n], dim=-1)  # [B, S, r|n|n]
        if self.bcdt_norm != "none":
            dt, b, c = (self._norm(run, name, t) for name, t in (("dt", dt), ("b", b), ("c", c)))
        dt = run.tensor("dt_proj.weight") @ dt.transpose(1, 2)                         # [B, I, S]
        dt = F.softplus(dt + run.tensor("dt_proj.bias").float()[..., None])
        y = selective_scan(torch, u, dt, -torch.exp(run.tensor("A_log").float()), b, c)
        y = (y + u * run.tensor("D").float()[None, :, None]) * F.silu(z)
        return dense("out_proj", y.transpose(1, 2).to(x.dtype), self.bias)

    def _norm(self, run, name, x):
        from .norm import rms_normalize
        weight = run.tensor(f"{name}_layernorm.weight") if self.bcdt_norm == "weighted" else None
        return rms_normalize(run.torch, x, self.norm_eps, weight)


def zero_padding(x, mask):
    """x [B, S, ...] with its padding positions (mask 0) zeroed, in x's dtype (transformers'
    apply_mask_to_padding_states); x itself without a mask."""
    if mask is None:
        return x
    return (x * mask.reshape(*mask.shape, *[1] * (x.dim() - 2))).to(x.dtype)


def selective_scan(torch, u, dt, A, b, c):
    """Mamba's recurrence token by token: u, dt [B, I, S], A [I, N], b, c [B, S, N] -> y [B, I, S]
    (h_t = exp(dt_t·A)·h_(t-1) + dt_t·b_t·u_t, y_t = h_t·c_t; float32, from a zero state)."""
    decay = torch.exp(A[None, :, None, :] * dt[:, :, :, None])                 # [B, I, S, N]
    inflow = dt[:, :, :, None] * b[:, None, :, :].float() * u[:, :, :, None].float()
    state = torch.zeros(u.shape[0], u.shape[1], A.shape[-1], dtype=u.dtype, device=u.device)
    out = []
    for t in range(u.shape[2]):
        state = decay[:, :, t] * state + inflow[:, :, t]
        out.append(torch.matmul(state.to(u.dtype), c[:, t, :].unsqueeze(-1))[:, :, 0])
    return torch.stack(out, dim=-1)
