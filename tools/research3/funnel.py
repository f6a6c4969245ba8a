"""Funnel-Transformer (Dai et al. 2020), as its reference code (laiguokun/Funnel-Transformer, and
transformers' FunnelEncoder) writes the encoder: blocks of post-norm layers, and between blocks the
query-only pooling: the first layer of a block attends from the mean-pooled sequence (stride 2,
F.avg_pool1d, the CLS token kept apart) to the unpooled keys and values, so the sequence halves from
block to block; attention as nn.MultiheadAttention, the feed-forward GELU."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class FunnelLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, query, kv):
        x = self.norm1(query + self.attn(query, kv, kv, need_weights=False)[0])
        return self.norm2(x + self.ff(x))


def pool_tensor(x, stride=2):
    """Mean-pool the sequence, the first (CLS) token kept apart (transformers' separate_cls)."""
    cls, rest = x[:, :1], x[:, 1:]
    rest = F.avg_pool1d(rest.transpose(1, 2), kernel_size=stride, stride=stride, ceil_mode=True).transpose(1, 2)
    return torch.cat([cls, rest], dim=1)


class FunnelEncoder(nn.Module):
    def __init__(self, vocab=64, dim=16, heads=4, block_sizes=(2, 2, 2)):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.norm = nn.LayerNorm(dim)
        self.blocks = nn.ModuleList([nn.ModuleList([FunnelLayer(dim, heads) for _ in range(size)])
                                     for size in block_sizes])

    def forward(self, ids):
        x = self.norm(self.embed(ids))
        for b, block in enumerate(self.blocks):
            for i, layer in enumerate(block):
                query = pool_tensor(x) if b > 0 and i == 0 else x
                x = layer(query, x)
        return x
