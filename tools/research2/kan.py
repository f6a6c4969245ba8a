"""A Kolmogorov-Arnold network (Liu et al. 2024), as Blealtan/efficient-kan writes KANLinear: a
SiLU base path plus learnable B-spline functions on a fixed grid (a buffer), the bases computed
by the Cox-de Boor recursion from boolean interval tests cast to the input's dtype, a per-edge
spline scaler; two layers."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class KANLinear(nn.Module):
    def __init__(self, in_features, out_features, grid_size=5, spline_order=3, grid_range=(-1, 1)):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.grid_size, self.spline_order = grid_size, spline_order
        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = ((torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0])
                .expand(in_features, -1).contiguous())
        self.register_buffer("grid", grid)
        self.base_weight = nn.Parameter(torch.randn(out_features, in_features) * 0.3)
        self.spline_weight = nn.Parameter(torch.randn(out_features, in_features, grid_size + spline_order) * 0.1)
        self.spline_scaler = nn.Parameter(torch.ones(out_features, in_features))
        self.base_activation = nn.SiLU()

    def b_splines(self, x):
        grid = self.grid
        x = x.unsqueeze(-1)
        bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            bases = ((x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)]) * bases[:, :, :-1]) + (
                (grid[:, k + 1:] - x) / (grid[:, k + 1:] - grid[:, 1:(-k)]) * bases[:, :, 1:])
        return bases.contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * self.spline_scaler.unsqueeze(-1)

    def forward(self, x):
        original_shape = x.shape
        x = x.reshape(-1, self.in_features)
        base_output = F.linear(self.base_activation(x), self.base_weight)
        spline_output = F.linear(self.b_splines(x).view(x.size(0), -1),
                                 self.scaled_spline_weight.view(self.out_features, -1))
        output = base_output + spline_output
        return output.reshape(*original_shape[:-1], self.out_features)


class KAN(nn.Module):
    def __init__(self, widths=(6, 8, 3)):
        super().__init__()
        self.layers = nn.ModuleList([KANLinear(a, b) for a, b in zip(widths, widths[1:])])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
