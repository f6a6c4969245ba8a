"""Layers that decode with a fixed state instead of a growing cache: `causal_conv1d` (a depthwise
convolution along the sequence that sees no future token), `rg_lru` (Griffin's real-gated linear
recurrent unit), `mamba2_mixer` (Mamba-2's state-space duality layer, projections included) and
`gated_delta_rule` (Gated DeltaNet's recurrence alone: its layer is nodes around it).
Each one's `cache` is a number of values per sequence that does not grow with its length."""
from __future__ import annotations

import math
from typing import Literal

from ..dims import prod
from .activation import ActivationName, activate
from .base import (
    Cache,
    Op,
    Saved,
    Tensor,
    expect_dim,
    expect_padding_mask,
    expect_rank,
    invalid,
    keeps_inputs,
    keeps_own,
    op,
    positive,
    quotient,
)
from .conv import causal_depthwise
from .norm import rms_normalize
from .ssm import zero_padding


def _sequence(x, width: int, what: str):
    """[B, S, width] (the width checked), as every op here reads and writes."""
    expect_rank(x, 3, "input [B, S, channels]")
    expect_dim(x[-1], width, f"last dimension of the input ({what})")
    return x


def _causal_conv(run, x, weight, bias):
    """conv.causal_depthwise of x [B, S, C], channels last as the ops here read and write them."""
    return causal_depthwise(run.F, x.transpose(1, 2), weight, bias).transpose(1, 2)


@op("causal_conv1d", category="conv", aliases=("short_conv", "conv_1d"),
    example={"channels": 2560, "kernel_size": 4})
class CausalConv1d(Op):
    """Depthwise causal convolution along the sequence: x [B, S, channels] -> [B, S, channels].

    Each channel has its own kernel of `kernel_size` taps; output t sees inputs t-K+1 .. t. Tensors
    as nn.Conv1d(channels, channels, K, groups=channels) lays them out: weight [channels, 1, K],
    bias [channels]. While decoding it keeps the last `cache_window` inputs of each channel: K-1 by
    default, all the next output needs (Griffin's conv1d_state); transformers' LinearAttentionLayer cache
    keeps K (Qwen3-Next's and LFM2's conv_states: `cache_window: K`).  `cached: false` says it is never
    decoded token by token (an encoder's: Gemma 4's audio tower), so `memory` keeps no window for it.
    """

    channels: int  # number of channels (the input's last dimension)
    kernel_size: int  # taps of each channel's kernel
    bias: bool = True  # a learned bias per channel
    cached: bool = True  # false: an encoder's convolution, run over the whole input once: no window kept
    cache_window: int | None = None  # inputs a decoding cache keeps per channel (None: kernel_size - 1)

    def __post_init__(self):
        positive(self, "channels", "kernel_size")
        if self.cache_window is not None and self.cache_window < self.kernel_size - 1:
            raise invalid(self, f"cache_window={self.cache_window} keeps fewer inputs than the next output needs "
                                f"(kernel_size - 1 = {self.kernel_size - 1}); omit it or give at least that")

    def infer_shape(self, x):
        return _sequence(x, self.channels, "channels")

    def params(self):
        yield Tensor("weight", (self.channels, 1, self.kernel_size))
        if self.bias:
            yield Tensor("bias", (self.channels,))

    def flops(self, inputs, outputs):
        return 2 * prod(outputs[0]) * self.kernel_size

    def cache(self, inputs, outputs, decoder):
        """The last cache_window (kernel_size - 1) inputs of every channel (none when not `cached`)."""
        if not self.cached:
            return None
        kept = self.kernel_size - 1 if self.cache_window is None else self.cache_window
        return Cache(f"convolution window of {kept}", state=self.channels * kept)

    def forward(self, run, x):
        return _causal_conv(run, x, run.tensor("weight"), run.tensor("bias") if self.bias else None)


@op("rg_lru", category="recurrent", aliases=("RecurrentGemmaRglru", "rglru"),
    example={"width": 2560, "heads": 10})
