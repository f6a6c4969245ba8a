"""Attention and feed-forward dropout: the attention ops' `dropout` zeroes attention probabilities (the rest scaled
by 1/(1 - p)) in training only, as transformers' eager and sdpa attention apply
config.attention_dropout, and mlp's and gated_mlp's `dropout` zeroes their intermediate activations;
in eval, and at p = 0, nothing changes."""
from __future__ import annotations

import pytest

from archgraph import SpecError
from archgraph.ops import REGISTRY

from conftest import spec_module

torch = pytest.importorskip("torch")

from archgraph.ops.attention import attend  # noqa: E402


@pytest.mark.parametrize("softcap", [None, 50.0])   # torch's fused sdpa, and the written-out softmax
def test_attend_drops_probabilities_and_rescales_the_rest(softcap):
    # q = k = 0: every probability is 1/T; v the identity: the output is the probabilities
    t = 8
    q, k = torch.zeros(4, 2, 16, 4), torch.zeros(4, 2, t, 4)
    v = torch.eye(t).expand(4, 2, t, t)
    torch.manual_seed(0)
    probs = attend(torch, q, k, v, None, None, False, None, softcap=softcap, dropout=0.25)
    kept = probs != 0
    assert torch.allclose(probs[kept], torch.full_like(probs[kept], 1 / t / 0.75))   # kept: scaled by 1/(1 - p)
    assert 0.70 < kept.float().mean().item() < 0.80   # 4·2·16·8 = 1024 draws, p = 0.25: 0.75 kept
    assert torch.equal(attend(torch, q, k, v, None, None, False, None, softcap=softcap), torch.full_like(probs, 1 / t))


@pytest.mark.parametrize("name", ["attention", "sdpa", "latent_attention", "disentangled_attention", "mlp",
                                  "gated_mlp"])
def test_dropout_must_be_a_probability(name):
    op = REGISTRY[name]
    args = {"attention": {"hidden": 8, "heads": 2}, "sdpa": {"heads": 2},
            "mlp": {"hidden": 8, "intermediate": 16}, "gated_mlp": {"hidden": 8, "intermediate": 16},
            "latent_attention": {"hidden": 8, "heads": 2, "kv_rank": 4, "nope_dim": 2, "rope_dim": 2, "v_dim": 2},
            "disentangled_attention": {"hidden": 8, "heads": 2, "span": 4}}[name]
    assert op(**args, dropout=0.5).dropout == 0.5
    with pytest.raises(SpecError, match=r"dropout must be a probability in \[0, 1\); received 1.0"):
        op(**args, dropout=1.0)


SPECS = {
    "mlp": """
inputs: {x: [B, S, 16]}
nodes:
  - {name: attn, op: mlp, in: x, hidden: 16, intermediate: 32, dropout: P}
""",
    "gated_mlp": """
inputs: {x: [B, S, 16]}
nodes:
  - {name: attn, op: gated_mlp, in: x, hidden: 16, intermediate: 32, dropout: P}
""",
    "attention": """
inputs: {x: [B, S, 16]}
nodes:
  - {name: attn, op: attention, in: x, hidden: 16, heads: 4, causal: true, dropout: P}
""",
    "sdpa": """
inputs: {x: [B, S, 16]}
nodes:
  - {name: attn, op: sdpa, in: [x, x, x], heads: 4, dropout: P}
""",
    "latent_attention": """
inputs: {x: [B, S, 16]}
nodes:
  - {name: attn, op: latent_attention, in: x, hidden: 16, heads: 4, kv_rank: 8, nope_dim: 4, rope_dim: 2,
     v_dim: 4, dropout: P}
""",
    "disentangled_attention": """
inputs: {x: [B, S, 16]}
nodes:
  - {name: rel, op: parameter, shape: [8, 16]}
  - {name: attn, op: disentangled_attention, in: [x, rel], hidden: 16, heads: 4, span: 4, dropout: P}
""",
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_dropout_acts_in_training_only(tmp_path, name):
    x = torch.randn(2, 6, 16)
    plain = spec_module(tmp_path, SPECS[name].replace("P", "0.0"), 0.5)
    dropping = spec_module(tmp_path, SPECS[name].replace("P", "0.5"), 0.5)
    with torch.no_grad():
        want = plain(x=x)["attn"]
        assert torch.equal(dropping(x=x)["attn"], want)             # eval: no dropout
        assert torch.equal(plain.train()(x=x)["attn"], want)        # p = 0: training computes the same
        torch.manual_seed(1)
        first = dropping.train()(x=x)["attn"]
        torch.manual_seed(1)
        again = dropping(x=x)["attn"]
    assert not torch.allclose(first, want, atol=1e-3)               # p > 0 in training: other outputs
    assert torch.equal(first, again)                                # drawn from torch's generator
