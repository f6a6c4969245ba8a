"""MaskGIT's bidirectional transformer (Chang et al. 2022), as dome272/MaskGIT-pytorch writes it: the
image tokens with a [MASK] token where a bool mask says so (torch.where against mask_token_id), token
and learned position embeddings, LayerNorm and dropout, encoder layers of nn.MultiheadAttention and
a GELU MLP (post-norm, as the repository's Encoder), and the token prediction: a Linear, GELU and
LayerNorm, then logits against the token embedding's own weight (matmul by its transpose) plus a
bias per token."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=16, hidden_dim=64, heads=4):
        super().__init__()
        self.MultiHeadAttention = nn.MultiheadAttention(dim, num_heads=heads, batch_first=True, dropout=0.1)
        self.LayerNorm1 = nn.LayerNorm(dim, eps=1e-12)
        self.MLP = nn.Sequential(nn.Linear(dim, hidden_dim), nn.GELU(), nn.Linear(hidden_dim, dim),
                                 nn.Dropout(p=0.1))
        self.LayerNorm2 = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x):
        attn, _ = self.MultiHeadAttention(x, x, x, need_weights=False)
        x = x + attn
        x = self.LayerNorm1(x)
        mlp = self.MLP(x)
        x = x + mlp
        return self.LayerNorm2(x)


class BidirectionalTransformer(nn.Module):
    def __init__(self, num_image_tokens=16, num_codebook_vectors=32, dim=16, hidden_dim=64, n_layers=3):
        super().__init__()
        self.mask_token_id = num_codebook_vectors
        self.num_image_tokens = num_image_tokens
        self.tok_emb = nn.Embedding(num_codebook_vectors + 2, dim)
        self.pos_emb = nn.init.trunc_normal_(nn.Parameter(torch.zeros(num_image_tokens, dim)), 0., 0.02)
        self.EncoderLayers = nn.ModuleList([Attention(dim, hidden_dim) for _ in range(n_layers)])
        self.Token_Prediction = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim, eps=1e-12))
        self.bias = nn.Parameter(torch.zeros(num_image_tokens, num_codebook_vectors + 2))
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.drop = nn.Dropout(p=0.1)

    def forward(self, x, mask):
        x = torch.where(mask, torch.full_like(x, self.mask_token_id), x)
        token_embeddings = self.tok_emb(x)
        t = token_embeddings.shape[1]
        position_embeddings = self.pos_emb[:t, :]
        embed = self.drop(self.ln(token_embeddings + position_embeddings))
        for layer in self.EncoderLayers:
            embed = layer(embed)
        embed = self.Token_Prediction(embed)
        logits = torch.matmul(embed, self.tok_emb.weight.T) + self.bias
        return logits
