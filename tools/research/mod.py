"""(4) Mixture-of-Depths (Raposo et al. 2024, arXiv:2404.02258): a nanoGPT-style decoder whose
every other block processes only the top k = S // 8 tokens of a router; x_i + r_i·f(x̃)_i on those
tokens (f the block's residual branches, r the router's weight), x_i elsewhere."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):  # nanoGPT
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class MoDBlock(nn.Module):
    """x_i + r_i·f(x̃)_i for the top-k tokens of the router (k = S // 8), x_i for the others."""

    def __init__(self, n_embd, n_head, capacity_divisor=8):
        super().__init__()
        self.capacity_divisor = capacity_divisor
        self.router = nn.Linear(n_embd, 1, bias=False)
        self.block = Block(n_embd, n_head)

    def forward(self, x):
        B, S, H = x.shape
        k = S // self.capacity_divisor
        weights = self.router(x).squeeze(-1)                   # [B, S]
        _, top = torch.topk(weights, k, dim=1, sorted=False)    # the k tokens this block processes
        top, _ = torch.sort(top, dim=1)                         # in sequence order: attention stays causal
        index = top.unsqueeze(-1).expand(-1, -1, H)             # [B, k, H]
        routed = torch.gather(x, 1, index)
        r = torch.gather(weights, 1, top).unsqueeze(-1)         # [B, k, 1]
        update = self.block(routed) - routed                    # f(x̃): the block's residual branches
        return torch.scatter_add(x, 1, index, update * r)


class MoDTransformer(nn.Module):
    def __init__(self, vocab=100, n_embd=64, n_head=4, n_layer=4, block_size=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([MoDBlock(n_embd, n_head) if i % 2 == 1 else Block(n_embd, n_head)
                                for i in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))
