"""Perceiver IO (Jaegle et al. 2021/22), as lucidrains/perceiver-pytorch's perceiver_io.py writes
it: a latent array cross-attends to the inputs (PreNorm with a context norm), latent self-attention
layers with GEGLU feed-forwards, and a decoder whose queries cross-attend to the latents; attention
is written eagerly (einsum, softmax, einsum) with an optional boolean mask filled with -finfo.max."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import einsum, nn


class PreNorm(nn.Module):
    def __init__(self, dim, fn, context_dim=None):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)
        self.norm_context = nn.LayerNorm(context_dim) if context_dim is not None else None

    def forward(self, x, **kwargs):
        x = self.norm(x)
        if self.norm_context is not None:
            kwargs.update(context=self.norm_context(kwargs["context"]))
        return self.fn(x, **kwargs)


class GEGLU(nn.Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim=-1)
        return x * F.gelu(gates)


class FeedForward(nn.Module):
    def __init__(self, dim, mult=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim * mult * 2), GEGLU(), nn.Linear(dim * mult, dim))

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, query_dim, context_dim=None, heads=2, dim_head=8):
        super().__init__()
        inner_dim = dim_head * heads
        context_dim = context_dim if context_dim is not None else query_dim
        self.scale, self.heads = dim_head ** -0.5, heads
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(context_dim, inner_dim * 2, bias=False)
        self.to_out = nn.Linear(inner_dim, query_dim)

    def forward(self, x, context=None, mask=None):
        h = self.heads
        q = self.to_q(x)
        context = context if context is not None else x
        k, v = self.to_kv(context).chunk(2, dim=-1)
        b = q.shape[0]
        q, k, v = (t.reshape(b, t.shape[1], h, -1).permute(0, 2, 1, 3).reshape(b * h, t.shape[1], -1)
                   for t in (q, k, v))
        sim = einsum("b i d, b j d -> b i j", q, k) * self.scale
        if mask is not None:
            mask = mask.reshape(mask.shape[0], -1)
            mask = mask[:, None, :].expand(-1, h, -1).reshape(b * h, 1, -1)
            sim.masked_fill_(~mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = einsum("b i j, b j d -> b i d", attn, v)
        out = out.reshape(b, h, out.shape[1], -1).permute(0, 2, 1, 3).reshape(b, out.shape[1], -1)
        return self.to_out(out)


class PerceiverIO(nn.Module):
    def __init__(self, dim=12, queries_dim=16, logits_dim=10, depth=2, num_latents=6, latent_dim=16):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))
        self.cross_attend_blocks = nn.ModuleList([
            PreNorm(latent_dim, Attention(latent_dim, dim, heads=1, dim_head=16), context_dim=dim),
            PreNorm(latent_dim, FeedForward(latent_dim))])
        self.layers = nn.ModuleList([nn.ModuleList([PreNorm(latent_dim, Attention(latent_dim)),
                                                    PreNorm(latent_dim, FeedForward(latent_dim))])
                                     for _ in range(depth)])
        self.decoder_cross_attn = PreNorm(queries_dim, Attention(queries_dim, latent_dim, heads=1, dim_head=16),
                                          context_dim=latent_dim)
        self.decoder_ff = PreNorm(queries_dim, FeedForward(queries_dim))
        self.to_logits = nn.Linear(queries_dim, logits_dim)

    def forward(self, data, queries):
        b = data.shape[0]
        mask = data.abs().sum(-1) > 0  # every position present here, as padding masks are in a full batch
        x = self.latents[None].expand(b, -1, -1)
        cross_attn, cross_ff = self.cross_attend_blocks
        x = cross_attn(x, context=data, mask=mask) + x
        x = cross_ff(x) + x
        for self_attn, self_ff in self.layers:
            x = self_attn(x) + x
            x = self_ff(x) + x
        latents = self.decoder_cross_attn(queries, context=x)
        latents = latents + self.decoder_ff(latents)
        return self.to_logits(latents)
