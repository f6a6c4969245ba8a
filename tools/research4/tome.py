"""Token Merging (Bolya et al. 2023, "Token Merging: Your ViT But Faster") as facebookresearch/ToMe
writes it (tome/merge.py, tome/patch/timm.py) on a small ViT: each block's keys, averaged over the
heads, are the metric of a bipartite soft matching (alternate tokens, cosine scores, the class token
protected by -inf, `argsort` of each token's best score, `gather` of the r most similar and
`scatter_reduce` of them into their matches), merged as weighted averages by the tokens' sizes, and
attention proportional to the sizes (log size added to the scores); r tokens fewer after each
block."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def do_nothing(x, mode=None):
    return x


def bipartite_soft_matching(metric, r, class_token=False, distill_token=False):
    protected = 0
    if class_token:
        protected += 1
    if distill_token:
        protected += 1
    # We can only reduce by a maximum of 50% tokens
    t = metric.shape[1]
    r = min(r, (t - protected) // 2)
    if r <= 0:
        return do_nothing, do_nothing
    with torch.no_grad():
        metric = metric / metric.norm(dim=-1, keepdim=True)
        a, b = metric[..., ::2, :], metric[..., 1::2, :]
        scores = a @ b.transpose(-1, -2)
        if class_token:
            scores[..., 0, :] = -math.inf
        if distill_token:
            scores[..., :, 0] = -math.inf
        node_max, node_idx = scores.max(dim=-1)
        edge_idx = node_max.argsort(dim=-1, descending=True)[..., None]
        unm_idx = edge_idx[..., r:, :]  # Unmerged Tokens
        src_idx = edge_idx[..., :r, :]  # Merged Tokens
        dst_idx = node_idx[..., None].gather(dim=-2, index=src_idx)
        if class_token:
            # Sort to ensure the class token is at the start
            unm_idx = unm_idx.sort(dim=1)[0]

    def merge(x, mode="mean"):
        src, dst = x[..., ::2, :], x[..., 1::2, :]
        n, t1, c = src.shape
        unm = src.gather(dim=-2, index=unm_idx.expand(n, t1 - r, c))
        src = src.gather(dim=-2, index=src_idx.expand(n, r, c))
        dst = dst.scatter_reduce(-2, dst_idx.expand(n, r, c), src, reduce=mode)
        if distill_token:
            return torch.cat([unm[:, :1], dst[:, :1], unm[:, 1:], dst[:, 1:]], dim=1)
        return torch.cat([unm, dst], dim=1)

    return merge, None


def merge_wavg(merge, x, size=None):
    if size is None:
        size = torch.ones_like(x[..., 0, None])
    x = merge(x * size, mode="sum")
    size = merge(size, mode="sum")
    x = x / size
    return x, size


class ToMeAttention(nn.Module):
    def __init__(self, dim, num_heads=2):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, size=None):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        if size is not None:  # Apply proportional attention
            attn = attn + size.log()[:, None, None, :, 0]
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        return x, k.mean(1)  # Return k as well here


class ToMeBlock(nn.Module):
    def __init__(self, dim, r):
        super().__init__()
        self.r = r
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = ToMeAttention(dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, size):
        x_attn, metric = self.attn(self.norm1(x), size)
        x = x + x_attn
        merge, _ = bipartite_soft_matching(metric, self.r, class_token=True)
        x, size = merge_wavg(merge, x, size)
        x = x + self.mlp(self.norm2(x))
        return x, size


class ToMeViT(nn.Module):
    def __init__(self, image_size=16, patch=4, dim=32, depth=3, r=3, classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, (image_size // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.ModuleList([ToMeBlock(dim, r) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        size = None
        for block in self.blocks:
            x, size = block(x, size)
        return self.head(self.norm(x)[:, 0])
