"""A residual vector quantiser between a convolutional encoder and decoder (SoundStream, Zeghidour et al.
2021; EnCodec), written as lucidrains/vector-quantize-pytorch's EuclideanCodebook and ResidualVQ compute
it in eval mode: each quantiser picks the nearest code by the negative squared distance
(-(|x|^2 - 2 x.e + |e|^2), argmax), looks it up, and passes the residual left to the next; the
quantised sum goes on by the straight-through estimator x + (q - x).detach(); the codes are returned
beside the reconstruction."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class EuclideanCodebook(nn.Module):
    def __init__(self, dim, codebook_size):
        super().__init__()
        self.embed = nn.Parameter(torch.randn(codebook_size, dim))

    def forward(self, x):
        flatten = x.reshape(-1, x.shape[-1])
        embed = self.embed.t()
        dist = -(flatten.pow(2).sum(1, keepdim=True) - 2 * flatten @ embed + embed.pow(2).sum(0, keepdim=True))
        embed_ind = dist.max(dim=-1).indices
        quantize = F.embedding(embed_ind, self.embed)
        return quantize.view(*x.shape), embed_ind.view(*x.shape[:-1])


class ResidualVQ(nn.Module):
    def __init__(self, dim, num_quantizers, codebook_size):
        super().__init__()
        self.layers = nn.ModuleList([EuclideanCodebook(dim, codebook_size) for _ in range(num_quantizers)])

    def forward(self, x):
        quantized_out = torch.zeros_like(x)
        residual = x
        all_indices = []
        for layer in self.layers:
            quantized, indices = layer(residual)
            residual = residual - quantized.detach()
            quantized_out = quantized_out + quantized
            all_indices.append(indices)
        quantized_out = x + (quantized_out - x).detach()
        return quantized_out, torch.stack(all_indices, dim=-1)


class SoundStreamLite(nn.Module):
    def __init__(self, channels=16, dim=24, num_quantizers=4, codebook_size=32):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv1d(1, channels, 7, padding=3), nn.ELU(),
                                     nn.Conv1d(channels, dim, 4, stride=2, padding=1), nn.ELU())
        self.quantizer = ResidualVQ(dim, num_quantizers, codebook_size)
        self.decoder = nn.Sequential(nn.ConvTranspose1d(dim, channels, 4, stride=2, padding=1), nn.ELU(),
                                     nn.Conv1d(channels, 1, 7, padding=3))

    def forward(self, audio):
        z = self.encoder(audio).transpose(1, 2)           # [B, T, dim]
        q, codes = self.quantizer(z)
        return self.decoder(q.transpose(1, 2)), codes
