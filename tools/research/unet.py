"""(7) A diffusion U-Net in the DDPM / ADM style (Ho et al. 2020; Dhariwal & Nichol 2021; module
names as diffusers' ResnetBlock2D): sinusoidal time features and an MLP, ResBlocks of GroupNorm,
SiLU and 3x3 convs with the time projection added per channel, a 1x1 shortcut only where the
channels change, stride-2 conv downsampling, nearest upsampling then a conv, skip connections
concatenated, and a self-attention block at the lowest resolution."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def timestep_embedding(timesteps, dim):  # DDPM's get_timestep_embedding
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    emb = timesteps.float()[:, None] * emb[None, :]
    return torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)


class ResBlock(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels, groups=8):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.conv_shortcut = nn.Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else None

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return (self.conv_shortcut(x) if self.conv_shortcut is not None else x) + h


class AttnBlock(nn.Module):
    def __init__(self, channels, heads, groups=8):
        super().__init__()
        self.group_norm = nn.GroupNorm(groups, channels)
        self.attn = nn.MultiheadAttention(channels, heads, batch_first=True)

    def forward(self, x):
        B, C, H, W = x.shape
        h = self.group_norm(x).flatten(2).transpose(1, 2)  # [B, H*W, C]
        h, _ = self.attn(h, h, h, need_weights=False)
        return x + h.transpose(1, 2).reshape(B, C, H, W)


class Upsample(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class UNet(nn.Module):
    def __init__(self, in_channels=3, C=16, heads=4, groups=8):
        super().__init__()
        self.C = C
        temb = 4 * C
        self.time_embed = nn.Sequential(nn.Linear(C, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(in_channels, C, 3, padding=1)
        self.down0 = ResBlock(C, C, temb, groups)
        self.downsample0 = nn.Conv2d(C, C, 3, stride=2, padding=1)
        self.down1 = ResBlock(C, 2 * C, temb, groups)
        self.downsample1 = nn.Conv2d(2 * C, 2 * C, 3, stride=2, padding=1)
        self.mid1 = ResBlock(2 * C, 2 * C, temb, groups)
        self.mid_attn = AttnBlock(2 * C, heads, groups)
        self.mid2 = ResBlock(2 * C, 2 * C, temb, groups)
        self.upsample1 = Upsample(2 * C)
        self.up1 = ResBlock(4 * C, 2 * C, temb, groups)
        self.upsample0 = Upsample(2 * C)
        self.up0 = ResBlock(3 * C, C, temb, groups)
        self.norm_out = nn.GroupNorm(groups, C)
        self.conv_out = nn.Conv2d(C, in_channels, 3, padding=1)

    def forward(self, x, t):
        temb = self.time_embed(timestep_embedding(t, self.C))
        h0 = self.conv_in(x)
        h1 = self.down0(h0, temb)
        h2 = self.down1(self.downsample0(h1), temb)
        m = self.mid1(self.downsample1(h2), temb)
        m = self.mid2(self.mid_attn(m), temb)
        u = self.up1(torch.cat([self.upsample1(m), h2], dim=1), temb)
        u = self.up0(torch.cat([self.upsample0(u), h1], dim=1), temb)
        return self.conv_out(F.silu(self.norm_out(u)))
