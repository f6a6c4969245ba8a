"""(5) The Hyena operator of order 2, as HazyResearch/safari's standalone_hyena.py writes it (einops'
rearrange written as reshape/permute): in-projection, a short depthwise causal convolution, an
implicit long filter that a small MLP with sine activations makes from positional features,
exponentially modulated, applied by FFT convolution, and multiplicative gating."""
from __future__ import annotations

import math

import torch
from torch import nn


def fftconv(u, k, D):
    seqlen = u.shape[-1]
    fft_size = 2 * seqlen
    k_f = torch.fft.rfft(k, n=fft_size) / fft_size
    u_f = torch.fft.rfft(u.to(dtype=k.dtype), n=fft_size)
    if len(u.shape) > 3:
        k_f = k_f.unsqueeze(1)
    y = torch.fft.irfft(u_f * k_f, n=fft_size, norm="forward")[..., :seqlen]
    out = y + u * D.unsqueeze(-1)
    return out.to(dtype=u.dtype)


class OptimModule(nn.Module):
    def register(self, name, tensor, lr=None):
        """A buffer when lr is 0, else a parameter (safari keeps its optimizer settings on it)."""
        if lr == 0.0:
            self.register_buffer(name, tensor)
        else:
            self.register_parameter(name, nn.Parameter(tensor))


class Sin(nn.Module):
    def __init__(self, dim, w=10, train_freq=True):
        super().__init__()
        self.freq = nn.Parameter(w * torch.ones(1, dim)) if train_freq else w * torch.ones(1, dim)

    def forward(self, x):
        return torch.sin(self.freq * x)


class PositionalEmbedding(OptimModule):
    def __init__(self, emb_dim, seq_len, lr_pos_emb=1e-5):
        super().__init__()
        t = torch.linspace(0, 1, seq_len)[None, :, None]  # 1, L, 1
        bands = (emb_dim - 1) // 2
        t_rescaled = torch.linspace(0, seq_len - 1, seq_len)[None, :, None]
        w = 2 * math.pi * t_rescaled / seq_len
        f = torch.linspace(1e-4, bands - 1, bands)[None, None]
        z = torch.exp(-1j * f * w)
        z = torch.cat([t, z.real, z.imag], dim=-1)
        self.register("z", z, lr=lr_pos_emb)
        self.register("t", t, lr=0.0)

    def forward(self, L):
        return self.z[:, :L], self.t[:, :L]


class ExponentialModulation(OptimModule):
    def __init__(self, d_model, fast_decay_pct=0.3, slow_decay_pct=1.5, target=1e-2, modulation_lr=0.0,
                 shift=0.0):
        super().__init__()
        self.shift = shift
        max_decay = math.log(target) / fast_decay_pct
        min_decay = math.log(target) / slow_decay_pct
        deltas = torch.linspace(min_decay, max_decay, d_model)[None, None]
        self.register("deltas", deltas, lr=modulation_lr)

    def forward(self, t, x):
        decay = torch.exp(-t * self.deltas.abs())
        return x * (decay + self.shift)


class HyenaFilter(OptimModule):
    def __init__(self, d_model, emb_dim=3, order=16, seq_len=1024, lr_pos_emb=1e-5, w=1, num_inner_mlps=2):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(d_model))
        act = Sin(dim=order, w=w)  # one module, so one `freq` shared by every activation
        self.pos_emb = PositionalEmbedding(emb_dim, seq_len, lr_pos_emb)
        self.implicit_filter = nn.Sequential(nn.Linear(emb_dim, order), act)
        for _ in range(num_inner_mlps):
            self.implicit_filter.append(nn.Linear(order, order))
            self.implicit_filter.append(act)
        self.implicit_filter.append(nn.Linear(order, d_model, bias=False))
        self.modulation = ExponentialModulation(d_model)

    def filter(self, L):
        z, t = self.pos_emb(L)
        h = self.implicit_filter(z)
        return self.modulation(t, h)

    def forward(self, x, L, k, bias):
        return fftconv(x, k, bias)


class HyenaOperator(nn.Module):
    def __init__(self, d_model=32, l_max=64, order=2, filter_order=16):
        super().__init__()
        self.d_model, self.l_max, self.order = d_model, l_max, order
        inner_width = d_model * (order + 1)
        self.in_proj = nn.Linear(d_model, inner_width)
        self.out_proj = nn.Linear(d_model, d_model)
        self.short_filter = nn.Conv1d(inner_width, inner_width, 3, padding=2, groups=inner_width)
        self.filter_fn = HyenaFilter(d_model * (order - 1), order=filter_order, seq_len=l_max)

    def forward(self, u):
        l = u.size(-2)
        l_filter = min(l, self.l_max)
        u = self.in_proj(u).permute(0, 2, 1)                       # b l d -> b d l
        uc = self.short_filter(u)[..., :l_filter]
        *x, v = uc.split(self.d_model, dim=1)
        k = self.filter_fn.filter(l_filter)[0]                      # [l, (o d)]
        k = k.reshape(l_filter, self.order - 1, self.d_model).permute(1, 2, 0)  # l (o d) -> o d l
        bias = self.filter_fn.bias.reshape(self.order - 1, self.d_model)       # (o d) -> o d
        for o, x_i in enumerate(reversed(x[1:])):
            v = v * x_i
            v = self.filter_fn(v, l_filter, k=k[o], bias=bias[o])
        y = (v * x[0]).permute(0, 2, 1)                             # b d l -> b l d
        return self.out_proj(y)
