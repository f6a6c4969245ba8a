"""(3) A RetNet decoder with multi-scale retention in its parallel form, as microsoft/torchscale
writes it (architecture/retnet.py, component/multiscale_retention.py, gate_linear_unit.py,
rms_norm.py) with torchscale's RetNetConfig defaults: pre-norm, no embedding scale, GLU with gelu."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):  # torchscale.component.rms_norm
    def __init__(self, dim, eps=1e-6, elementwise_affine=True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if elementwise_affine else None

    def forward(self, x):
        output = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
        return output * self.weight if self.weight is not None else output


def rotate_every_two(x):
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def theta_shift(x, sin, cos):
    return (x * cos) + (rotate_every_two(x) * sin)


class RetNetRelPos(nn.Module):
    def __init__(self, embed_dim, heads):
        super().__init__()
        angle = 1.0 / (10000 ** torch.linspace(0, 1, embed_dim // heads // 2))
        angle = angle.unsqueeze(-1).repeat(1, 2).flatten()
        decay = torch.log(1 - 2 ** (-5 - torch.arange(heads, dtype=torch.float)))
        self.register_buffer("angle", angle)
        self.register_buffer("decay", decay)

    def forward(self, slen):  # the parallel form
        index = torch.arange(slen).to(self.decay)
        sin = torch.sin(index[:, None] * self.angle[None, :])
        cos = torch.cos(index[:, None] * self.angle[None, :])
        mask = torch.tril(torch.ones(slen, slen).to(self.decay))
        mask = torch.masked_fill(index[:, None] - index[None, :], ~mask.bool(), float("inf"))
        mask = torch.exp(mask * self.decay[:, None, None])
        mask = torch.nan_to_num(mask)
        mask = mask / mask.sum(dim=-1, keepdim=True).sqrt()
        return (sin, cos), mask


class MultiScaleRetention(nn.Module):
    def __init__(self, embed_dim, value_dim, num_heads, eps=1e-6):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim, self.key_dim = value_dim // num_heads, embed_dim // num_heads
        self.scaling = self.key_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, value_dim, bias=False)
        self.g_proj = nn.Linear(embed_dim, value_dim, bias=False)
        self.out_proj = nn.Linear(value_dim, embed_dim, bias=False)
        self.group_norm = RMSNorm(self.head_dim, eps=eps, elementwise_affine=False)

    def parallel_forward(self, qr, kr, v, mask):
        bsz, tgt_len, _ = v.size()
        vr = v.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        qk_mat = qr @ kr.transpose(-1, -2)
        qk_mat = qk_mat * mask
        qk_mat = qk_mat / qk_mat.detach().sum(dim=-1, keepdim=True).abs().clamp(min=1)
        return torch.matmul(qk_mat, vr).transpose(1, 2)

    def forward(self, x, rel_pos):
        bsz, tgt_len, _ = x.size()
        (sin, cos), inner_mask = rel_pos
        q, k, v, g = self.q_proj(x), self.k_proj(x), self.v_proj(x), self.g_proj(x)
        k = k * self.scaling
        q = q.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        k = k.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        output = self.parallel_forward(theta_shift(q, sin, cos), theta_shift(k, sin, cos), v, inner_mask)
        output = self.group_norm(output).reshape(bsz, tgt_len, self.head_dim * self.num_heads)
        return self.out_proj(F.silu(g) * output)


class GLU(nn.Module):  # torchscale.component.gate_linear_unit (activation_fn 'gelu')
    def __init__(self, embed_dim, ffn_dim):
        super().__init__()
        self.fc1 = nn.Linear(embed_dim, ffn_dim, bias=False)
        self.fc2 = nn.Linear(ffn_dim, embed_dim, bias=False)
        self.gate = nn.Linear(embed_dim, ffn_dim, bias=False)

    def forward(self, x):
        x_shape = x.shape
        x = x.reshape(-1, x.size(-1))
        g = self.gate(x)
        x = F.gelu(self.fc1(x).float()).type_as(x) * g
        return self.fc2(x).view(x_shape)


class RetNetDecoderLayer(nn.Module):
    def __init__(self, embed_dim, value_dim, ffn_dim, heads):
        super().__init__()
        self.retention = MultiScaleRetention(embed_dim, value_dim, heads)
        self.retention_layer_norm = RMSNorm(embed_dim)
        self.ffn = GLU(embed_dim, ffn_dim)
        self.final_layer_norm = RMSNorm(embed_dim)

    def forward(self, x, rel_pos):  # decoder_normalize_before, no deepnorm (alpha 1)
        x = x + self.retention(self.retention_layer_norm(x), rel_pos)
        return x + self.ffn(self.final_layer_norm(x))


class RetNetDecoder(nn.Module):
    """RetNetDecoder with torchscale's defaults: no_scale_embedding, no layernorm_embedding, pre-norm."""

    def __init__(self, vocab=100, embed_dim=64, value_dim=128, ffn_dim=128, heads=4, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, embed_dim)
        self.layers = nn.ModuleList([RetNetDecoderLayer(embed_dim, value_dim, ffn_dim, heads) for _ in range(layers)])
        self.layer_norm = RMSNorm(embed_dim)
        self.retnet_rel_pos = RetNetRelPos(embed_dim, heads)
        self.output_projection = nn.Linear(embed_dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        rel_pos = self.retnet_rel_pos(tokens.size(1))
        for layer in self.layers:
            x = layer(x, rel_pos)
        return self.output_projection(self.layer_norm(x))
