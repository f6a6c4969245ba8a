"""CaiT (Touvron et al. 2021, "Going deeper with Image Transformers"), as facebookresearch/deit's
cait_models.py writes it: self-attention layers with talking heads (a linear mix of the heads'
logits before and after the softmax) and LayerScale (gamma_1, gamma_2 as bare parameters), then
class-attention layers in which only the class token attends to the patches, in a ModuleList of
another class."""
from __future__ import annotations

import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.act, self.fc2, self.drop = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim), nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class ClassAttn(nn.Module):
    def __init__(self, dim, num_heads=2, qkv_bias=True):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.q, self.k, self.v = (nn.Linear(dim, dim, bias=qkv_bias) for _ in range(3))
        self.attn_drop, self.proj, self.proj_drop = nn.Dropout(0.0), nn.Linear(dim, dim), nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        q = self.q(x[:, 0]).unsqueeze(1).reshape(B, 1, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        k = self.k(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        q = q * self.scale
        v = self.v(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        attn = (q @ k.transpose(-2, -1))
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x_cls = (attn @ v).transpose(1, 2).reshape(B, 1, C)
        return self.proj_drop(self.proj(x_cls))


class LayerScaleBlockCA(nn.Module):
    def __init__(self, dim, init_values=1e-4):
        super().__init__()
        self.norm1, self.attn, self.norm2 = nn.LayerNorm(dim, eps=1e-6), ClassAttn(dim), nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, 4 * dim)
        self.gamma_1 = nn.Parameter(init_values * torch.ones(dim))
        self.gamma_2 = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x, x_cls):
        u = torch.cat((x_cls, x), dim=1)
        x_cls = x_cls + self.gamma_1 * self.attn(self.norm1(u))
        return x_cls + self.gamma_2 * self.mlp(self.norm2(x_cls))


class TalkingHeadAttn(nn.Module):
    def __init__(self, dim, num_heads=2):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj, self.proj_l, self.proj_w = nn.Linear(dim, dim), nn.Linear(num_heads, num_heads), \
            nn.Linear(num_heads, num_heads)
        self.attn_drop, self.proj_drop = nn.Dropout(0.0), nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1))
        attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = attn.softmax(dim=-1)
        attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class LayerScaleBlock(nn.Module):
    def __init__(self, dim, init_values=1e-4):
        super().__init__()
        self.norm1, self.attn, self.norm2 = nn.LayerNorm(dim, eps=1e-6), TalkingHeadAttn(dim), nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, 4 * dim)
        self.gamma_1 = nn.Parameter(init_values * torch.ones(dim))
        self.gamma_2 = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        x = x + self.gamma_1 * self.attn(self.norm1(x))
        return x + self.gamma_2 * self.mlp(self.norm2(x))


class CaiT(nn.Module):
    def __init__(self, dim=16, depth=3, depth_token_only=2, patch=4, image=16, classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, (image // patch) ** 2, dim) * 0.02)
        self.pos_drop = nn.Dropout(p=0.0)
        self.blocks = nn.ModuleList([LayerScaleBlock(dim) for _ in range(depth)])
        self.blocks_token_only = nn.ModuleList([LayerScaleBlockCA(dim) for _ in range(depth_token_only)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        B = x.shape[0]
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = self.pos_drop(x + self.pos_embed)
        for blk in self.blocks:
            x = blk(x)
        for blk in self.blocks_token_only:
            cls_tokens = blk(x, cls_tokens)
        x = self.norm(torch.cat((cls_tokens, x), dim=1))
        return self.head(x[:, 0])
