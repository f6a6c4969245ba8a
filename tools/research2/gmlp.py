"""gMLP (Liu et al. 2021, "Pay Attention to MLPs"), as lucidrains/g-mlp-pytorch writes it: each
layer a channel projection, GELU, a spatial gating unit (half the channels normed and mixed across
positions by a causal (S x S) weight, masked with tril, plus a bias per position, multiplying the
other half), a channel projection back, residual; layers in an nn.Sequential of Residual(PreNorm)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn, self.norm = fn, nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x))


class SpatialGatingUnit(nn.Module):
    def __init__(self, dim, dim_seq, causal=True, init_eps=1e-3):
        super().__init__()
        dim_out = dim // 2
        self.causal = causal
        self.norm = nn.LayerNorm(dim_out)
        init_eps /= dim_seq
        self.weight = nn.Parameter(torch.zeros(dim_seq, dim_seq).uniform_(-init_eps, init_eps))
        self.bias = nn.Parameter(torch.ones(dim_seq))

    def forward(self, x):
        n = x.shape[1]
        res, gate = x.chunk(2, dim=-1)
        gate = self.norm(gate)
        weight, bias = self.weight, self.bias
        if self.causal:
            weight, bias = weight[:n, :n], bias[:n]
            mask = torch.ones(weight.shape[:2], device=x.device).triu_(1).bool()
            weight = weight.masked_fill(mask, 0.)
        gate = torch.einsum("b n d, m n -> b m d", gate, weight)
        gate = gate + bias[None, :, None]
        return gate * res


class GMLPBlock(nn.Module):
    def __init__(self, dim, dim_ff, seq_len):
        super().__init__()
        self.proj_in = nn.Sequential(nn.Linear(dim, dim_ff), nn.GELU())
        self.sgu = SpatialGatingUnit(dim_ff, seq_len)
        self.proj_out = nn.Linear(dim_ff // 2, dim)

    def forward(self, x):
        return self.proj_out(self.sgu(self.proj_in(x)))


class GMLP(nn.Module):
    def __init__(self, num_tokens=64, dim=16, depth=3, seq_len=12, ff_mult=4):
        super().__init__()
        self.to_embed = nn.Embedding(num_tokens, dim)
        self.layers = nn.Sequential(*[Residual(PreNorm(dim, GMLPBlock(dim, dim * ff_mult, seq_len)))
                                      for _ in range(depth)])
        self.to_logits = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_tokens))

    def forward(self, x):
        return self.to_logits(self.layers(self.to_embed(x)))
