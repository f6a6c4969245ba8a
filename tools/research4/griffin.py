"""Griffin (De et al. 2024, "Griffin: Mixing Gated Linear Recurrences with Local Attention") as
google-deepmind/recurrentgemma's PyTorch code writes it (torch/layers.py, torch/modules.py; its
einops rearranges as reshapes), in training mode (no cache): the RG-LRU with block-diagonal gates
(einsum over heads), a = exp(-8 gate_a softplus(Lambda)), the input scaled by sqrt(1 - a^2) through
an autograd Function, a recurrence over time writing `y[:, t]`, reset at document starts
(segment_pos == 0); its Conv1D as a loop over the temporal shifts with each window masked at
document boundaries and zero-padded; multi-query local attention with rotary on half of each head and
a mask of causal, window and same-document; Gemma's RMSNorm (scale + 1) and a gated MLP whose
up-projections are one einsum.  Blocks follow the pattern (recurrent, recurrent, attention)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.randn([width]) * 0.1)

    def forward(self, x):
        var = torch.mean(torch.square(x), axis=-1, keepdims=True)
        normed_x = x * torch.rsqrt(var + self.eps)
        scale = torch.reshape(self.scale, [1 for _ in range(x.ndim - 1)] + [-1])
        return normed_x * (scale + 1)


class BlockDiagonalLinear(nn.Module):
    def __init__(self, width, num_blocks):
        super().__init__()
        self.num_blocks, self.block_width = num_blocks, width // num_blocks
        self.w = nn.Parameter(torch.randn([num_blocks, self.block_width, self.block_width]) * self.block_width ** -0.5)
        self.b = nn.Parameter(torch.zeros([num_blocks, self.block_width]))

    def forward(self, x):
        x = x.reshape(*x.shape[:-1], self.num_blocks, self.block_width)  # "... (h i) -> ... h i"
        y = torch.einsum("... h i, h i j -> ... h j", x, self.w) + self.b
        return y.reshape(*y.shape[:-2], -1)  # "... h j -> ... (h j)"


def rnn_scan(x, a, reset, h0, acc_dtype=torch.float32):
    a = a * ~reset
    h_t = torch.zeros(x[:, 0].shape, dtype=acc_dtype, device=x.device) if h0 is None else h0
    y = torch.zeros_like(x)
    for t in range(x.shape[1]):
        h_t = a[:, t].type(acc_dtype) * h_t + x[:, t].type(acc_dtype)
        y[:, t] = h_t.type(x.dtype)
    return y, h_t


class SqrtBoundDerivative(torch.autograd.Function):
    """sqrt whose derivative is clipped (bfloat16 training); forward is torch.sqrt."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sqrt(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output / torch.sqrt(torch.clip(4.0 * x, min=1000.0 ** -2))


class RGLRU(nn.Module):
    def __init__(self, width, num_heads):
        super().__init__()
        self.a_param = nn.Parameter(torch.rand([width]) + 0.5)
        self.input_gate = BlockDiagonalLinear(width, num_heads)
        self.a_gate = BlockDiagonalLinear(width, num_heads)

    def forward(self, x, segment_pos):
        reset = segment_pos == 0
        gate_x = torch.sigmoid(self.input_gate(x))
        gate_a = torch.sigmoid(self.a_gate(x))
        log_a = -8.0 * gate_a * nn.functional.softplus(self.a_param)
        a = torch.exp(log_a)
        a_square = torch.exp(2 * log_a)
        gated_x = x * gate_x
        multiplier = SqrtBoundDerivative.apply(1 - a_square)
        multiplier = reset[..., None] + ~reset[..., None] * multiplier
        normalized_x = gated_x * multiplier.type(x.dtype)
        y, _ = rnn_scan(x=normalized_x, a=a, reset=reset[..., None], h0=None)
        return y


class Conv1D(nn.Module):
    def __init__(self, width, temporal_width):
        super().__init__()
        self.temporal_width = temporal_width
        self.w = nn.Parameter(torch.randn([temporal_width, width]) * 0.1)
        self.b = nn.Parameter(torch.zeros([width]))

    def forward(self, x, segment_pos):
        prompt_len, output_len = 0, x.shape[1]  # training mode: the whole sequence is the input
        conv_output = 0.0
        temporal_width = min(self.temporal_width, prompt_len + output_len)
        for temporal_shift in range(temporal_width):
            start_idx = max(prompt_len - temporal_shift, 0)
            end_idx = prompt_len + output_len - temporal_shift
            x_window = x[:, start_idx:end_idx]
            window_mask = self._compute_document_mask(segment_pos, start_idx, end_idx, temporal_shift)
            x_window = x_window * window_mask[:, :, None]
            x_window = self._pad_window(x_window, output_len)
            w = self.w[self.temporal_width - temporal_shift - 1][None, None, :]
            conv_output += x_window * w
        conv_output += self.b[None, None]
        return conv_output

    def _compute_document_mask(self, segment_pos, start_idx, end_idx, max_look_ahead):
        batch_size = segment_pos.shape[0]
        not_boundary = (segment_pos != 0).type(torch.int32)
        mask = torch.ones((batch_size, end_idx - start_idx), device=segment_pos.device)
        for shift in range(1, max_look_ahead + 1):
            mask *= not_boundary[:, start_idx + shift:end_idx + shift]
        return mask

    def _pad_window(self, window, output_len):
        batch_size, window_len, width = window.shape
        padding = torch.zeros((batch_size, output_len - window_len, width), dtype=window.dtype, device=window.device)
        return torch.concatenate([padding, window], dim=1)


