"""A decoder with ALiBi (Press et al. 2022, "Train Short, Test Long") and GLU-variant feed-forward
layers (Shazeer 2020, "GLU Variants Improve Transformer": SwiGLU and GeGLU), as ofirpress/attention_with_linear_biases
and the papers' code write them: no position embedding; each head's scores get -slope x distance,
the slopes a geometric sequence from get_slopes (a non-persistent buffer), the causal mask a
masked_fill of -inf; the feed-forward of each layer act(x W) * (x V) then W2, alternating SwiGLU
and GeGLU from layer to layer; pre-norm LayerNorms without bias."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def get_slopes(n):
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]
    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (get_slopes_power_of_2(closest_power_of_2)
            + get_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2])


class ALiBiAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.register_buffer("slopes", torch.tensor(get_slopes(heads)).view(1, heads, 1, 1), persistent=False)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) * self.scale
        pos = torch.arange(n, device=x.device)
        distance = (pos[None, :] - pos[:, None]).abs()
        scores = scores - self.slopes * distance
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, -1)
        return self.out(out)


class GLU(nn.Module):
    def __init__(self, dim, hidden, activation):
        super().__init__()
        self.w = nn.Linear(dim, hidden, bias=False)
        self.v = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.activation = activation

    def forward(self, x):
        return self.w2(self.activation(self.w(x)) * self.v(x))


class Layer(nn.Module):
    def __init__(self, dim, heads, activation):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, bias=False)
        self.attn = ALiBiAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, bias=False)
        self.ff = GLU(dim, dim * 8 // 3, activation)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


class ALiBiGLU(nn.Module):
    def __init__(self, vocab=64, dim=24, heads=6, depth=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Layer(dim, heads, F.silu if i % 2 == 0 else F.gelu) for i in range(depth)])
        self.norm = nn.LayerNorm(dim, bias=False)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))
