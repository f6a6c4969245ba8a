"""Mamba-2 (Dao and Gu 2024) with its state-space duality computed in pure PyTorch, as
state-spaces/mamba's ssd_minimal.py (`segsum`, `ssd_minimal_discrete`, einsum throughout) and
mamba2-minimal's Mamba2 block write it: one input projection split into z, xBC and dt, a causal
depthwise convolution, the chunked SSD scan, a gated RMSNorm and the output projection."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def segsum(x):
    """Stable segment sum: exp(segsum(A)) is the 1-semiseparable decay matrix."""
    T = x.size(-1)
    x = x[..., None].repeat(*([1] * x.dim()), T)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)
    x = x.masked_fill(~mask, 0)
    x_segsum = torch.cumsum(x, dim=-2)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=0)
    return x_segsum.masked_fill(~mask, -torch.inf)


def ssd_minimal_discrete(X, A, B, C, block_len):
    """X (b, l, h, p), A (b, l, h), B and C (b, l, h, n); l a multiple of block_len."""
    b, l, h, p = X.shape
    c = l // block_len
    X, A, B, C = [z.reshape(b, c, block_len, *z.shape[2:]) for z in (X, A, B, C)]
    A = A.permute(0, 3, 1, 2)                                   # b h c l
    A_cumsum = torch.cumsum(A, dim=-1)
    L = torch.exp(segsum(A))
    Y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C, B, L, X)
    decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, decay_states, X)
    initial_states = torch.zeros_like(states[:, :1])
    states = torch.cat([initial_states, states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
    new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    states = new_states[:, :-1]
    state_decay_out = torch.exp(A_cumsum)
    Y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", C, states, state_decay_out)
    Y = Y_diag + Y_off
    return Y.reshape(b, l, h, p)


class RMSNormGated(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x, z):
        x = x * F.silu(z)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Mamba2(nn.Module):
    def __init__(self, d_model=16, d_state=8, d_conv=4, expand=2, headdim=8, chunk_size=4):
        super().__init__()
        self.d_inner = expand * d_model
        self.nheads, self.headdim, self.d_state, self.chunk_size = self.d_inner // headdim, headdim, d_state, chunk_size
        d_in_proj = 2 * self.d_inner + 2 * d_state + self.nheads
        self.in_proj = nn.Linear(d_model, d_in_proj, bias=False)
        conv_dim = self.d_inner + 2 * d_state
        self.conv1d = nn.Conv1d(conv_dim, conv_dim, d_conv, groups=conv_dim, padding=d_conv - 1)
        self.dt_bias = nn.Parameter(torch.rand(self.nheads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.nheads + 1).float()))
        self.D = nn.Parameter(torch.ones(self.nheads))
        self.norm = RMSNormGated(self.d_inner)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    def forward(self, u):
        b, l, _ = u.shape
        A = -torch.exp(self.A_log)
        zxbcdt = self.in_proj(u)
        z, xBC, dt = torch.split(zxbcdt, [self.d_inner, self.d_inner + 2 * self.d_state, self.nheads], dim=-1)
        dt = F.softplus(dt + self.dt_bias)
        xBC = F.silu(self.conv1d(xBC.transpose(1, 2)).transpose(1, 2)[:, :l, :])
        x, B, C = torch.split(xBC, [self.d_inner, self.d_state, self.d_state], dim=-1)
        x = x.reshape(b, l, self.nheads, self.headdim)
        B = B[:, :, None, :].expand(b, l, self.nheads, self.d_state)
        C = C[:, :, None, :].expand(b, l, self.nheads, self.d_state)
        y = ssd_minimal_discrete(x * dt.unsqueeze(-1), A * dt, B, C, self.chunk_size)
        y = y + x * self.D.unsqueeze(-1)
        y = y.reshape(b, l, self.d_inner)
        return self.out_proj(self.norm(y, z))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Mamba2LM(nn.Module):
    def __init__(self, vocab=64, d_model=16, n_layer=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList([nn.ModuleDict(dict(mixer=Mamba2(d_model), norm=RMSNorm(d_model)))
                                     for _ in range(n_layer)])
        self.norm_f = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.embedding.weight

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer.mixer(layer.norm(x)) + x
        return self.lm_head(self.norm_f(x))
