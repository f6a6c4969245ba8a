"""Hyper-Connections (Zhu et al. 2024, "Hyper-Connections"), as the paper's Algorithm / PyTorch
listing writes them: the residual stream widened to n copies h [B, T, n, D]; before each branch (attention
or MLP) a learned width connection mixes the copies into the branch input and n carried streams,
alpha = static_alpha + tanh(norm(h) @ dynamic_alpha_fn) * dynamic_alpha_scale ([n, n + 1]); after it a
depth connection adds the branch output back to each stream, weighted by beta = static_beta +
tanh(norm(h) @ dynamic_beta_fn) * dynamic_beta_scale; the copies summed at the end. A pre-norm decoder
with causal self-attention (F.scaled_dot_product_attention) and a GELU MLP."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class HyperConnection(nn.Module):
    def __init__(self, dim, rate, layer_id, dynamic=True):
        super().__init__()
        self.rate, self.layer_id, self.dynamic = rate, layer_id, dynamic
        self.static_beta = nn.Parameter(torch.ones((rate,)))
        init_alpha0 = torch.zeros((rate, 1))
        init_alpha0[layer_id % rate, 0] = 1.0
        self.static_alpha = nn.Parameter(torch.cat([init_alpha0, torch.eye(rate)], dim=1))
        if dynamic:
            self.dynamic_alpha_fn = nn.Parameter(torch.randn((dim, rate + 1)) * 0.02)
            self.dynamic_alpha_scale = nn.Parameter(torch.ones(1) * 0.01)
            self.dynamic_beta_fn = nn.Parameter(torch.randn((dim,)) * 0.02)
            self.dynamic_beta_scale = nn.Parameter(torch.ones(1) * 0.01)
            self.layer_norm = nn.LayerNorm(dim)

    def width_connection(self, h):
        if self.dynamic:
            norm_h = self.layer_norm(h)
            wc_weight = torch.tanh(norm_h @ self.dynamic_alpha_fn) * self.dynamic_alpha_scale
            alpha = wc_weight + self.static_alpha[None, None, ...]
            dc_weight = torch.tanh(norm_h @ self.dynamic_beta_fn) * self.dynamic_beta_scale
            beta = dc_weight + self.static_beta[None, None, ...]
        else:
            alpha = self.static_alpha[None, None, ...]
            beta = self.static_beta[None, None, ...]
        mix_h = alpha.transpose(-1, -2) @ h            # [B, T, n + 1, D]
        return mix_h, beta

    def depth_connection(self, mix_h, h_o, beta):
        return torch.einsum("blh,bln->blnh", h_o, beta) + mix_h[..., 1:, :]


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.norm(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.norm(x))))


class Layer(nn.Module):
    def __init__(self, dim, n_heads, rate, layer_id):
        super().__init__()
        self.attn, self.mlp = Attention(dim, n_heads), MLP(dim)
        self.hc_attn = HyperConnection(dim, rate, 2 * layer_id)
        self.hc_mlp = HyperConnection(dim, rate, 2 * layer_id + 1)

    def forward(self, h):
        for branch, hc in ((self.attn, self.hc_attn), (self.mlp, self.hc_mlp)):
            mix_h, beta = hc.width_connection(h)
            h = hc.depth_connection(mix_h, branch(mix_h[..., 0, :]), beta)
        return h


class HyperConnectedLM(nn.Module):
    def __init__(self, vocab=64, dim=32, n_heads=4, n_layers=3, rate=4):
        super().__init__()
        self.rate = rate
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Layer(dim, n_heads, rate, i) for i in range(n_layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        h = x.unsqueeze(-2).expand(-1, -1, self.rate, -1)     # n copies of the stream
        for layer in self.layers:
            h = layer(h)
        return self.head(self.norm(h.sum(dim=-2)))
