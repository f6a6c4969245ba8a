"""The constructs Gemma 2 and 3 brought, each on its own and computed by hand: the `softcap` op,
attention's `softcap` and `qk_norm_offset`, embedding's `scale` (a buffer state_dict() leaves
out) and rotary_embedding's linear `factor`."""
from __future__ import annotations

import math

import pytest

from conftest import spec_module

torch = pytest.importorskip("torch")


def test_softcap_bounds_smoothly(tmp_path):
    module = spec_module(tmp_path, "inputs: {x: [B, 4]}\nnodes:\n  - {name: c, op: softcap, in: x, cap: 2.0}\n",
                         0.5)
    x = torch.tensor([[0.0, 0.01, 3.0, -100.0]])
    got = module(x=x)["c"]
    assert got[0, 0] == 0 and abs(got[0, 1].item() - 0.01) < 1e-6   # near the identity for small x
    assert abs(got[0, 2].item() - 2 * math.tanh(1.5)) < 1e-6
    assert abs(got[0, 3].item() + 2.0) < 1e-6                        # never beyond -cap


ATTENTION = """
inputs: {x: [B, S, 16]}
nodes:
  - {name: attn, op: attention, in: x, hidden: 16, heads: 2, causal: true, qkv_bias: false,
     out_bias: false, softcap: CAP, qk_norm: head, qk_norm_offset: OFFSET, scale: 0.7}
"""


@pytest.mark.parametrize("cap, offset", [(0.3, 0), (None, 1), (0.3, 1)])
def test_attention_caps_scores_before_the_mask_and_offsets_its_qk_norms(tmp_path, cap, offset):
    text = ATTENTION.replace("CAP", "null" if cap is None else str(cap)).replace("OFFSET", str(offset))
    module = spec_module(tmp_path, text, 0.5)
    state = dict(module.state_dict())
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        got = module(x=x)["attn"]

    def rms(t, w):
        return (offset + w) * (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6))

    q, k, v = ((x @ state[f"attn.{n}_proj.weight"].T).view(2, 5, 2, 8).transpose(1, 2) for n in "qkv")
    q, k = rms(q, state["attn.q_norm.weight"]), rms(k, state["attn.k_norm.weight"])
    scores = (q @ k.transpose(-1, -2)) * 0.7
    if cap is not None:
        scores = cap * torch.tanh(scores / cap)
    scores = scores.masked_fill(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), float("-inf"))
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(2, 5, 16) @ state["attn.o_proj.weight"].T
    assert (got - out).abs().max().item() < 1e-5


def test_scaled_embedding_keeps_its_scale_out_of_the_state_dict(tmp_path):
    module = spec_module(tmp_path, "inputs: {ids: {shape: [B, S], dtype: int64}}\nnodes:\n"
                                   "  - {name: emb, op: embedding, in: ids, num_embeddings: 10, embedding_dim: 4, "
                                   "scale: 2.5}\n", 0.5)
    assert list(module.state_dict()) == ["emb.weight"]
    assert dict(module.named_buffers())["emb.embed_scale"].item() == 2.5
    ids = torch.tensor([[1, 7]])
    assert torch.equal(module(ids=ids)["emb"], 2.5 * module.state_dict()["emb.weight"][ids])


def test_rotary_factor_interpolates_positions(tmp_path):
    module = spec_module(tmp_path, "inputs: {x: [B, S]}\nnodes:\n"
                                   "  - {name: rope, op: rotary_embedding, in: x, head_dim: 4, base: 100.0, "
                                   "scaling: linear, factor: 4.0}\noutputs: {cos: 'rope:0', sin: 'rope:1'}\n", 0.5)
    out = module(x=torch.zeros(1, 3))
    cos, sin = out["cos"], out["sin"]
    inv = 1.0 / (100.0 ** (torch.arange(0, 4, 2).float() / 4)) / 4.0
    angles = torch.arange(3).float()[:, None] * inv
    assert torch.allclose(cos[0], torch.cat([angles.cos()] * 2, -1))
    assert torch.allclose(sin[0], torch.cat([angles.sin()] * 2, -1))

