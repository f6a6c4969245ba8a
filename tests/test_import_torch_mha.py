"""nn.MultiheadAttention in every form its forward takes imports as one `multihead_attention` node
(roles recorded while tracing, not guessed): self- and cross-attention, kdim/vdim, batch_first either
way, bool and float attn_mask, key_padding_mask, its weights read (averaged or per head), bias_k and
bias_v, zero attention, dropout; each spec computes the module's outputs with its state_dict."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from archgraph.load import load_text  # noqa: E402
from archgraph.torch import to_module, to_spec  # noqa: E402


class Cross(nn.Module):
    def __init__(self, batch_first=True, weights=False, average=True, **kw):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.attn = nn.MultiheadAttention(16, 4, batch_first=batch_first, **kw)
        self.weights, self.average = weights, average

    def forward(self, x, memory, pad=None, mask=None):
        out, w = self.attn(self.norm(x), memory, memory, key_padding_mask=pad, attn_mask=mask,
                           need_weights=self.weights, average_attn_weights=self.average)
        return (out, w) if self.weights else out


def _check(module, *inputs) -> dict:
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    module.eval()
    text = to_spec(module, *inputs)
    mine = to_module(load_text(text)).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    with torch.no_grad():
        ours = list(mine(*[i for i in inputs if i is not None]).values())
        theirs = module(*inputs)
    theirs = list(theirs) if isinstance(theirs, tuple) else [theirs]
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, atol=1e-5)
    (node,) = [line for line in text.splitlines() if "op: multihead_attention" in line]
    return node


def test_cross_attention_batch_first_with_a_padding_mask():
    x, mem = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    pad = torch.tensor([[False] * 7, [False] * 4 + [True] * 3])
    node = _check(Cross(), x, mem, pad)
    assert node == ("  - {name: attn, op: multihead_attention, in: {query: norm, key: memory, value: memory, "
                    "key_padding_mask: pad}, embed_dim: 16, num_heads: 4, batch_first: true}")


def test_sequence_first_kdim_vdim_a_float_mask_and_per_head_weights():
    module = Cross(batch_first=False, weights=True, average=False, kdim=12, vdim=10)

    class KV(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = module

        def forward(self, x, k, v, mask):
            out, w = module.attn(module.norm(x), k, v, attn_mask=mask, average_attn_weights=False)
            return out, w
    mask = torch.randn(5, 7)
    node = _check(KV(), torch.randn(5, 2, 16), torch.randn(7, 2, 12), torch.randn(7, 2, 10), mask)
    assert "kdim: 12, vdim: 10" in node and "average_attn_weights: false" in node and "attn_mask: mask" in node


def test_bias_kv_zero_attention_dropout_and_a_bool_causal_mask():
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    module = Cross(add_bias_kv=True, add_zero_attn=True, dropout=0.1, weights=True)
    node = _check(module, torch.randn(2, 5, 16), torch.randn(2, 5, 16), None, causal)
    assert "add_bias_kv: true, add_zero_attn: true, dropout: 0.1" in node


def test_self_attention_reads_one_tensor_three_times():
    class Self(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

        def forward(self, x):
            return self.attn(x, x, x, need_weights=False)[0]
    node = _check(Self(), torch.randn(2, 5, 16))
    assert "in: [x, x, x]" in node


class Decoder(nn.Module):
    """nn.TransformerDecoder with the causal tgt_mask nn.Transformer makes: the decoder finds the mask
    causal and calls self-attention with is_causal, which torch computes in place of the mask."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerDecoderLayer(16, 4, 32, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, 2)

    def forward(self, memory, tgt):
        return self.decoder(tgt, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(tgt.size(1)))


def test_a_decoders_causal_tgt_mask_is_the_is_causal_it_stands_for():
    # was "internal: no value for triu": the mask, tagged as attn_mask, is never read by torch
    text = to_spec(Decoder().eval(), torch.randn(2, 6, 16), torch.randn(2, 5, 16))
    attention = [line.strip() for line in text.splitlines() if "op: multihead_attention" in line]
    assert attention == [
        "- {name: self_attn, op: multihead_attention, in: [x, x, x], embed_dim: 16, num_heads: 4, dropout: 0.1, "
        "batch_first: true, is_causal: true}",
        "- {name: multihead_attn, op: multihead_attention, in: [norm1, x1, x1], embed_dim: 16, num_heads: 4, "
        "dropout: 0.1, batch_first: true}"]  # one layer's block (the two fold), x1 its memory input
    module = Decoder().eval()
    mine = to_module(load_text(to_spec(module, torch.randn(2, 6, 16), torch.randn(2, 5, 16)))).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    memory, tgt = torch.randn(2, 6, 16), torch.randn(2, 5, 16)
    with torch.no_grad():
        (ours,) = mine(memory, tgt).values()
        torch.testing.assert_close(ours, module(memory, tgt), rtol=1e-5, atol=1e-5)
