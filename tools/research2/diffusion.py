"""A diffusion U-Net's time conditioning and attention (Ho et al. 2020; as openai/guided-diffusion's
unet.py and diffusers write them, 2021-22): the sinusoidal `timestep_embedding` of integer steps
(cast to float), a time MLP, ResBlocks with GroupNorm32 (normalised in float32 and cast back),
SiLU and the time embedding added per channel, an AttentionBlock with QKVAttentionLegacy (the
scale split between q and k, einsum), a downsampling convolution and a nearest upsampling."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def timestep_embedding(timesteps, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half)
    args = timesteps[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class GroupNorm32(nn.GroupNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class ResBlock(nn.Module):
    def __init__(self, channels, emb_channels, out_channels=None):
        super().__init__()
        out_channels = out_channels or channels
        self.in_layers = nn.Sequential(GroupNorm32(4, channels), nn.SiLU(), nn.Conv2d(channels, out_channels, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, out_channels))
        self.out_layers = nn.Sequential(GroupNorm32(4, out_channels), nn.SiLU(), nn.Dropout(p=0.0),
                                        nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.skip_connection = nn.Identity() if out_channels == channels else nn.Conv2d(channels, out_channels, 1)

    def forward(self, x, emb):
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb).type(h.dtype)
        while len(emb_out.shape) < len(h.shape):
            emb_out = emb_out[..., None]
        h = self.out_layers(h + emb_out)
        return self.skip_connection(x) + h


class QKVAttentionLegacy(nn.Module):
    def __init__(self, n_heads):
        super().__init__()
        self.n_heads = n_heads

    def forward(self, qkv):
        bs, width, length = qkv.shape
        ch = width // (3 * self.n_heads)
        q, k, v = qkv.reshape(bs * self.n_heads, ch * 3, length).split(ch, dim=1)
        scale = 1 / math.sqrt(math.sqrt(ch))
        weight = torch.einsum("bct,bcs->bts", q * scale, k * scale)
        weight = torch.softmax(weight.float(), dim=-1).type(weight.dtype)
        a = torch.einsum("bts,bcs->bct", weight, v)
        return a.reshape(bs, -1, length)


class AttentionBlock(nn.Module):
    def __init__(self, channels, num_heads=2):
        super().__init__()
        self.norm = GroupNorm32(4, channels)
        self.qkv = nn.Conv1d(channels, channels * 3, 1)
        self.attention = QKVAttentionLegacy(num_heads)
        self.proj_out = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        b, c, *spatial = x.shape
        x = x.reshape(b, c, -1)
        h = self.proj_out(self.attention(self.qkv(self.norm(x))))
        return (x + h).reshape(b, c, *spatial)


class TinyUNet(nn.Module):
    def __init__(self, in_channels=4, ch=16):
        super().__init__()
        self.ch = ch
        self.time_embed = nn.Sequential(nn.Linear(ch, 4 * ch), nn.SiLU(), nn.Linear(4 * ch, 4 * ch))
        self.conv_in = nn.Conv2d(in_channels, ch, 3, padding=1)
        self.down = ResBlock(ch, 4 * ch)
        self.downsample = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.mid = nn.ModuleList([ResBlock(ch, 4 * ch), AttentionBlock(ch), ResBlock(ch, 4 * ch)])
        self.up = ResBlock(2 * ch, 4 * ch, ch)
        self.out = nn.Sequential(GroupNorm32(4, ch), nn.SiLU(), nn.Conv2d(ch, in_channels, 3, padding=1))

    def forward(self, x, timesteps):
        emb = self.time_embed(timestep_embedding(timesteps, self.ch))
        h0 = self.down(self.conv_in(x), emb)
        h = self.downsample(h0)
        for layer in self.mid:
            h = layer(h, emb) if isinstance(layer, ResBlock) else layer(h)
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        h = self.up(torch.cat([h, h0], dim=1), emb)
        return self.out(h)