class RGLRU(Op):
    """Griffin's real-gated linear recurrent unit: x [B, S, width] -> [B, S, width].

    Per head (width / heads channels), an input gate i = σ(x·W_i + b_i) and a recurrence gate
    r = σ(x·W_r + b_r) (block-diagonal: input_gate_weight, recurrent_gate_weight [heads, w, w],
    the biases [heads, w]); a = exp(-c·r·softplus(recurrent_param)) per channel (c = 8), and
    h_t = a_t·h_{t-1} + sqrt(1 - a_t²)·(i_t·x_t), with h_0 = i_0·x_0 (the state starts, and resets, at
    position 0, as transformers' RecurrentGemma does). Decoding keeps h: `width` values per sequence.
    """

    width: int  # width of the input and of the state
    heads: int  # number of heads of the block-diagonal gates
    c: float = 8.0  # the constant in the decay a^(c·r)

    def __post_init__(self):
        positive(self, "width", "heads")
        if self.width % self.heads:
            raise invalid(self, f"width={self.width} is not divisible by heads={self.heads}")

    @property
    def block(self) -> int:
        return quotient(self.width, self.heads)

    def infer_shape(self, x):
        return _sequence(x, self.width, "width")

    def params(self):
        h, w = self.heads, self.block
        yield Tensor("recurrent_param", (self.width,))
        yield Tensor("input_gate_weight", (h, w, w))
        yield Tensor("input_gate_bias", (h, w))
        yield Tensor("recurrent_gate_weight", (h, w, w))
        yield Tensor("recurrent_gate_bias", (h, w))

    def flops(self, inputs, outputs):
        """The two gates (2·width·width/heads per token each) and the recurrence a·h + x (2 per channel)."""
        tokens = prod(inputs[0][:-1])
        return 2 * 2 * tokens * self.width * self.block + 2 * tokens * self.width

    def cache(self, inputs, outputs, decoder):
        """The recurrent state h: one value per channel."""
        return Cache("recurrent state (RG-LRU)", state=self.width)

    def saved(self, inputs, outputs, eager):
        """x (both gates' input), the two gates' outputs, the decay a and the state h of every
        token (the recurrence's backward reads them)."""
        return [Saved(input=0), keeps_own(4 * prod(inputs[0]), heads=True)]

    def forward(self, run, x):
        torch, F = run.torch, run.F
        b, s, _ = x.shape
        blocks = x.reshape(b, s, self.heads, self.block)

        def gate(name):
            z = torch.einsum("bshi,hij->bshj", blocks, run.tensor(f"{name}_weight")) + run.tensor(f"{name}_bias")
            return torch.sigmoid(z.reshape(b, s, self.width))

        input_gate, recurrent_gate = gate("input_gate"), gate("recurrent_gate")
        log_a = -self.c * recurrent_gate * F.softplus(run.tensor("recurrent_param"))
        a, a_square = torch.exp(log_a), torch.exp(2 * log_a)
        multiplier = torch.sqrt(1 - a_square)
        multiplier = torch.cat([torch.ones_like(multiplier[:, :1]), multiplier[:, 1:]], dim=1)  # reset at 0
        inputs = (x * input_gate) * multiplier.to(x.dtype)
        a = torch.cat([torch.zeros_like(a[:, :1]), a[:, 1:]], dim=1)
        state = torch.zeros(b, self.width, dtype=torch.float32, device=x.device)
        out = []
        for t in range(s):
            state = a[:, t].float() * state + inputs[:, t].float()
            out.append(state.to(x.dtype))
        return torch.stack(out, dim=1)

    def init(self, tensor, value, init):
        if tensor.name == "recurrent_param":  # softplus⁻¹ of -log(a)/c, a² uniform in [0.9², 0.999²] (Griffin)
            with init.torch.no_grad():
                a2 = init.torch.empty_like(value).uniform_(0.9 ** 2 + 1e-8, 0.999 ** 2 + 1e-8)
                value.copy_(a2.log().mul(0.5).neg().exp().sub(1.0).log())
        else:
            init.default(value, tensor.name)


@op("mamba2_mixer", category="recurrent", aliases=("Mamba2Mixer", "ssd"),
    example={"hidden": 2560, "heads": 80, "head_dim": 64, "state": 128, "groups": 1})
