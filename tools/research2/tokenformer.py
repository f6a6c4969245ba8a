"""Tokenformer (Wang et al. 2024/25, "Rethinking Transformer Scaling with Tokenized Model
Parameters"), as Haiyang-W/TokenFormer's pattention writes it: every projection is attention from
the input tokens to learned key and value parameter tokens, scored with the modified softmax
(scores scaled by sqrt of their count after an L2 normalisation over the key tokens, then GELU);
layers are token-token attention (causal sdpa) and a Pattention feed-forward."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class Pattention(nn.Module):
    def __init__(self, dim_in, dim_out, param_tokens):
        super().__init__()
        self.key_param_tokens = nn.Parameter(torch.randn(param_tokens, dim_in) * 0.02)
        self.value_param_tokens = nn.Parameter(torch.randn(param_tokens, dim_out) * 0.02)

    def nonlinear_norm_func(self, inputs, normalize_type="gelu_l2_norm", dim=-1):
        norm_outputs = inputs / torch.norm(inputs, p=2, dim=dim, keepdim=True) * math.sqrt(inputs.shape[dim])
        return F.gelu(norm_outputs)

    def forward(self, inputs):
        attn_weight = inputs @ self.key_param_tokens.transpose(-2, -1)
        attn_weight = self.nonlinear_norm_func(attn_weight)
        return attn_weight @ self.value_param_tokens


class Layer(nn.Module):
    def __init__(self, dim, heads, tokens):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.query, self.key, self.value, self.o_proj = (Pattention(dim, dim, tokens) for _ in range(4))
        self.ffn = Pattention(dim, dim, 2 * tokens)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln1(x)
        q, k, v = (p(h).view(b, s, self.heads, -1).transpose(1, 2) for p in (self.query, self.key, self.value))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
        x = x + self.o_proj(a)
        return x + self.ffn(self.ln2(x))


class Tokenformer(nn.Module):
    def __init__(self, vocab=64, dim=16, heads=2, depth=2, tokens=12):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Layer(dim, heads, tokens) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = Pattention(dim, vocab, tokens)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))
