"""A MaxViT block (Tu et al. 2022), as google-research/maxvit's and timm's maxxvit.py write it:
block attention over non-overlapping windows, then grid attention over a dilated grid, each with a
relative position bias gathered from a learned table by a precomputed int64 index buffer, pre-norm
and an MLP; windows made and undone by view/permute."""
from __future__ import annotations

import torch
from torch import nn


def window_partition(x, w):
    B, H, W, C = x.shape
    x = x.view(B, H // w, w, W // w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, w, w, C)


def window_reverse(windows, w, H, W):
    C = windows.shape[-1]
    x = windows.view(-1, H // w, W // w, w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C)


def grid_partition(x, g):
    B, H, W, C = x.shape
    x = x.view(B, g, H // g, g, W // g, C)
    return x.permute(0, 2, 4, 1, 3, 5).contiguous().view(-1, g, g, C)


def grid_reverse(windows, g, H, W):
    C = windows.shape[-1]
    x = windows.view(-1, H // g, W // g, g, g, C)
    return x.permute(0, 3, 1, 4, 2, 5).contiguous().view(-1, H, W, C)


def get_relative_position_index(win_h, win_w):
    coords = torch.stack(torch.meshgrid(torch.arange(win_h), torch.arange(win_w), indexing="ij"))
    coords_flatten = torch.flatten(coords, 1)
    relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
    relative_coords = relative_coords.permute(1, 2, 0).contiguous()
    relative_coords[:, :, 0] += win_h - 1
    relative_coords[:, :, 1] += win_w - 1
    relative_coords[:, :, 0] *= 2 * win_w - 1
    return relative_coords.sum(-1)


class RelPosAttention(nn.Module):
    def __init__(self, dim, window, heads=2):
        super().__init__()
        self.heads, self.window = heads, window
        self.scale = (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.relative_position_bias_table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        self.register_buffer("relative_position_index", get_relative_position_index(window, window), persistent=False)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).view(B, N, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(N, N, -1)
        attn = attn + bias.permute(2, 0, 1).unsqueeze(0)
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class PartitionAttention(nn.Module):
    def __init__(self, dim, window, grid):
        super().__init__()
        self.window, self.grid = window, grid
        self.norm1, self.attn = nn.LayerNorm(dim), RelPosAttention(dim, window)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def _attend(self, x):
        B, H, W, C = x.shape
        w = self.window
        parts = grid_partition(x, w) if self.grid else window_partition(x, w)
        parts = self.attn(parts.view(-1, w * w, C)).view(-1, w, w, C)
        return grid_reverse(parts, w, H, W) if self.grid else window_reverse(parts, w, H, W)

    def forward(self, x):
        x = x + self._attend(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class MaxViTBlock(nn.Module):
    def __init__(self, dim=16, window=4):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(dim, dim, 1), nn.BatchNorm2d(dim), nn.GELU(),
                                  nn.Conv2d(dim, dim, 3, padding=1, groups=dim), nn.GELU(), nn.Conv2d(dim, dim, 1))
        self.attn_block = PartitionAttention(dim, window, grid=False)
        self.attn_grid = PartitionAttention(dim, window, grid=True)

    def forward(self, x):  # B C H W
        x = x + self.conv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.attn_grid(self.attn_block(x))
        return x.permute(0, 3, 1, 2)
