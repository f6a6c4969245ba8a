"""The Forgetting Transformer (Lin et al. 2025, "Forgetting Transformer: Softmax Attention with a Forget
Gate") as its reference code's naive attention computes it (zhixuan-lin/forgetting-transformer, the
`forgetting_attention` reference beside its Triton kernel): each head's forget gate
f_t = sigmoid(w_f x_t + b_f), its logs summed along the sequence, and the score of query i and key j
offset by the sum of log f over (j, i] (the decay); causal softmax attention otherwise, pre-norm
blocks with a SwiGLU MLP, RMSNorm, no positions."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def forgetting_attention(q, k, v, log_fgate, scale):
    """q, k, v [B, H, T, D]; log_fgate [B, H, T]."""
    T = q.size(-2)
    log_lambda = torch.cumsum(log_fgate, dim=-1)
    decay_bias = log_lambda[..., :, None] - log_lambda[..., None, :]
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale + decay_bias
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class ForgettingAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.fgate_proj = nn.Linear(hidden_size, num_heads, bias=True)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = (p(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        log_fgate = F.logsigmoid(self.fgate_proj(x).float()).transpose(1, 2)   # [B, H, T]
        o = forgetting_attention(q, k, v, log_fgate, 1.0 / math.sqrt(self.head_dim))
        return self.o_proj(o.transpose(1, 2).reshape(B, T, -1))


class SwiGLU(nn.Module):
    def __init__(self, hidden_size, intermediate):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.attn_norm = nn.RMSNorm(hidden_size, eps=1e-6)
        self.attn = ForgettingAttention(hidden_size, num_heads)
        self.mlp_norm = nn.RMSNorm(hidden_size, eps=1e-6)
        self.mlp = SwiGLU(hidden_size, 4 * hidden_size)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class ForgettingTransformer(nn.Module):
    def __init__(self, vocab_size=64, hidden_size=32, num_heads=4, num_layers=3):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList([Block(hidden_size, num_heads) for _ in range(num_layers)])
        self.norm = nn.RMSNorm(hidden_size, eps=1e-6)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids):
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))
