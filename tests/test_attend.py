"""attention.attend, the core every attention op runs: its fused path (torch's
scaled_dot_product_attention) computes what the written-out softmax computes, for every mask it
builds, and a query that sees no key averages every value (never NaN) as the eager path does."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from archgraph.ops.attention import attend  # noqa: E402


def _written_out(q, k, v, scale, bias, hidden):
    """softmax(q·kᵀ·scale + bias, hidden keys at the lowest float) · v, keys repeated per group."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-1, -2) * scale + (0 if bias is None else bias)
    scores = scores.masked_fill(hidden, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) @ v


def _tensors(s, t, heads=4, kv_heads=2, d=8):
    torch.manual_seed(0)
    return (torch.randn(2, heads, s, d), torch.randn(2, kv_heads, t, d), torch.randn(2, kv_heads, t, d),
            torch.randn(1, heads, s, t))


def _positions(s, t):
    return torch.arange(s)[:, None] + (t - s), torch.arange(t)[None, :]   # query i, key j


@pytest.mark.parametrize("s, t, causal, window, both, use_bias", [
    (6, 6, True, None, False, False),     # decoder self-attention
    (3, 7, True, None, False, True),      # queries at the end of a longer key sequence, a bias (T5, ALiBi)
    (6, 6, True, 2, False, False),        # a sliding window (Mistral)
    (6, 6, False, 2, True, True),         # a window on both sides (ModernBERT's local attention)
    (5, 4, False, None, False, True),     # cross-attention, nothing hidden but by the bias
])
def test_fused_attention_is_the_written_out_softmax(s, t, causal, window, both, use_bias):
    q, k, v, bias = _tensors(s, t)
    i, j = _positions(s, t)
    hidden = (j > i) if causal else torch.zeros(s, t, dtype=torch.bool)
    if window is not None:
        hidden = hidden | (((i - j).abs() if both else i - j) >= window)
    bias = bias if use_bias else None
    got = attend(torch, q, k, v, 0.3, bias, causal, window, both_sides=both)
    want = _written_out(q, k, v, 0.3, bias, hidden)
    assert got.shape == (2, 4, s, 8)
    assert (got - want).abs().max().item() < 1e-5


def test_a_query_that_sees_no_key_averages_every_value():
    """Left padding under a causal mask: row 0's first two positions are padding, so its query 0
    sees no key.  Its output is the mean of the values (the eager path's uniform softmax), the
    others are the written-out softmax over the keys they may see."""
    q, k, v, _ = _tensors(5, 5)
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    got = attend(torch, q, k, v, None, None, True, None, mask=mask)
    i, j = _positions(5, 5)
    hidden = (j > i) | (mask == 0)[:, None, None, :]
    want = _written_out(q, k, v, 8 ** -0.5, None, hidden)
    assert not got.isnan().any()
    assert (got - want).abs().max().item() < 1e-5
    mean = v.repeat_interleave(2, dim=1)[0].mean(dim=-2)   # [heads, d]: every key of row 0, equally
    assert (got[0, :, 0] - mean).abs().max().item() < 1e-5


def test_gradients_reach_queries_keys_values_and_the_bias():
    q, k, v, bias = (x.requires_grad_() for x in _tensors(4, 4))
    attend(torch, q, k, v, 0.5, bias, True, None).square().sum().backward()
    fused = [x.grad.clone() for x in (q, k, v, bias)]
    for x in (q, k, v, bias):
        x.grad = None
    i, j = _positions(4, 4)
    _written_out(q, k, v, 0.5, bias, j > i).square().sum().backward()
    for name, got, x in zip("qkv", fused, (q, k, v)):
        assert (got - x.grad).abs().max().item() < 1e-5, name
    assert (fused[3] - bias.grad).abs().max().item() < 1e-5
