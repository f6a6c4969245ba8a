"""Perceiver AR (Hawthorne et al. 2022, "General-purpose, long-context autoregressive modeling with
Perceiver AR"), as lucidrains/perceiver-ar-pytorch writes it: the last cross_attn_seq_len positions
are the latents; one causal cross-attention from them to the whole sequence (the prefix and the
latents themselves, the mask shifted so latent i sees every position up to its own), then causal
self-attention layers over the latents only; rotary positions on queries and keys (the sin/cos
table computed in forward from a non-persistent inv_freq buffer); logits for the latent positions."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import einsum, nn


class RotaryEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, max_seq_len, device):
        seq = torch.arange(max_seq_len, device=device, dtype=self.inv_freq.dtype)
        freqs = einsum("i, j -> i j", seq, self.inv_freq)
        return torch.cat((freqs, freqs), dim=-1)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(pos, t):
    seq_len, rotary_dim = t.shape[-2], pos.shape[-1]
    pos = pos[..., -seq_len:, :]
    t, t_pass = t[..., :rotary_dim], t[..., rotary_dim:]
    t = (t * pos.cos()) + (rotate_half(t) * pos.sin())
    return torch.cat((t, t_pass), dim=-1)


def feed_forward(dim, mult=4):
    return nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * mult, bias=False), nn.GELU(),
                         nn.Linear(dim * mult, dim, bias=False))


class CausalAttention(nn.Module):
    def __init__(self, dim, dim_head=8, heads=4):
        super().__init__()
        self.scale, self.heads = dim_head ** -0.5, heads
        inner = heads * dim_head
        self.norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, dim, bias=False)

    def forward(self, x, rotary_pos_emb=None):
        x = self.norm(x)
        q, k, v = self.to_q(x), *self.to_kv(x).chunk(2, dim=-1)
        b, n, _ = q.shape
        q, k, v = (t.view(b, -1, self.heads, t.shape[-1] // self.heads).transpose(1, 2) for t in (q, k, v))
        q = q * self.scale
        if rotary_pos_emb is not None:
            q, k = apply_rotary_pos_emb(rotary_pos_emb, q), apply_rotary_pos_emb(rotary_pos_emb, k)
        sim = einsum("b h i d, b h j d -> b h i j", q, k)
        i, j = sim.shape[-2:]
        causal_mask = torch.ones((i, j), device=x.device, dtype=torch.bool).triu(j - i + 1)
        sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = einsum("b h i j, b h j d -> b h i d", attn, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


class CausalPrefixAttention(nn.Module):
    def __init__(self, dim, dim_head=8, heads=4):
        super().__init__()
        self.scale, self.heads = dim_head ** -0.5, heads
        inner = heads * dim_head
        self.norm = nn.LayerNorm(dim)
        self.context_norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, dim, bias=False)

    def forward(self, x, context, rotary_pos_emb=None):
        x, context = self.norm(x), self.context_norm(context)
        context = torch.cat((context, x), dim=-2)  # the prefix, then the latents themselves
        q, k, v = self.to_q(x), *self.to_kv(context).chunk(2, dim=-1)
        b = q.shape[0]
        q, k, v = (t.view(b, -1, self.heads, t.shape[-1] // self.heads).transpose(1, 2) for t in (q, k, v))
        q = q * self.scale
        if rotary_pos_emb is not None:
            q, k = apply_rotary_pos_emb(rotary_pos_emb, q), apply_rotary_pos_emb(rotary_pos_emb, k)
        sim = einsum("b h i d, b h j d -> b h i j", q, k)
        i, j = sim.shape[-2:]
        causal_mask = torch.ones((i, j), device=x.device, dtype=torch.bool).triu(j - i + 1)
        sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = einsum("b h i j, b h j d -> b h i d", attn, v)
        return self.to_out(out.transpose(1, 2).reshape(b, i, -1))


class PerceiverAR(nn.Module):
    def __init__(self, num_tokens=64, dim=16, depth=3, max_seq_len=24, cross_attn_seq_len=8, heads=4):
        super().__init__()
        self.cross_attn_seq_len = cross_attn_seq_len
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.rotary_pos_emb = RotaryEmbedding(dim=8)
        self.perceive_layers = nn.ModuleList([CausalPrefixAttention(dim, heads=heads), feed_forward(dim)])
        self.layers = nn.ModuleList([nn.ModuleList([CausalAttention(dim, heads=heads), feed_forward(dim)])
                                     for _ in range(depth)])
        self.to_logits = nn.Linear(dim, num_tokens, bias=False)

    def forward(self, x):
        seq_len = x.shape[1]
        x = self.token_emb(x)
        x = x + self.pos_emb(torch.arange(seq_len, device=x.device))
        rotary_pos_emb = self.rotary_pos_emb(seq_len, device=x.device)
        prefix, x = x[:, :-self.cross_attn_seq_len], x[:, -self.cross_attn_seq_len:]
        cross_attn, ff = self.perceive_layers
        x = cross_attn(x, prefix, rotary_pos_emb=rotary_pos_emb) + x
        x = ff(x) + x
        for attn, ff in self.layers:
            x = attn(x, rotary_pos_emb=rotary_pos_emb) + x
            x = ff(x) + x
        return self.to_logits(x)
