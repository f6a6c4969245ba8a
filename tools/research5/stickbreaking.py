"""Stick-breaking attention (Tan et al. 2024, "Scaling Stick-Breaking Attention"), as the reference
implementation in its repository (shawntan/stickbreaking-attention, `sb_attn` in pure PyTorch) computes
it: each key j breaks off a share beta_ij = sigmoid(z_ij) of what the keys after it (closer to query i)
left; in log space log A_ij = logsigmoid(z_ij) + sum over j < k < i of logsigmoid(-z_ik), the sum a
reversed cumulative sum of the masked log(1 - beta); no positions (the order is the stick); the
remainder 1 - sum_j A_ij is given to the query's own value. Post-attention output projection, pre-norm
LayerNorm blocks with a GELU MLP."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def stickbreaking(q, k, v, scale):
    """q, k, v [B, H, T, D] -> [B, H, T, D]: each query over the keys strictly before it."""
    T = q.size(-2)
    logits = q @ k.transpose(-1, -2) * scale
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril(-1)   # j < i
    log_z = F.logsigmoid(logits).masked_fill(~mask, -1e5)
    log_beta = F.logsigmoid(-logits).masked_fill(~mask, 0.0)
    re_cum_log_beta = torch.flip(torch.cumsum(torch.flip(log_beta, [-1]), dim=-1), [-1]) - log_beta
    att = torch.exp(log_z + re_cum_log_beta)
    rem = 1 - att.sum(dim=-1, keepdim=True)
    return att @ v + rem * v


class StickBreakingAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        y = stickbreaking(q, k, v, 1.0 / math.sqrt(self.head_dim))
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = StickBreakingAttention(d_model, n_heads)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class StickBreakingLM(nn.Module):
    def __init__(self, vocab_size=64, d_model=32, n_heads=4, n_layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.h = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))
