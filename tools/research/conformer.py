"""(8) The Conformer (Gulati et al. 2020) as torchaudio.models.Conformer writes it: per layer a
half-step feed-forward module, multi-head self-attention (nn.MultiheadAttention, time-major, with
the key padding mask from the lengths), the convolution module (pointwise conv, GLU, depthwise conv,
BatchNorm, SiLU, pointwise conv), a second half-step feed-forward module and a final LayerNorm."""
from __future__ import annotations

import torch
from torch import nn


def _lengths_to_padding_mask(lengths):
    batch_size = lengths.shape[0]
    max_length = int(torch.max(lengths).item())
    return torch.arange(max_length, dtype=lengths.dtype).expand(batch_size, max_length) >= lengths.unsqueeze(1)


class _ConvolutionModule(nn.Module):
    def __init__(self, input_dim, num_channels, depthwise_kernel_size, bias=True):
        super().__init__()
        self.layer_norm = nn.LayerNorm(input_dim)
        self.sequential = nn.Sequential(
            nn.Conv1d(input_dim, 2 * num_channels, 1, stride=1, padding=0, bias=bias),
            nn.GLU(dim=1),
            nn.Conv1d(num_channels, num_channels, depthwise_kernel_size, stride=1,
                      padding=(depthwise_kernel_size - 1) // 2, groups=num_channels, bias=bias),
            nn.BatchNorm1d(num_channels),
            nn.SiLU(),
            nn.Conv1d(num_channels, input_dim, kernel_size=1, stride=1, padding=0, bias=bias),
            nn.Dropout(0.0),
        )

    def forward(self, input):
        return self.sequential(self.layer_norm(input).transpose(1, 2)).transpose(1, 2)


class _FeedForwardModule(nn.Module):
    def __init__(self, input_dim, hidden_dim):
        super().__init__()
        self.sequential = nn.Sequential(nn.LayerNorm(input_dim), nn.Linear(input_dim, hidden_dim, bias=True),
                                        nn.SiLU(), nn.Dropout(0.0), nn.Linear(hidden_dim, input_dim, bias=True),
                                        nn.Dropout(0.0))

    def forward(self, input):
        return self.sequential(input)


class ConformerLayer(nn.Module):
    def __init__(self, input_dim, ffn_dim, num_attention_heads, depthwise_conv_kernel_size):
        super().__init__()
        self.ffn1 = _FeedForwardModule(input_dim, ffn_dim)
        self.self_attn_layer_norm = nn.LayerNorm(input_dim)
        self.self_attn = nn.MultiheadAttention(input_dim, num_attention_heads, dropout=0.0)
        self.self_attn_dropout = nn.Dropout(0.0)
        self.conv_module = _ConvolutionModule(input_dim, input_dim, depthwise_conv_kernel_size)
        self.ffn2 = _FeedForwardModule(input_dim, ffn_dim)
        self.final_layer_norm = nn.LayerNorm(input_dim)

    def forward(self, input, key_padding_mask):  # input [T, B, D]
        residual = input
        x = self.ffn1(input)
        x = x * 0.5 + residual
        residual = x
        x = self.self_attn_layer_norm(x)
        x, _ = self.self_attn(query=x, key=x, value=x, key_padding_mask=key_padding_mask, need_weights=False)
        x = self.self_attn_dropout(x)
        x = x + residual
        residual = x
        x = self.conv_module(x.transpose(0, 1)).transpose(0, 1)
        x = residual + x
        residual = x
        x = self.ffn2(x)
        x = x * 0.5 + residual
        return self.final_layer_norm(x)


class Conformer(nn.Module):
    def __init__(self, input_dim=32, num_heads=4, ffn_dim=64, num_layers=2, depthwise_conv_kernel_size=7):
        super().__init__()
        self.conformer_layers = nn.ModuleList([
            ConformerLayer(input_dim, ffn_dim, num_heads, depthwise_conv_kernel_size) for _ in range(num_layers)])

    def forward(self, input, lengths):
        encoder_padding_mask = _lengths_to_padding_mask(lengths)
        x = input.transpose(0, 1)
        for layer in self.conformer_layers:
            x = layer(x, encoder_padding_mask)
        return x.transpose(0, 1), lengths
