"""MEGA (Ma et al. 2023, "Mega: Moving Average Equipped Gated Attention") as facebookresearch/mega
writes it (fairseq/modules/exponential_moving_average.py, moving_average_gated_attention.py,
relative_positional_bias.py, normalized_feedforward_network.py), as its bidirectional encoder on
the time-first layout (L x B x D): the multi-dimensional damped EMA as a kernel over the sequence
(Vandermonde powers of q = 1 - p alpha, einsum with gamma), the two directions padded and flipped,
applied through rfft/irfft; the gated attention with a shared projection split into a reset gate,
an update gate, z and a residual part, q and k as scaled offsets of z (unbind), the Laplace attention
function (erf) over the scores divided by the length plus the simple relative position bias built by
the Toeplitz trick (pad, tile, view, slice), and the update as torch.addcmul; normalised FFN layers."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def laplace(x, mu=0.707107, sigma=0.282095):
    x = (x - mu).div(sigma * math.sqrt(2.0))
    return 0.5 * (1.0 + torch.erf(x))


class MultiHeadEMA(nn.Module):
    def __init__(self, embed_dim, ndim=2, bidirectional=False, truncation=None):
        super().__init__()
        self.embed_dim, self.ndim, self.bidirectional, self.truncation = embed_dim, ndim, bidirectional, truncation
        self.scale = math.sqrt(1.0 / self.ndim)
        kernel_dim = 2 * embed_dim if self.bidirectional else embed_dim
        self.delta = nn.Parameter(torch.randn(kernel_dim, ndim, 1) * 0.2)
        self.alpha = nn.Parameter(torch.randn(kernel_dim, ndim, 1) * 0.2)
        self.beta = nn.Parameter(torch.randn(kernel_dim, ndim, 1) * 0.02 + 1)
        self.gamma = nn.Parameter(torch.randn(kernel_dim, ndim))
        self.omega = nn.Parameter(torch.randn(embed_dim))

    def _calc_coeffs(self):
        p = torch.sigmoid(self.delta)
        alpha = torch.sigmoid(self.alpha)
        q = 1.0 - p * alpha
        return p, q

    def _compute_kernel(self, length: int):
        p, q = self._calc_coeffs()
        # D x N x L
        vander = torch.arange(length).to(p).view(1, 1, length) * torch.log(q)
        kernel = (p * self.beta) * torch.exp(vander)
        # D x L
        return torch.einsum('dnl,dn->dl', kernel, self.gamma * self.scale)

    def kernel(self, length: int):
        kernel_size = length if self.truncation is None else min(self.truncation, length)
        return self._compute_kernel(kernel_size)

    def forward(self, x):
        seq_len, bsz, embed_dim = x.size()
        residual = x * self.omega
        # L x B x D -> B x D x L
        x = x.permute(1, 2, 0)
        # D x L
        k = self.kernel(seq_len)
        fft_len = seq_len
        s = 0
        kernel_size = k.size(1)
        if self.bidirectional:
            k1, k2 = torch.split(k, [self.embed_dim, self.embed_dim], dim=0)
            # D x 2*L-1
            k = F.pad(k1, (kernel_size - 1, 0)) + F.pad(k2.flip(-1), (0, kernel_size - 1))
            x = F.pad(x, (kernel_size - 1, 0))
            fft_len = fft_len + kernel_size - 1
            s = 2 * kernel_size - 2
        k_f = torch.fft.rfft(k.float(), n=2 * fft_len)
        x_f = torch.fft.rfft(x.float(), n=2 * fft_len)
        # B x D x L
        out = torch.fft.irfft(x_f * k_f, n=2 * fft_len)[..., s:s + seq_len]
        out = out.type_as(x)
        # B x D x L -> L x B x D
        return F.silu(out.permute(2, 0, 1) + residual)


class SimpleRelativePositionalBias(nn.Module):
    def __init__(self, max_positions):
        super().__init__()
        self.max_positions = max_positions
        self.rel_pos_bias = nn.Parameter(torch.randn(2 * max_positions - 1) * 0.02)

    def forward(self, seq_len):
        if seq_len > self.max_positions:
            raise ValueError('Sequence length {} going beyond max length {}'.format(seq_len, self.max_positions))
        # seq_len * 2 -1
        b = self.rel_pos_bias[(self.max_positions - seq_len):(self.max_positions + seq_len - 1)]
        # seq_len * 3 - 1
        t = F.pad(b, (0, seq_len))
        # (seq_len * 3 - 1) * seq_len
        t = torch.tile(t, (seq_len,))
        t = t[:-seq_len]
        # seq_len x (3 * seq_len - 2)
        t = t.view(seq_len, 3 * seq_len - 2)
        r = (2 * seq_len - 1) // 2
        start = r
        end = t.size(1) - r
        t = t[:, start:end]
        return t


class MovingAverageGatedAttention(nn.Module):
    def __init__(self, embed_dim, zdim, hdim, ndim, bidirectional=True, max_positions=64):
        super().__init__()
        self.embed_dim, self.hdim, self.zdim = embed_dim, hdim, zdim
        self.norm = nn.LayerNorm(embed_dim)
        self.move = MultiHeadEMA(embed_dim, ndim=ndim, bidirectional=bidirectional)
        self.v_proj = nn.Linear(embed_dim, hdim)
        self.mx_proj = nn.Linear(embed_dim, zdim + hdim + 2 * embed_dim)
        self.h_proj = nn.Linear(hdim, embed_dim)
        self.gamma = nn.Parameter(torch.randn(2, zdim) * 0.02 + 1)
        self.beta = nn.Parameter(torch.zeros(2, zdim))
        self.rel_pos_bias = SimpleRelativePositionalBias(max_positions)

    def element_attention(self, q, k):
        slen = k.size(2)
        lengths = slen
        # C x C
        bias = self.rel_pos_bias(slen)
        # B x K x C x C
        qk = torch.matmul(q, k.transpose(2, 3)) / lengths + bias
        return laplace(qk).type_as(qk)

    def forward(self, x):
        seq_len, bsz, embed_dim = x.size()
        residual = x
        x = self.norm(x)
        # L x B x E
        v = F.silu(self.v_proj(x))
        # L x B x D
        mx = self.move(x)
        # L x B x D -> L x B x (2*D+S+E)
        base = self.mx_proj(mx)
        u, zr, hx = torch.split(base, [self.embed_dim, self.zdim + self.hdim, self.embed_dim], dim=-1)
        # L x B x D
        u = torch.sigmoid(u)
        # L x B x (E+S)
        z, r = torch.split(F.silu(zr), [self.zdim, self.hdim], dim=-1)
        # L x B x S -> L x B x 1 x S -> L x B x 2 x S
        z = z.unsqueeze(2) * self.gamma + self.beta
        # L x B x 2 x S -> L x B x S
        q, k = torch.unbind(z, dim=2)
        # L x B x D -> B x L x D
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        # B x K x C x S (one chunk: the whole sequence)
        q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
        attn_weights = self.element_attention(q, k)
        # B x K x C x E -> B x L x E -> L x B x E
        h = torch.matmul(attn_weights, v).view(bsz, seq_len, self.hdim).transpose(0, 1)
        # L x B x E -> L x B x D
        h = F.silu(hx + self.h_proj(h * r))
        # L x B x D
        return torch.addcmul(residual, u, h - residual)


class NormalizedFeedForwardNetwork(nn.Module):
    def __init__(self, embed_dim, ffn_hidden_dim):
        super().__init__()
        self.norm = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, ffn_hidden_dim)
        self.fc2 = nn.Linear(ffn_hidden_dim, embed_dim)

    def forward(self, x):
        residual = x
        x = F.silu(self.fc1(self.norm(x)))
        return self.fc2(x) + residual


class MegaEncoderLayer(nn.Module):
    def __init__(self, embed_dim=16, zdim=8, hdim=32, ndim=2):
        super().__init__()
        self.mega_layer = MovingAverageGatedAttention(embed_dim, zdim, hdim, ndim)
        self.nffn = NormalizedFeedForwardNetwork(embed_dim, 2 * embed_dim)

    def forward(self, x):
        return self.nffn(self.mega_layer(x))


class MegaEncoder(nn.Module):
    def __init__(self, vocab=64, embed_dim=16, layers=2, classes=3):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, embed_dim)
        self.layers = nn.ModuleList([MegaEncoderLayer(embed_dim) for _ in range(layers)])
        self.final_norm = nn.LayerNorm(embed_dim)
        self.classifier = nn.Linear(embed_dim, classes)

    def forward(self, tokens):
        # B x T -> T x B x C
        x = self.embed_tokens(tokens).transpose(0, 1)
        for layer in self.layers:
            x = layer(x)
        x = self.final_norm(x)
        return self.classifier(x.mean(dim=0))
