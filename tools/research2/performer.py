"""Performer's FAVOR+ attention (Choromanski et al. 2021), as lucidrains/performer-pytorch writes
it: positive random features (softmax_kernel) from an orthogonal Gaussian projection matrix held as
a buffer (gaussian_orthogonal_random_matrix, QR of Gaussian blocks), the data normalizer, the
max-stabilised exponentials, and non-causal linear attention (einsum, D_inv)."""
from __future__ import annotations

import math

import torch
from torch import einsum, nn


def orthogonal_matrix_chunk(cols):
    q, _ = torch.linalg.qr(torch.randn((cols, cols)), mode="reduced")
    return q.t()


def gaussian_orthogonal_random_matrix(nb_rows, nb_columns):
    nb_full_blocks = nb_rows // nb_columns
    blocks = [orthogonal_matrix_chunk(nb_columns) for _ in range(nb_full_blocks)]
    remaining = nb_rows - nb_full_blocks * nb_columns
    if remaining > 0:
        blocks.append(orthogonal_matrix_chunk(nb_columns)[:remaining])
    final = torch.cat(blocks)
    multiplier = torch.randn((nb_rows, nb_columns)).norm(dim=1)
    return torch.diag(multiplier) @ final


def softmax_kernel(data, *, projection_matrix, is_query, normalize_data=True, eps=1e-4):
    b, h, *_ = data.shape
    data_normalizer = (data.shape[-1] ** -0.25) if normalize_data else 1.
    ratio = (projection_matrix.shape[0] ** -0.5)
    projection = projection_matrix.unsqueeze(0).unsqueeze(0).expand(b, h, *projection_matrix.shape)
    projection = projection.type_as(data)
    data_dash = torch.einsum("...id,...jd->...ij", (data_normalizer * data), projection)
    diag_data = data ** 2
    diag_data = torch.sum(diag_data, dim=-1)
    diag_data = (diag_data / 2.0) * (data_normalizer ** 2)
    diag_data = diag_data.unsqueeze(dim=-1)
    if is_query:
        data_dash = ratio * (torch.exp(data_dash - diag_data - torch.amax(data_dash, dim=-1, keepdim=True).detach())
                             + eps)
    else:
        data_dash = ratio * (torch.exp(data_dash - diag_data - torch.amax(data_dash, dim=(-1, -2),
                                                                            keepdim=True).detach()) + eps)
    return data_dash.type_as(data)


def linear_attention(q, k, v):
    k_cumsum = k.sum(dim=-2)
    D_inv = 1. / torch.einsum("...nd,...d->...n", q, k_cumsum.type_as(q))
    context = torch.einsum("...nd,...ne->...de", k, v)
    return torch.einsum("...de,...nd,...n->...ne", context, q, D_inv)


class FastAttention(nn.Module):
    def __init__(self, dim_heads, nb_features=None):
        super().__init__()
        nb_features = nb_features or int(dim_heads * math.log(dim_heads))
        self.register_buffer("projection_matrix", gaussian_orthogonal_random_matrix(nb_features, dim_heads))

    def forward(self, q, k, v):
        q = softmax_kernel(q, is_query=True, projection_matrix=self.projection_matrix)
        k = softmax_kernel(k, is_query=False, projection_matrix=self.projection_matrix)
        return linear_attention(q, k, v)


class PerformerLayer(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.to_q, self.to_k, self.to_v = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.fast_attention = FastAttention(dim // heads)
        self.to_out = nn.Linear(dim, dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, n, _ = x.shape
        h = self.norm1(x)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (self.to_q(h), self.to_k(h), self.to_v(h)))
        out = self.fast_attention(q, k, v).transpose(1, 2).reshape(b, n, -1)
        x = x + self.to_out(out)
        return x + self.ff(self.norm2(x))
