"""DeltaNet (Yang et al. 2024, "Parallelizing Linear Transformers with the Delta Rule over Sequence
Length") as flash-linear-attention's naive reference writes it (fla/ops/delta_rule/naive.py,
delta_rule_chunkwise; its einops rearranges as reshapes): the sequence cut into chunks, the UT
transform's inverse (I - tril(diag(beta) K K^T))^-1 built row by row by a loop writing into
`attn[..., i, :i]`, then a loop over the chunks carrying the state S and writing each chunk's output
into a preallocated `o[:, :, i]`.  The layer as fla's DeltaNet: q, k, v projections through short
causal depthwise convolutions and SiLU, q and k L2-normalised (F.normalize), beta = sigmoid(b_proj),
a per-head RMSNorm before o_proj; pre-norm residual layers with a SwiGLU MLP."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def delta_rule_chunkwise(q, k, v, beta, chunk_size=4):
    b, h, l, d_k = q.shape
    d_v = v.shape[-1]
    q = q * (d_k ** -0.5)
    v = v * beta[..., None]
    k_beta = k * beta[..., None]
    assert l % chunk_size == 0
    # compute (I - tri(diag(beta) KK^T))^{-1}
    mask = torch.triu(torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=q.device), diagonal=0)
    q, k, v, k_beta = (x.reshape(b, h, l // chunk_size, chunk_size, x.shape[-1]) for x in (q, k, v, k_beta))
    attn = -(k_beta @ k.transpose(-1, -2)).masked_fill(mask, 0)
    for i in range(1, chunk_size):
        attn[..., i, :i] = attn[..., i, :i] + (attn[..., i, :, None].clone() * attn[..., :, :i].clone()).sum(-2)
    attn = attn + torch.eye(chunk_size, dtype=torch.float, device=q.device)
    u = attn @ v
    w = attn @ k_beta
    S = k.new_zeros(b, h, d_k, d_v)
    o = torch.zeros_like(v)
    mask = torch.triu(torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=q.device), diagonal=1)
    for i in range(0, l // chunk_size):
        q_i, k_i = q[:, :, i], k[:, :, i]
        attn = (q_i @ k_i.transpose(-1, -2)).masked_fill_(mask, 0)
        u_i = u[:, :, i] - w[:, :, i] @ S
        o_inter = q_i @ S
        o[:, :, i] = o_inter + attn @ u_i
        S = S + k_i.transpose(-1, -2) @ u_i
    return o.reshape(b, h, l, d_v), S


class ShortConvolution(nn.Conv1d):
    """fla's ShortConvolution without its cache: a causal depthwise conv over [B, T, D], then SiLU."""

    def __init__(self, hidden_size, kernel_size=4):
        super().__init__(hidden_size, hidden_size, kernel_size, groups=hidden_size, padding=kernel_size - 1,
                         bias=False)

    def forward(self, x):
        t = x.shape[1]
        return F.silu(super().forward(x.transpose(1, 2))[..., :t].transpose(1, 2))


class DeltaNetAttention(nn.Module):
    def __init__(self, hidden_size=32, num_heads=2, chunk_size=4):
        super().__init__()
        self.num_heads, self.head_dim, self.chunk_size = num_heads, hidden_size // num_heads, chunk_size
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.b_proj = nn.Linear(hidden_size, num_heads, bias=False)
        self.q_conv1d = ShortConvolution(hidden_size)
        self.k_conv1d = ShortConvolution(hidden_size)
        self.v_conv1d = ShortConvolution(hidden_size)
        self.o_norm = nn.RMSNorm(self.head_dim, eps=1e-5)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_conv1d(self.q_proj(x)).view(b, t, self.num_heads, self.head_dim)
        k = self.k_conv1d(self.k_proj(x)).view(b, t, self.num_heads, self.head_dim)
        v = self.v_conv1d(self.v_proj(x)).view(b, t, self.num_heads, self.head_dim)
        q, k = F.normalize(q, p=2, dim=-1), F.normalize(k, p=2, dim=-1)
        beta = self.b_proj(x).sigmoid()  # [B, T, H]
        o, _ = delta_rule_chunkwise(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                    beta.transpose(1, 2), self.chunk_size)
        o = self.o_norm(o.transpose(1, 2))  # [B, T, H, D]
        return self.o_proj(o.reshape(b, t, -1))


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DeltaNetBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn_norm = nn.RMSNorm(dim, eps=1e-5)
        self.attn = DeltaNetAttention(dim)
        self.mlp_norm = nn.RMSNorm(dim, eps=1e-5)
        self.mlp = SwiGLU(dim, 64)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class DeltaNet(nn.Module):
    def __init__(self, vocab=64, dim=32, n_layers=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([DeltaNetBlock(dim) for _ in range(n_layers)])
        self.norm = nn.RMSNorm(dim, eps=1e-5)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids):
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))