class Mamba2Mixer(Op):
    """Mamba-2's mixer (state-space duality): x [B, S, hidden] -> [B, S, hidden].

    in_proj makes, per token, a gate z [I] (I = heads·head_dim), the convolved part [I + 2·groups·state]
    (x, then B and C, each [groups, state]: the heads of a group share them) and dt [heads]; conv1d is
    depthwise causal (kernel conv_kernel) followed by `activation`; per head, with
    Δ = clamp(softplus(dt + dt_bias), dt_min, dt_max) and A = -exp(A_log), the state [head_dim, state]
    follows h_t = exp(Δ·A)·h_{t-1} + Δ·x_t ⊗ B_t and y_t = h_t·C_t + D·x_t; then
    norm(y · silu(z)) (RMSNorm over each of `groups` slices of I, weight norm.weight [I]) and out_proj.
    `norm: gate_after` is norm(y) · silu(z) instead, `norm: none` y · silu(z) with no norm (Falcon-H1's
    mamba_norm_before_gate, mamba_rms_norm).  `multipliers` (five: z, x, B, C, dt) scale in_proj's
    output by parts, through a buffer mup_vector [1, 1, in_proj's width] that state_dict leaves out
    (Falcon-H1's ssm_multipliers).
    Tensors as transformers' Mamba2Mixer: conv1d.weight [I + 2·groups·state, 1, conv_kernel],
    conv1d.bias (conv_bias), in_proj.weight [2·I + 2·groups·state + heads, hidden], dt_bias, A_log,
    D [heads], norm.weight, out_proj.weight [hidden, I], in_proj/out_proj biases with `bias`
    (out_proj's with `out_bias` when it is given).
    Decoding keeps the convolution's last conv_kernel inputs (as transformers' cache holds them)
    and the state, heads·head_dim·state values.  An optional second input `mask` [B, S] (0: padding)
    zeroes the padding positions of the input and of the convolution's output, as transformers'
    apply_mask_to_padding_states.
    """

    hidden: int  # width of the input and of the output
    heads: int  # number of heads
    head_dim: int  # width of each head
    state: int  # size of the state per group (d_state)
    groups: int = 1  # number of groups B and C are shared in (n_groups)
    conv_kernel: int = 4  # taps of the causal convolution
    bias: bool = False  # in_proj and out_proj have biases
    conv_bias: bool = True  # the convolution has a bias
    activation: ActivationName = "silu"  # the activation after the convolution
    eps: float = 1e-6  # the epsilon of the gated norm
    dt_min: float = 0.0  # the lower bound time steps are clamped to (time_step_limit's first value)
    dt_max: float | None = None  # time_step_limit's upper end (None: no limit)
    out_bias: bool | None = None  # out_proj has a bias (None: as `bias`)
    norm: Literal["gated", "gate_after", "none"] = "gated"  # the gated output's norm: gate then norm,
    #   norm then gate, or the gate alone
    multipliers: tuple[float, ...] | None = None  # factors of in_proj's z, x, B, C and dt parts (None: 1)

    def __post_init__(self):
        positive(self, "hidden", "heads", "head_dim", "state", "groups", "conv_kernel")
        if self.heads % self.groups:
            raise invalid(self, f"heads={self.heads} is not divisible by groups={self.groups} "
                                "(each group's B and C serve heads/groups heads)")
        if self.multipliers is not None and len(self.multipliers) != 5:
            raise invalid(self, f"multipliers needs 5 factors (z, x, B, C, dt); received {list(self.multipliers)}")

    @property
    def has_out_bias(self) -> bool:
        return self.bias if self.out_bias is None else self.out_bias

    @property
    def projection(self) -> int:
        return self.inner + self.conv_dim + self.heads

    @property
    def inner(self) -> int:
        return self.heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        return self.inner + 2 * self.groups * self.state

    def infer_shape(self, x, mask=None):
        expect_padding_mask(mask, x)
        return _sequence(x, self.hidden, "hidden")

    def params(self):
        yield Tensor("conv1d.weight", (self.conv_dim, 1, self.conv_kernel))
        if self.conv_bias:
            yield Tensor("conv1d.bias", (self.conv_dim,))
        yield Tensor("in_proj.weight", (self.projection, self.hidden))
        if self.bias:
            yield Tensor("in_proj.bias", (self.projection,))
        yield Tensor("dt_bias", (self.heads,))
        yield Tensor("A_log", (self.heads,))
        if self.norm != "none":
            yield Tensor("norm.weight", (self.inner,))
        yield Tensor("D", (self.heads,))
        yield Tensor("out_proj.weight", (self.hidden, self.inner))
        if self.has_out_bias:
            yield Tensor("out_proj.bias", (self.hidden,))

    def buffers(self):
        if self.multipliers is not None:
            yield Tensor("mup_vector", (1, 1, self.projection), persistent=False)

    def flops(self, inputs, outputs):
        """Projections and convolution (2 per multiply-add), the scan (per state value: decay,
        input outer product and add, output product and sum: 5), D's skip and the gated norm."""
        tokens = prod(inputs[0][:-1])
        i, n = self.inner, self.state
        proj = 2 * tokens * self.hidden * (i + self.conv_dim + self.heads) + 2 * tokens * i * self.hidden
        return proj + 2 * tokens * self.conv_dim * self.conv_kernel + tokens * (5 * i * n + 2 * i + 5 * i)

    def cache(self, inputs, outputs, decoder):
        """The convolution's last conv_kernel inputs and the [heads, head_dim, state] state."""
        return Cache("state-space (Mamba-2)", state=self.conv_dim * self.conv_kernel + self.inner * self.state)

    def saved(self, inputs, outputs, eager):
        """As a fused chunked-scan kernel keeps them (mamba_ssm's): x and, per token, in_proj's
        output, the convolution's output and its activation, the scan's output, the gated norm's
        input (and its statistics) and output (out_proj's input)."""
        tokens = prod(inputs[0][:-1])
        return [Saved(input=0), keeps_own(tokens * (self.projection + 2 * self.conv_dim + 3 * self.inner), heads=True),
                keeps_own(tokens * self.groups, "fp32", heads=True)]

    def forward(self, run, x, mask=None):
        torch, F = run.torch, run.F
        b, s, _ = x.shape
        i, g, n, nh, hd = self.inner, self.groups, self.state, self.heads, self.head_dim
        projected = run.linear("in_proj", zero_padding(x, mask), self.bias)
        if self.multipliers is not None:
            projected = projected * run.tensor("mup_vector")
        z, xbc, dt = projected.split([i, self.conv_dim, nh], dim=-1)
        xbc = activate(self.activation, run, _causal_conv(run, xbc, run.tensor("conv1d.weight"),
                                                          run.tensor("conv1d.bias") if self.conv_bias else None))
        xbc = zero_padding(xbc, mask)
        xs, bs, cs = xbc.split([i, g * n, g * n], dim=-1)
        dt = F.softplus(dt + run.tensor("dt_bias")).clamp(min=self.dt_min, max=self.dt_max)
        y = _ssd_scan(torch, xs.reshape(b, s, nh, hd).float(), dt.float(), -torch.exp(run.tensor("A_log").float()),
                      bs.reshape(b, s, g, n).float(), cs.reshape(b, s, g, n).float())
        y = y + run.tensor("D").float()[:, None] * xs.reshape(b, s, nh, hd).float()
        y = y.reshape(b, s, i).to(x.dtype)
        if self.norm == "none":
            return run.linear("out_proj", (y * F.silu(z)).to(x.dtype), self.has_out_bias)
        if self.norm == "gated":  # transformers' MambaRMSNormGated: gate, then norm per group
            y = y.float() * F.silu(z.float())
        grouped = rms_normalize(torch, y.float().view(b, s, g, i // g), self.eps)
        normed = run.tensor("norm.weight") * grouped.view(b, s, i).to(x.dtype)
        if self.norm == "gate_after":  # Falcon-H1's norm before the gate
            normed = normed * F.silu(z.float())
        return run.linear("out_proj", normed.to(x.dtype), self.has_out_bias)

    def init(self, tensor, value, init):
        torch = init.torch
        with torch.no_grad():
            if tensor.name == "mup_vector":  # each part of in_proj's output its factor
                parts = [self.inner, self.inner, self.groups * self.state, self.groups * self.state, self.heads]
                value.copy_(torch.cat([torch.full((n,), float(m)) for n, m in zip(parts, self.multipliers)])
                            .view(1, 1, -1))
            elif tensor.name == "A_log":  # A = -(1 .. heads)
                value.copy_(torch.log(torch.arange(1, self.heads + 1, dtype=torch.float32)))
            elif tensor.name == "dt_bias":  # softplus⁻¹ of Δ, log-uniform in [0.001, 0.1]
                dt = torch.exp(torch.rand(self.heads) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
                dt = dt.clamp(min=1e-4)
                value.copy_(dt + torch.log(-torch.expm1(-dt)))
            else:
                init.default(value, tensor.name)


def _ssd_scan(torch, x, dt, a, b, c):
    """Mamba-2's recurrence, one token at a time: x [B, S, heads, head_dim], dt [B, S, heads],
    a [heads], b and c [B, S, groups, state] -> y [B, S, heads, head_dim] (without D's skip)."""
    heads, groups = x.shape[2], b.shape[2]
    b = b.repeat_interleave(heads // groups, dim=2)
    c = c.repeat_interleave(heads // groups, dim=2)
    h = torch.zeros(x.shape[0], heads, x.shape[3], b.shape[-1], dtype=x.dtype, device=x.device)
    out = []
    for t in range(x.shape[1]):
        decay = torch.exp(dt[:, t] * a)[:, :, None, None]                  # [B, heads, 1, 1]
        h = h * decay + (dt[:, t, :, None] * x[:, t])[..., None] * b[:, t, :, None, :]
        out.append((h * c[:, t, :, None, :]).sum(-1))                       # [B, heads, head_dim]
    return torch.stack(out, dim=1)


@op("gated_delta_rule", category="recurrent",
    aliases=("GatedDeltaNet", "chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule", "gated_deltanet"),
    example={"heads": 32, "key_heads": 16, "key_dim": 128, "value_dim": 128})
class GatedDeltaRule(Op):
    """The gated delta rule (Gated DeltaNet's recurrence, no parameters): q, k [B, S, key_heads·key_dim],
    v [B, S, heads·value_dim], g and beta [B, S, heads] -> [B, S, heads, value_dim].

    Each value head keeps a state M [key_dim, value_dim], zero at the start; per token, with its
    log-decay g (≤ 0) and write strength beta: M ← exp(g)·M, then M ← M + k ⊗ beta·(v − Mᵀk) (the
    delta rule: what M already predicts for k is replaced, not added to), and the output is Mᵀq.
    q and k are first L2-normalised per head (`qk_l2norm`: x·rsqrt(Σx² + 1e-6), as the fla kernels
    and transformers' torch fallbacks do) and q scaled by `scale` (default 1/√key_dim).  A key head
    serves heads/key_heads consecutive value heads.  Computed in float32 by chunks of 64 tokens, as
    transformers' torch_chunk_gated_delta_rule (token by token, as its recurrent form, gives the same
    values up to rounding).  The layer around it
    (Qwen3-Next's, Qwen3.5's) is nodes of the block: projections, the short causal convolution, the
    decay g = -exp(A_log)·softplus(a + dt_bias) and beta = sigmoid(b), a gated RMSNorm.
    FLOPs per token and value head: 7·key_dim·value_dim (decay, read, write, output).  Decoding keeps
    the state: heads·key_dim·value_dim values per sequence.
    """

    heads: int  # number of value heads (each with its own state, decay and beta)
    key_dim: int  # width of each query/key head
    value_dim: int  # width of each value head
    key_heads: int | None = None  # number of query/key heads (default heads; fewer: each serves several)
    qk_l2norm: bool = True  # L2-normalise q and k per head first (use_qk_l2norm_in_kernel)
    scale: float | None = None  # the queries' factor (None: 1/√key_dim)

    def __post_init__(self):
        positive(self, "heads", "key_dim", "value_dim", "key_heads")
        if self.heads % self.n_key:
            raise invalid(self, f"heads={self.heads} is not a multiple of key_heads={self.n_key} "
                                "(each key head serves heads/key_heads value heads)")

    @property
    def n_key(self) -> int:
        return self.key_heads if self.key_heads is not None else self.heads

    def infer_shape(self, q, k, v, g, beta):
        for t, width, what in ((q, self.n_key * self.key_dim, "query (key_heads·key_dim)"),
                               (k, self.n_key * self.key_dim, "key (key_heads·key_dim)"),
                               (v, self.heads * self.value_dim, "value (heads·value_dim)"),
                               (g, self.heads, "log-decay g (heads)"), (beta, self.heads, "beta (heads)")):
            expect_rank(t, 3, f"{what.split(' ')[0]} [B, S, width]")
            expect_dim(t[-1], width, f"last dimension of the {what}")
            expect_dim(t[0], q[0], f"batch dimension of the {what.split(' ')[0]}")
            expect_dim(t[1], q[1], f"length of the {what.split(' ')[0]}")
        return (q[0], q[1], self.heads, self.value_dim)

    def flops(self, inputs, outputs):
        return 7 * prod(inputs[0][:-1]) * self.heads * self.key_dim * self.value_dim

    def cache(self, inputs, outputs, decoder):
        """The state of every value head: heads·key_dim·value_dim values."""
        return Cache("recurrent state (gated delta rule)", state=self.heads * self.key_dim * self.value_dim)

    def saved(self, inputs, outputs, eager):
        """Its inputs, as a fused chunked kernel keeps them (flash-linear-attention's, which
        recomputes the states in backward)."""
        return keeps_inputs(inputs)

    def forward(self, run, q, k, v, g, beta):
        return gated_delta_rule(run.torch, q, k, v, g, beta, self)


def gated_delta_rule(torch, q, k, v, g, beta, rule: GatedDeltaRule, chunk: int = 64):
    """The recurrence of GatedDeltaRule on torch tensors, float32 inside, the input's dtype out: by
    chunks of `chunk` tokens as transformers' torch_chunk_gated_delta_rule (its default path, so the
    rounding is its): within a chunk the delta rule's writes are solved at once (a unit lower
    triangular system, the UT transform), between chunks the state carries on."""
    b, s = q.shape[0], q.shape[1]
    nv, dk, dv = rule.heads, rule.key_dim, rule.value_dim
    dtype = q.dtype
    q, k = (t.reshape(b, s, rule.n_key, dk).float() for t in (q, k))
    if rule.n_key != nv:
        q, k = (t.repeat_interleave(nv // rule.n_key, dim=2) for t in (q, k))
    if rule.qk_l2norm:
        q, k = (t * torch.rsqrt((t * t).sum(-1, keepdim=True) + 1e-6) for t in (q, k))
    q = q * (dk ** -0.5 if rule.scale is None else rule.scale)
    v = v.reshape(b, s, nv, dv).float()
    pad = (chunk - s % chunk) % chunk                                   # [B, heads, S + pad, ...] from here
    q, k, v = (torch.nn.functional.pad(t.transpose(1, 2), (0, 0, 0, pad)) for t in (q, k, v))
    g, beta = (torch.nn.functional.pad(t.float().transpose(1, 2), (0, pad)) for t in (g, beta))
    q, k, v, k_beta, v_beta = (t.reshape(b, nv, -1, chunk, t.shape[-1])
                               for t in (q, k, v, k * beta[..., None], v * beta[..., None]))
    g = g.reshape(b, nv, -1, chunk).cumsum(-1)                          # log-decay from the chunk's start
    future = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).triu(1)
    decay = (g[..., :, None] - g[..., None, :]).masked_fill(future, float("-inf")).exp()   # [.., i, j]: j to i
    system = (k_beta @ k.transpose(-1, -2)) * decay                   # the writes' interactions
    solve = lambda rhs: torch.linalg.solve_triangular(system, rhs, upper=False, unitriangular=True)  # noqa: E731
    written, k_decayed = solve(v_beta), solve(k_beta * g.exp()[..., None])
    inner = (q @ k.transpose(-1, -2)) * decay
    q, k = q * g.exp()[..., None], k * (g[..., -1:] - g).exp()[..., None]
    state = torch.zeros(b, nv, dk, dv, dtype=torch.float32, device=q.device)
    out = torch.zeros_like(written)
    for c in range(written.shape[2]):
        fresh = written[:, :, c] - k_decayed[:, :, c] @ state          # what the state does not yet predict
        out[:, :, c] = q[:, :, c] @ state + inner[:, :, c] @ fresh
        state = state * g[:, :, c, -1].exp()[..., None, None] + k[:, :, c].transpose(-1, -2) @ fresh
    return out.reshape(b, nv, -1, dv)[:, :, :s].transpose(1, 2).to(dtype)   # [B, S, heads, dv]
