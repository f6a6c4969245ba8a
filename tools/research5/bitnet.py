"""BitNet b1.58 (Ma et al. 2024, "The Era of 1-bit LLMs"), as Microsoft's training tips and FAQ
(microsoft/unilm, bitnet/The-Era-of-1-bit-LLMs__Training_Tips_Code_FAQ.pdf) write BitLinear: the input
RMS-normalised, activations quantised per token to 8 bits (absmax), weights to {-1, 0, 1} times their
mean absolute value, both through the straight-through estimator (x + (quant(x) - x).detach()); a
Llama-like decoder whose every projection is a BitLinear (attention by F.scaled_dot_product_attention,
SwiGLU MLP, no positions for brevity)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def activation_quant(x):
    scale = 127.0 / x.abs().max(dim=-1, keepdim=True).values.clamp_(min=1e-5)
    return (x * scale).round().clamp_(-128, 127) / scale


def weight_quant(w):
    scale = 1.0 / w.abs().mean().clamp_(min=1e-5)
    return (w * scale).round().clamp_(-1, 1) / scale


class BitLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=False):
        super().__init__(in_features, out_features, bias=bias)
        self.norm = nn.RMSNorm(in_features, eps=1e-6)

    def forward(self, x):
        w = self.weight
        x_norm = self.norm(x)
        x_quant = x_norm + (activation_quant(x_norm) - x_norm).detach()
        w_quant = w + (weight_quant(w) - w).detach()
        return F.linear(x_quant, w_quant)


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.wq, self.wk, self.wv, self.wo = (BitLinear(dim, dim) for _ in range(4))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (w(x).view(B, T, self.n_heads, -1).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1, self.w3, self.w2 = BitLinear(dim, hidden), BitLinear(dim, hidden), BitLinear(hidden, dim)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.attention, self.feed_forward = Attention(dim, n_heads), FeedForward(dim, 2 * dim)

    def forward(self, x):
        x = x + self.attention(x)
        return x + self.feed_forward(x)


class BitNetLM(nn.Module):
    def __init__(self, vocab=64, dim=32, n_heads=4, n_layers=2):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim, n_heads) for _ in range(n_layers)])
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.output = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.output(self.norm(h))