class RecurrentBlock(nn.Module):
    def __init__(self, width, num_heads, lru_width, conv1d_temporal_width=4):
        super().__init__()
        self.linear_y = nn.Linear(width, lru_width)
        self.linear_x = nn.Linear(width, lru_width)
        self.linear_out = nn.Linear(lru_width, width)
        self.conv_1d = Conv1D(lru_width, conv1d_temporal_width)
        self.rg_lru = RGLRU(lru_width, num_heads)

    def forward(self, x, segment_pos):
        y = F.gelu(self.linear_y(x), approximate="tanh")
        x = self.linear_x(x)
        x = self.conv_1d(x, segment_pos)
        x = self.rg_lru(x, segment_pos)
        return self.linear_out(x * y)


def apply_rope(inputs, positions, max_wavelength=10_000):
    x_rope, x = torch.chunk(inputs, 2, dim=-1)
    positions = positions[..., None, None]
    freq = torch.arange(x_rope.shape[-1] // 2, device=x.device)
    freq_exponents = 2 * freq / x_rope.shape[-1]
    timescale = max_wavelength ** freq_exponents
    inv_frequencies = 1.0 / timescale
    sinusoid_imp = positions * inv_frequencies
    sin, cos = torch.sin(sinusoid_imp).type_as(inputs), torch.cos(sinusoid_imp).type_as(inputs)
    first_half, second_half = torch.chunk(x_rope, 2, dim=-1)
    first_part = first_half * cos - second_half * sin
    second_part = second_half * cos + first_half * sin
    return torch.concatenate([first_part, second_part, x], dim=-1)


class LocalAttentionBlock(nn.Module):
    def __init__(self, width, num_heads, window_size):
        super().__init__()
        self.num_heads, self.head_dim, self.window_size = num_heads, width // num_heads, window_size
        self.proj_q = nn.Linear(width, width, bias=False)
        self.proj_k = nn.Linear(width, self.head_dim, bias=False)
        self.proj_v = nn.Linear(width, self.head_dim, bias=False)
        self.proj_final = nn.Linear(width, width)

    def forward(self, x, segment_pos):
        b, t, _ = x.shape
        queries = self.proj_q(x).reshape(b, t, self.num_heads, self.head_dim)
        keys = self.proj_k(x).reshape(b, t, 1, self.head_dim)
        values = self.proj_v(x).reshape(b, t, 1, self.head_dim)
        queries, keys = apply_rope(queries, segment_pos), apply_rope(keys, segment_pos)
        attn_mask = self._compute_forward_pass_mask(segment_pos, self.window_size)
        logits = torch.einsum("btnh,bsnh->bnts", queries, keys) * self.head_dim ** -0.5
        masked_logits = torch.where(attn_mask[:, None, :, :], logits, -2.3819763e38)
        probs = F.softmax(masked_logits.float(), dim=-1).type_as(x)
        encoded = torch.einsum("bnts,bsnh->btnh", probs, values)
        return self.proj_final(encoded.reshape(b, t, -1))

    @staticmethod
    def _compute_forward_pass_mask(segment_pos, window_size):
        segment_ids = torch.cumsum(segment_pos == 0, dim=-1)
        positions = torch.arange(segment_pos.shape[-1], device=segment_pos.device)
        positions = torch.repeat_interleave(positions[None], segment_pos.shape[0], dim=0)
        q_positions, k_positions = positions[..., None], positions[..., None, :]
        causal_mask = q_positions >= k_positions
        window_mask = q_positions <= k_positions + window_size
        same_segment_mask = segment_ids[..., :, None] == segment_ids[..., None, :]
        return causal_mask * window_mask * same_segment_mask


class MLPBlock(nn.Module):
    def __init__(self, width, expanded_width):
        super().__init__()
        self.ffw_up_w = nn.Parameter(torch.randn(2, width, expanded_width) * width ** -0.5)
        self.ffw_up_b = nn.Parameter(torch.zeros(2, 1, 1, expanded_width))
        self.ffw_down = nn.Linear(expanded_width, width)

    def forward(self, x):
        out = torch.einsum("...td,cdD->c...tD", x, self.ffw_up_w) + self.ffw_up_b
        gate_value = F.gelu(out[0], approximate="tanh")
        return self.ffw_down(gate_value * out[1])


class ResidualBlock(nn.Module):
    def __init__(self, width, num_heads, kind, window=4):
        super().__init__()
        self.temporal_pre_norm = RMSNorm(width)
        self.temporal_block = (RecurrentBlock(width, num_heads, width) if kind == "recurrent"
                               else LocalAttentionBlock(width, num_heads, window))
        self.channel_pre_norm = RMSNorm(width)
        self.mlp_block = MLPBlock(width, 3 * width)

    def forward(self, raw_x, segment_pos):
        x = self.temporal_block(self.temporal_pre_norm(raw_x), segment_pos)
        residual = x + raw_x
        return self.mlp_block(self.channel_pre_norm(residual)) + residual


class Griffin(nn.Module):
    def __init__(self, vocab=64, width=32, num_heads=2, pattern=("recurrent", "recurrent", "attention")):
        super().__init__()
        self.width = width
        self.embedder = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList([ResidualBlock(width, num_heads, kind) for kind in pattern])
        self.final_norm = RMSNorm(width)

    def forward(self, tokens, segment_pos):
        x = self.embedder(tokens) * self.width ** 0.5
        for block in self.blocks:
            x = block(x, segment_pos)
        x = self.final_norm(x)
        return x @ self.embedder.weight.T  # logits against the embedding (tied)
