"""Parametrised and unusual layers research code leans on: weight normalisation and spectral
normalisation as torch.nn.utils.parametrizations writes them (a GAN discriminator's and a
vocoder's layers, 2021-25), nn.Bilinear (a bilinear pooling / fusion head), RReLU in eval mode (its
fixed slope (lower + upper) / 2), a module shared by two layers (ALBERT-style weight sharing),
a torch.where mask, and integer/boolean arithmetic promoted to floats."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import parametrizations


class ReparamNet(nn.Module):
    def __init__(self, a=6, b=5, d=8):
        super().__init__()
        self.wn = parametrizations.weight_norm(nn.Linear(a, d))
        self.sn = parametrizations.spectral_norm(nn.Linear(d, d))
        self.bilinear = nn.Bilinear(d, b, d)
        self.act = nn.RReLU(0.1, 0.3)
        self.shared = nn.Linear(d, d)
        self.head = nn.Linear(d, 3)

    def forward(self, x, y):
        h = self.act(self.wn(x))
        h = self.sn(h)
        h = self.bilinear(h, y)
        h = self.shared(torch.tanh(self.shared(h)))  # one layer's weights used twice
        positive = (h > 0).sum(-1, keepdim=True)     # an integer count
        h = torch.where(h > 0, h, 0.1 * h) / (1 + positive)
        return self.head(h)
