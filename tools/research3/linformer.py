"""Linformer (Wang et al. 2020, "Self-Attention with Linear Complexity"), as lucidrains/linformer
writes it: keys and values projected along the sequence from seq_len to k by learned (seq_len x k)
matrices (shared between keys and values when share_kv), the sequence at most seq_len and the
projections cut to it; attention softmax(q kᵀ / sqrt(d)) v over the k projected positions; layers of
PreNorm attention and feed-forward in a ModuleList."""
from __future__ import annotations

import math

import torch
from torch import nn


def init_(tensor):
    dim = tensor.shape[-1]
    std = 1 / math.sqrt(dim)
    tensor.uniform_(-std, std)
    return tensor


class LinformerSelfAttention(nn.Module):
    def __init__(self, dim, seq_len, k=8, heads=4, dim_head=None, one_kv_head=False, share_kv=False):
        super().__init__()
        self.seq_len, self.k, self.heads = seq_len, k, heads
        dim_head = dim_head or dim // heads
        self.dim_head = dim_head
        self.to_q = nn.Linear(dim, dim_head * heads, bias=False)
        kv_dim = dim_head if one_kv_head else dim_head * heads
        self.to_k = nn.Linear(dim, kv_dim, bias=False)
        self.proj_k = nn.Parameter(init_(torch.zeros(seq_len, k)))
        self.share_kv = share_kv
        if not share_kv:
            self.to_v = nn.Linear(dim, kv_dim, bias=False)
            self.proj_v = nn.Parameter(init_(torch.zeros(seq_len, k)))
        self.to_out = nn.Linear(dim_head * heads, dim)

    def forward(self, x):
        b, n, d, d_h, h, k = *x.shape, self.dim_head, self.heads, self.k
        assert n <= self.seq_len, f"the sequence length {n} must be at most {self.seq_len}"
        queries = self.to_q(x)
        proj_seq_len = lambda args: torch.einsum("bnd,nk->bkd", *args)  # noqa: E731
        keys = self.to_k(x)
        values = self.to_v(x) if not self.share_kv else keys
        kv_projs = (self.proj_k, self.proj_v if not self.share_kv else self.proj_k)
        kv_projs = map(lambda t: t[:n], kv_projs)
        keys, values = map(proj_seq_len, zip((keys, values), kv_projs))
        queries = queries.reshape(b, n, h, -1).transpose(1, 2)
        merge_key_values = lambda t: t.reshape(b, k, -1, d_h).transpose(1, 2).expand(-1, h, -1, -1)  # noqa: E731
        keys, values = map(merge_key_values, (keys, values))
        dots = torch.einsum("bhnd,bhkd->bhnk", queries, keys) * (d_h ** -0.5)
        attn = dots.softmax(dim=-1)
        out = torch.einsum("bhnk,bhkd->bhnd", attn, values)
        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn, self.norm = fn, nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x))


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4):
        super().__init__()
        self.w1, self.act, self.w2 = nn.Linear(dim, dim * mult), nn.GELU(), nn.Linear(dim * mult, dim)

    def forward(self, x):
        return self.w2(self.act(self.w1(x)))


class Linformer(nn.Module):
    def __init__(self, dim=16, seq_len=12, depth=3, k=6, heads=4, share_kv=False):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([
            PreNorm(dim, LinformerSelfAttention(dim, seq_len, k, heads, share_kv=share_kv)),
            PreNorm(dim, FeedForward(dim))]) for _ in range(depth)])

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return x
