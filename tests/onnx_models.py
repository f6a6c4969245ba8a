"""Small PyTorch models the ONNX importer's tests export with torch.onnx.export (both exporters), with
weights drawn apart (an exporter's optimiser merges equal initializers: a fresh LayerNorm's ones)."""
from __future__ import annotations

import warnings

import torch
from torch import nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16),
                                      nn.ReLU(), nn.AvgPool2d(2))
        self.pool, self.head = nn.AdaptiveAvgPool2d(1), nn.Sequential(nn.BatchNorm1d(16), nn.Linear(16, 10))

    def forward(self, images):
        return self.head(torch.flatten(self.pool(self.features(images)), 1))


class Block(nn.Module):
    def __init__(self, d=32, heads=4, causal=True):
        super().__init__()
        self.ln1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads, self.causal = heads, causal

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """A GPT-2-like decoder: token and position embeddings, 3 pre-norm blocks, a head."""

    def __init__(self, vocab=100, d=32, layers=3):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(64, d)
        self.h = nn.ModuleList([Block(d) for _ in range(layers)])
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        return self.head(self.ln_f(x))


class Encoder(nn.Module):
    """A BERT-like encoder: embeddings, post-norm layers of nn.TransformerEncoderLayer, a pooler."""

    def __init__(self, vocab=120, d=32, layers=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, d)
        self.position = nn.Embedding(64, d)
        self.norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
                                     for _ in range(layers)])
        self.pooler = nn.Linear(d, d)

    def forward(self, input_ids):
        x = self.norm(self.embeddings(input_ids) + self.position(torch.arange(input_ids.shape[1])))
        for layer in self.layers:
            x = layer(x)
        return torch.tanh(self.pooler(x[:, 0]))


class ViT(nn.Module):
    """A small ViT: a convolution of patches, a class token, positions, 2 blocks, a head."""

    def __init__(self, d=32, layers=2):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 17, d))
        self.blocks = nn.ModuleList([Block(d, causal=False) for _ in range(layers)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, 10)

    def forward(self, pixels):
        x = self.patch(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def drawn(model: nn.Module) -> nn.Module:
    """`model` in eval mode, every parameter and running statistic moved by noise."""
    torch.manual_seed(0)
    model.eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
        for name, b in model.named_buffers():
            if b.is_floating_point():
                b.copy_(b + torch.rand_like(b) * 0.5)
    return model


def export(model, args: tuple, names: list[str], dims: dict, path, dynamo: bool = True, **kw) -> None:
    """torch.onnx.export of `model` to `path`, the dims named as `dims` says ({"x": {0: "batch"}})."""
    import logging
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            torch.onnx.export(model, args, str(path), dynamo=True, input_names=names, dynamic_axes=dims,
                              verbose=False, **kw)
        else:
            torch.onnx.export(model, args, str(path), dynamo=False, input_names=names, dynamic_axes=dims,
                              opset_version=17, **kw)
