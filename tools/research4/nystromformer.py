"""Nystromformer (Xiong et al. 2021, "Nystromformer: A Nystrom-Based Algorithm for Approximating
Self-Attention") as mlpen/Nystromformer writes it (code/attention_nystrom.py, in its
model's attention wrapper): landmarks as the means of consecutive segments of the queries and keys,
three softmax kernels, the Moore-Penrose pseudo-inverse of the middle one by six Newton iterations
started from 1 / max(column sums) (`torch.max` of a tensor, a value), a padding mask multiplied in and
subtracted as -1e9, and a depthwise Conv2d over the values added; post-norm BERT-style layers."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


class NystromAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.head_dim = config["head_dim"]
        self.num_head = config["num_head"]
        self.num_landmarks = config["num_landmarks"]
        self.seq_len = config["max_seq_len"]
        self.init_option = config.get("inv_init_coeff_option", "original")
        self.use_conv = "conv_kernel_size" in config
        if self.use_conv:
            self.conv = nn.Conv2d(in_channels=self.num_head, out_channels=self.num_head,
                                  kernel_size=(config["conv_kernel_size"], 1),
                                  padding=(config["conv_kernel_size"] // 2, 0), bias=False, groups=self.num_head)

    def forward(self, Q, K, V, mask):
        Q = Q * mask[:, None, :, None] / math.sqrt(math.sqrt(self.head_dim))
        K = K * mask[:, None, :, None] / math.sqrt(math.sqrt(self.head_dim))
        if self.num_landmarks == self.seq_len:
            attn = torch.nn.functional.softmax(torch.matmul(Q, K.transpose(-1, -2)) - 1e9 * (1 - mask[:, None, None, :]),
                                               dim=-1)
            X = torch.matmul(attn, V)
        else:
            Q_landmarks = Q.reshape(-1, self.num_head, self.num_landmarks, self.seq_len // self.num_landmarks,
                                    self.head_dim).mean(dim=-2)
            K_landmarks = K.reshape(-1, self.num_head, self.num_landmarks, self.seq_len // self.num_landmarks,
                                    self.head_dim).mean(dim=-2)
            kernel_1 = torch.nn.functional.softmax(torch.matmul(Q, K_landmarks.transpose(-1, -2)), dim=-1)
            kernel_2 = torch.nn.functional.softmax(torch.matmul(Q_landmarks, K_landmarks.transpose(-1, -2)), dim=-1)
            kernel_3 = torch.nn.functional.softmax(torch.matmul(Q_landmarks, K.transpose(-1, -2))
                                                   - 1e9 * (1 - mask[:, None, None, :]), dim=-1)
            X = torch.matmul(torch.matmul(kernel_1, self.iterative_inv(kernel_2)), torch.matmul(kernel_3, V))
        if self.use_conv:
            X += self.conv(V * mask[:, None, :, None])
        return X

    def iterative_inv(self, mat, n_iter=6):
        I = torch.eye(mat.size(-1), device=mat.device)  # noqa: E741
        K = mat
        # The entries of K are positive and ||K||_{\infty} = 1 due to softmax
        if self.init_option == "original":
            # This original implementation is more conservative to compute coefficient of Z_0.
            V = 1 / torch.max(torch.sum(K, dim=-2)) * K.transpose(-1, -2)
        else:
            # This is the exact coefficient computation, 1 / ||K||_1, of initialization of Z_0, leading to faster convergence.
            V = 1 / torch.max(torch.sum(K, dim=-2), dim=-1).values[:, :, None, None] * K.transpose(-1, -2)
        for _ in range(n_iter):
            KV = torch.matmul(K, V)
            V = torch.matmul(0.25 * V, 13 * I - torch.matmul(KV, 15 * I - torch.matmul(KV, 7 * I - KV)))
        return V


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dim, self.head_dim, self.num_head = config["transformer_dim"], config["head_dim"], config["num_head"]
        self.W_q = nn.Linear(self.dim, self.num_head * self.head_dim)
        self.W_k = nn.Linear(self.dim, self.num_head * self.head_dim)
        self.W_v = nn.Linear(self.dim, self.num_head * self.head_dim)
        self.attn = NystromAttention(config)
        self.ff = nn.Linear(self.num_head * self.head_dim, self.dim)

    def forward(self, X, mask):
        Q = self.split_heads(self.W_q(X))
        K = self.split_heads(self.W_k(X))
        V = self.split_heads(self.W_v(X))
        attn_out = self.attn(Q.float(), K.float(), V.float(), mask.float())
        attn_out = self.combine_heads(attn_out)
        return self.ff(attn_out)

    def combine_heads(self, X):
        X = X.transpose(1, 2)
        return X.reshape(X.size(0), X.size(1), self.num_head * self.head_dim)

    def split_heads(self, X):
        X = X.reshape(X.size(0), X.size(1), self.num_head, self.head_dim)
        return X.transpose(1, 2)


class TransformerLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        dim = config["transformer_dim"]
        self.norm1 = nn.LayerNorm(dim)
        self.mha = Attention(config)
        self.dropout1 = nn.Dropout(p=config["dropout_prob"])
        self.norm2 = nn.LayerNorm(dim)
        self.mlpblock = nn.Sequential(nn.Linear(dim, config["transformer_hidden_dim"]), nn.GELU(),
                                      nn.Dropout(p=config["dropout_prob"]),
                                      nn.Linear(config["transformer_hidden_dim"], dim),
                                      nn.Dropout(p=config["dropout_prob"]))

    def forward(self, X, mask):
        X = self.dropout1(self.mha(self.norm1(X), mask)) + X
        X = self.mlpblock(self.norm2(X)) + X
        return X


CONFIG = {"transformer_dim": 32, "head_dim": 16, "num_head": 2, "num_landmarks": 4, "max_seq_len": 16,
          "conv_kernel_size": 5, "transformer_hidden_dim": 64, "dropout_prob": 0.1, "vocab_size": 64,
          "num_layers": 2}


class Nystromformer(nn.Module):
    def __init__(self, config=CONFIG):
        super().__init__()
        self.word_embeddings = nn.Embedding(config["vocab_size"], config["transformer_dim"])
        self.position_embeddings = nn.Embedding(config["max_seq_len"], config["transformer_dim"])
        self.layers = nn.ModuleList([TransformerLayer(config) for _ in range(config["num_layers"])])
        self.norm = nn.LayerNorm(config["transformer_dim"])

    def forward(self, input_ids, mask):
        positions = torch.arange(input_ids.size(1), device=input_ids.device)[None, :]
        X = self.word_embeddings(input_ids) + self.position_embeddings(positions)
        for layer in self.layers:
            X = layer(X, mask)
        return self.norm(X) * mask[:, :, None]
