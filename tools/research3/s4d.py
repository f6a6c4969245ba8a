"""S4D (Gu et al. 2022, "On the Parameterization and Initialization of Diagonal State Space Models"),
as state-spaces/s4's standalone s4d.py writes it: a diagonal SSM kernel computed from log_dt, the
complex C (a real parameter read through view_as_complex), log_A_real and A_imag, Vandermonde
K = 2 Re(C' (exp(dtA l))) over the sequence, applied as a long convolution through FFTs
(rfft at 2L, multiply, irfft, first L), plus the skip D; GELU, a 1x1 Conv1d to 2H and a GLU; layers
of residual S4D blocks with LayerNorm in a ModuleList."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


class S4DKernel(nn.Module):
    def __init__(self, d_model, N=8, dt_min=0.001, dt_max=0.1):
        super().__init__()
        H = d_model
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N // 2, dtype=torch.cfloat)
        self.C = nn.Parameter(torch.view_as_real(C))
        self.log_dt = nn.Parameter(log_dt)
        log_A_real = torch.log(0.5 * torch.ones(H, N // 2))
        A_imag = math.pi * torch.arange(N // 2).repeat(H, 1)
        self.log_A_real = nn.Parameter(log_A_real)
        self.A_imag = nn.Parameter(A_imag)

    def forward(self, L):
        dt = torch.exp(self.log_dt)  # (H)
        C = torch.view_as_complex(self.C)  # (H N)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag  # (H N)
        dtA = A * dt.unsqueeze(-1)  # (H N)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)  # (H N L)
        C = C * (torch.exp(dtA) - 1.) / A
        K = 2 * torch.einsum("hn, hnl -> hl", C, torch.exp(K)).real
        return K


class S4D(nn.Module):
    def __init__(self, d_model, d_state=8):
        super().__init__()
        self.h = d_model
        self.D = nn.Parameter(torch.randn(self.h))
        self.kernel = S4DKernel(self.h, N=d_state)
        self.activation = nn.GELU()
        self.output_linear = nn.Sequential(nn.Conv1d(self.h, 2 * self.h, kernel_size=1), nn.GLU(dim=-2))

    def forward(self, u):  # (B H L)
        L = u.size(-1)
        k = self.kernel(L=L)  # (H L)
        k_f = torch.fft.rfft(k, n=2 * L)  # (H L)
        u_f = torch.fft.rfft(u, n=2 * L)  # (B H L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]  # (B H L)
        y = y + u * self.D.unsqueeze(-1)
        y = self.activation(y)
        return self.output_linear(y)


class S4DModel(nn.Module):
    def __init__(self, d_input=3, d_output=5, d_model=16, n_layers=3):
        super().__init__()
        self.encoder = nn.Linear(d_input, d_model)
        self.s4_layers = nn.ModuleList([S4D(d_model) for _ in range(n_layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(d_model) for _ in range(n_layers)])
        self.decoder = nn.Linear(d_model, d_output)

    def forward(self, x):  # (B, L, d_input)
        x = self.encoder(x)  # (B, L, d_model)
        x = x.transpose(-1, -2)  # (B, d_model, L)
        for layer, norm in zip(self.s4_layers, self.norms):
            z = layer(x)
            x = z + x
            x = norm(x.transpose(-1, -2)).transpose(-1, -2)
        x = x.transpose(-1, -2)
        x = x.mean(dim=1)
        return self.decoder(x)
