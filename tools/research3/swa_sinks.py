"""Sliding-window attention with attention sinks (Xiao et al. 2024, "Efficient Streaming Language
Models with Attention Sinks"; the window as Mistral's): each query sees the last `window` positions
and the first `sinks` tokens, the mask built from position comparisons (and_masks/or_masks as
transformers composes them: causal and (within the window or a sink)) and given to
F.scaled_dot_product_attention as a boolean attn_mask; grouped key/value heads repeated with
repeat_interleave; RMSNorm as nn.RMSNorm; a SwiGLU MLP."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def sink_window_mask(n, window, sinks, device=None):
    q = torch.arange(n, device=device)[:, None]
    k = torch.arange(n, device=device)[None, :]
    causal = k <= q
    in_window = (q - k) < window
    sink = k < sinks
    return causal & (in_window | sink)


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads, window, sinks):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.window, self.sinks = window, sinks
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        mask = sink_window_mask(n, self.window, self.sinks, device=x.device)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, dim, heads, kv_heads, window, sinks):
        super().__init__()
        self.input_layernorm = nn.RMSNorm(dim, eps=1e-6)
        self.self_attn = Attention(dim, heads, kv_heads, window, sinks)
        self.post_attention_layernorm = nn.RMSNorm(dim, eps=1e-6)
        self.mlp = MLP(dim, dim * 3)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class SinkWindowLM(nn.Module):
    def __init__(self, vocab=64, dim=16, heads=4, kv_heads=2, depth=3, window=4, sinks=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim, heads, kv_heads, window, sinks) for _ in range(depth)])
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))
