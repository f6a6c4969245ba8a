"""Based (Arora et al. 2024, "Simple linear attention language models balance the recall-throughput
tradeoff") as HazyResearch/based writes its mixers (based/models/mixers/linear_attention.py, its
einops rearrange as a reshape): linear attention through the 2nd-order Taylor feature map
(1, x / d^(1/4), (x outer x) / sqrt(2 d), the outer product flattened; `x[..., :1] ** 0` its
ones), causal by cumulative sums of the keys-times-values outer products; layers of three kinds in
turn: a gated short convolution (BaseConv), the linear attention, and sliding-window softmax
attention (a window mask given to F.scaled_dot_product_attention); pre-norm residual blocks with
a SwiGLU MLP."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class TaylorExp(nn.Module):
    """Feature map to compute 2nd-order Taylor approx. of exp(q^T k / sqrt(d))"""

    def __init__(self, input_dim):
        super().__init__()
        self.input_dim = input_dim
        self.r2 = math.sqrt(2)
        self.rd = math.sqrt(input_dim)
        self.rrd = math.sqrt(self.rd)

    def forward(self, x):
        # Get 2nd-order terms (rearrange(x * x), '... m n -> ... (m n)')
        x2 = (x.unsqueeze(-1) * x.unsqueeze(-2)).flatten(start_dim=-2) / self.r2
        return torch.cat([x[..., :1] ** 0, x / self.rrd, x2 / self.rd], dim=-1)


class LinearAttention(nn.Module):
    def __init__(self, d_model, feature_dim=4, num_key_value_heads=2, num_heads=2, eps=1e-12):
        super().__init__()
        self.d_model, self.feature_dim, self.eps = d_model, feature_dim, eps
        self.num_heads, self.num_key_value_heads = num_heads, num_key_value_heads
        self.head_dim = self.d_model // self.num_key_value_heads
        self.feature_map = TaylorExp(feature_dim)
        self.proj_q = nn.Linear(self.d_model, self.feature_dim * self.num_heads, bias=False)
        self.proj_k = nn.Linear(self.d_model, self.feature_dim * self.num_heads, bias=False)
        self.proj_v = nn.Linear(self.d_model, self.num_key_value_heads * self.head_dim, bias=False)
        self.out_proj = nn.Linear(self.num_heads * self.head_dim, self.d_model, bias=False)

    def forward(self, hidden_states):
        b, l, _ = hidden_states.size()
        q, k, v = self.proj_q(hidden_states), self.proj_k(hidden_states), self.proj_v(hidden_states)
        q = q.view(b, l, self.num_heads, self.feature_dim).transpose(1, 2)
        k = k.view(b, l, self.num_key_value_heads, self.feature_dim).transpose(1, 2)
        v = v.view(b, l, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        # Linear attention
        q, k = self.feature_map(q), self.feature_map(k)
        q, k, v = q.unsqueeze(-2), k.unsqueeze(-2), v.unsqueeze(-1)
        # Compute attention
        y = ((q * (k * v).cumsum(dim=2)).sum(dim=-1) / ((q * k.cumsum(dim=2)).sum(dim=-1) + self.eps))
        y = y.transpose(1, 2).reshape(b, l, -1)  # rearrange(y, 'b h l d -> b l (h d)')
        return self.out_proj(y.to(hidden_states.dtype))


class ShortConvolution(nn.Module):
    def __init__(self, d_model, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(d_model, d_model, kernel_size, groups=d_model, padding=kernel_size - 1)

    def forward(self, x):
        l = x.size(1)  # noqa: E741
        return self.conv(x.transpose(1, 2))[..., :l].transpose(1, 2)


class BaseConv(nn.Module):
    def __init__(self, d_model, kernel_size=3):
        super().__init__()
        self.in_proj = nn.Linear(d_model, d_model)
        self.conv = ShortConvolution(d_model, kernel_size)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, u):
        return self.out_proj(self.in_proj(u) * self.conv(u))


class SlidingWindowAttention(nn.Module):
    def __init__(self, d_model, num_heads=2, window_size=4):
        super().__init__()
        self.num_heads, self.window_size = num_heads, window_size
        self.Wqkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, l, d = x.shape
        q, k, v = self.Wqkv(x).view(b, l, 3, self.num_heads, d // self.num_heads).permute(2, 0, 3, 1, 4).unbind(0)
        i = torch.arange(l, device=x.device)
        mask = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < self.window_size)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out_proj(y.transpose(1, 2).reshape(b, l, d))


class Block(nn.Module):
    def __init__(self, d_model, mixer):
        super().__init__()
        self.norm1 = nn.RMSNorm(d_model)
        self.mixer = mixer
        self.norm2 = nn.RMSNorm(d_model)
        self.fc1 = nn.Linear(d_model, 4 * d_model, bias=False)
        self.fc2 = nn.Linear(2 * d_model, d_model, bias=False)

    def forward(self, x):
        x = x + self.mixer(self.norm1(x))
        y, gate = self.fc1(self.norm2(x)).chunk(2, dim=-1)
        return x + self.fc2(y * F.silu(gate))


class BasedLM(nn.Module):
    def __init__(self, vocab=64, d_model=16, n_layer=6):
        super().__init__()
        mixers = (lambda: BaseConv(d_model), lambda: LinearAttention(d_model), lambda: SlidingWindowAttention(d_model))
        self.embeddings = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList([Block(d_model, mixers[i % 3]()) for i in range(n_layer)])
        self.ln_f = nn.RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.embeddings.weight

    def forward(self, input_ids):
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_f(x))
