"""FNet (Lee-Thorp et al. 2021/22, "Mixing Tokens with Fourier Transforms"), as google-research's
f_net (and Hugging Face's FNetBasicFourierTransform) computes the mixing: the real part of a 2-D
discrete Fourier transform over the sequence and hidden dims, post-norm residual blocks with a
GELU feed-forward, BERT-style embeddings (word + position + token type, LayerNorm, projection)."""
from __future__ import annotations

import torch
from torch import nn


class FourierMix(nn.Module):
    def forward(self, x):
        return torch.fft.fftn(x, dim=(1, 2)).real


class FNetLayer(nn.Module):
    def __init__(self, dim, ff):
        super().__init__()
        self.fourier, self.mixing_norm = FourierMix(), nn.LayerNorm(dim, eps=1e-12)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.GELU(approximate="tanh"), nn.Linear(ff, dim), nn.Dropout(0.1))
        self.output_norm = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x):
        x = self.mixing_norm(self.fourier(x) + x)
        return self.output_norm(self.ff(x) + x)


class FNet(nn.Module):
    def __init__(self, vocab=64, dim=16, depth=2, max_len=32):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, dim)
        self.position_embeddings = nn.Embedding(max_len, dim)
        self.token_type_embeddings = nn.Embedding(4, dim)
        self.register_buffer("position_ids", torch.arange(max_len).expand((1, -1)), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(1, max_len, dtype=torch.long), persistent=False)
        self.norm, self.projection = nn.LayerNorm(dim, eps=1e-12), nn.Linear(dim, dim)
        self.layer = nn.ModuleList([FNetLayer(dim, 4 * dim) for _ in range(depth)])
        self.pooler = nn.Linear(dim, dim)

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        e = self.word_embeddings(input_ids) + self.position_embeddings(self.position_ids[:, :seq]) + \
            self.token_type_embeddings(self.token_type_ids[:, :seq].expand(input_ids.shape[0], seq))
        x = self.projection(self.norm(e))
        for layer in self.layer:
            x = layer(x)
        return x, torch.tanh(self.pooler(x[:, 0]))
