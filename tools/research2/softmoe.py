"""Soft MoE (Puigcerver et al. 2024, "From Sparse to Soft Mixtures of Experts"), as
lucidrains/soft-moe-pytorch writes it: slot embeddings scored against the (RMS-normed) tokens,
dispatch weights a softmax over tokens and combine weights a softmax over slots, each expert an MLP
applied to its own slots (experts in a ModuleList, not chained), outputs mixed back to the tokens;
in a pre-norm transformer block with a plain self-attention."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import einsum, nn


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale, self.gamma = dim ** 0.5, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.normalize(x, dim=-1) * self.scale * self.gamma


class FeedForward(nn.Module):
    def __init__(self, dim, mult=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim * mult), nn.GELU(), nn.Linear(dim * mult, dim))

    def forward(self, x):
        return self.net(x)


class Experts(nn.Module):
    def __init__(self, experts):
        super().__init__()
        self.experts = nn.ModuleList(experts)

    def forward(self, x):  # (b, e, s, d)
        outs = [expert(x[:, i]) for i, expert in enumerate(self.experts)]
        return torch.stack(outs, dim=1)


class SoftMoE(nn.Module):
    def __init__(self, dim, num_experts=4, num_slots=2):
        super().__init__()
        self.norm, self.slot_norm = RMSNorm(dim), RMSNorm(dim)
        self.slot_embeds = nn.Parameter(torch.randn(num_experts, num_slots, dim))
        self.experts = Experts([FeedForward(dim) for _ in range(num_experts)])

    def forward(self, x):
        x = self.norm(x)
        slot_embeds = self.slot_norm(self.slot_embeds)
        logits = einsum("b n d, e s d -> b n e s", x, slot_embeds)
        dispatch_weights = logits.softmax(dim=1)
        b, n, e, s = logits.shape
        combine_weights = logits.reshape(b, n, e * s).softmax(dim=-1)
        slots = einsum("b n d, b n e s -> b e s d", x, dispatch_weights)
        out = self.experts(slots)
        out = out.reshape(b, e * s, -1)
        return einsum("b s d, b n s -> b n d", out, combine_weights)


class SoftMoELayer(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.moe = SoftMoE(dim)

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.moe(x)
