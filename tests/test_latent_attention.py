"""Multi-head latent attention (`latent_attention`) and the moe op's DeepSeek-V3 routing options
(sigmoid scores, a correction bias, group-limited top-k, scaling, shared experts), each on its
own: tensors, FLOPs, the cache, and what the module computes against a direct transcription of
the method (DeepSeek's own interleaved rotary layout, not archgraph's)."""
from __future__ import annotations

import json
import math

import pytest

from archgraph import SpecError
from archgraph.dims import symbol
from archgraph.errors import ShapeError
from archgraph.load import load_config
from archgraph.ops import REGISTRY
from archgraph.passes.flops import counted
from archgraph.passes.memory import estimate_memory

from conftest import spec_module

MLA = REGISTRY["latent_attention"]
MoE = REGISTRY["moe"]
B, S = symbol("B"), symbol("S")


def test_low_rank_queries_and_one_latent_for_keys_and_values():
    op = MLA(hidden=32, heads=4, kv_rank=10, nope_dim=6, rope_dim=4, v_dim=5, q_rank=12, bias=True)
    assert {t.name: t.shape for t in op.params()} == {
        "q_a_proj.weight": (12, 32), "q_a_proj.bias": (12,), "q_a_layernorm.weight": (12,),
        "q_b_proj.weight": (4 * (6 + 4), 12),
        "kv_a_proj_with_mqa.weight": (10 + 4, 32), "kv_a_proj_with_mqa.bias": (14,), "kv_a_layernorm.weight": (10,),
        "kv_b_proj.weight": (4 * (6 + 5), 10),
        "o_proj.weight": (32, 4 * 5), "o_proj.bias": (32,)}
    assert op.infer_shape((B, S, 32), (1, S, 4), (1, S, 4)) == (B, S, 32)
    # projections: 2 x tokens x (12*32 + 40*12 + 14*32 + 44*10 + 32*20); scores over 10 dims, values over 5
    assert op.flops([(2, 7, 32)], [(2, 7, 32)]) == 2 * 14 * (384 + 480 + 448 + 440 + 640) + 2 * 2 * 4 * 7 * 7 * 15


def test_without_q_rank_one_q_proj_and_no_biases():
    op = MLA(hidden=32, heads=4, kv_rank=10, nope_dim=6, rope_dim=4, v_dim=5)
    assert {t.name: t.shape for t in op.params()} == {
        "q_proj.weight": (40, 32), "kv_a_proj_with_mqa.weight": (14, 32), "kv_a_layernorm.weight": (10,),
        "kv_b_proj.weight": (44, 10), "o_proj.weight": (32, 20)}


def test_decoding_keeps_the_latent_and_the_rotary_key_per_token():
    op = MLA(hidden=7168, heads=128, kv_rank=512, nope_dim=128, rope_dim=64, v_dim=128, q_rank=1536)
    cache = op.cache([(B, S, 7168), (1, S, 64), (1, S, 64)], [(B, S, 7168)], True)
    assert (cache.per_token, cache.tokens) == (576, S)
    assert cache.rule == "latent (kv_rank 512 + rope_dim 64)"
    assert MLA(hidden=8, heads=2, kv_rank=4, nope_dim=2, rope_dim=2, v_dim=2, causal=False).cache(
        [(B, S, 8)], [(B, S, 8)], False) is None


@pytest.mark.parametrize("hp, words", [
    ({"q_rank": 0}, "q_rank=0"), ({"kv_rank": -1}, "kv_rank=-1"), ({"rotary": "pairs"}, "rotary"),
])
def test_refuses_what_it_cannot_build(hp, words):
    with pytest.raises(SpecError, match=words):
        MLA.build({"hidden": 32, "heads": 4, "kv_rank": 10, "nope_dim": 6, "rope_dim": 4, "v_dim": 5, **hp})


def test_the_rotary_table_must_have_rope_dim_columns():
    op = MLA(hidden=32, heads=4, kv_rank=10, nope_dim=6, rope_dim=4, v_dim=5)
    with pytest.raises(ShapeError, match="rope_dim"):
        op.infer_shape((2, 7, 32), (1, 7, 6), (1, 7, 6))


MLA_SPEC = """
inputs: {x: [B, S, 32]}
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 4}
  - {name: attn, op: latent_attention, in: {x: x, rope: "rot:0", rope_sin: "rot:1"}, hidden: 32, heads: 4,
     kv_rank: 10, nope_dim: 6, rope_dim: 4, v_dim: 5, q_rank: QR, rotary: ROT, scale: 0.3}
"""


@pytest.mark.parametrize("rotary, q_rank", [("interleaved", 12), ("half", "null")])
def test_the_module_computes_latent_attention(tmp_path, rotary, q_rank):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, MLA_SPEC.replace("QR", str(q_rank)).replace("ROT", rotary), 0.5)
    w = {k.removeprefix("attn."): v for k, v in module.state_dict().items()}
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        got = module(x=x)["attn"]

    def rms(t, weight):
        return weight * (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6))

    def turn(t, cos, sin):  # DeepSeek's layout: pairs (2i, 2i+1) rotated, evens first then odds
        if rotary == "half":
            return t * cos + torch.cat([-t[..., 2:], t[..., :2]], -1) * sin
        c, s_ = cos[..., :2], sin[..., :2]
        a, b = t[..., 0::2], t[..., 1::2]
        return torch.cat([a * c - b * s_, b * c + a * s_], -1)

    q = x @ w["q_proj.weight"].T if q_rank == "null" else \
        rms(x @ w["q_a_proj.weight"].T, w["q_a_layernorm.weight"]) @ w["q_b_proj.weight"].T
    q = q.view(2, 5, 4, 10).transpose(1, 2)
    kv_a = x @ w["kv_a_proj_with_mqa.weight"].T
    kv = (rms(kv_a[..., :10], w["kv_a_layernorm.weight"]) @ w["kv_b_proj.weight"].T).view(2, 5, 4, 11).transpose(1, 2)
    pos = torch.arange(5.0)[:, None] * (10000.0 ** (-torch.arange(0, 4, 2) / 4))[None]
    cos, sin = torch.cat([pos, pos], -1).cos(), torch.cat([pos, pos], -1).sin()
    query = torch.cat([q[..., :6], turn(q[..., 6:], cos, sin)], -1)
    key = torch.cat([kv[..., :6], turn(kv_a[..., 10:], cos, sin)[:, None].expand(-1, 4, -1, -1)], -1)
    scores = (query @ key.transpose(-1, -2) * 0.3).masked_fill(torch.ones(5, 5).triu(1).bool(), float("-inf"))
    out = (scores.softmax(-1) @ kv[..., 6:]).transpose(1, 2).reshape(2, 5, 20) @ w["o_proj.weight"].T
    assert (got - out).abs().max() < 1e-5


# ---- moe: DeepSeek-V3's routing --------------------------------------------------------------

def test_correction_bias_is_a_saved_buffer_and_shared_experts_are_active():
    op = MoE(hidden=16, intermediate=6, experts=8, top_k=2, scoring="sigmoid", correction_bias=True, groups=4,
             top_groups=2, scaling=2.5, shared=12)
    assert [(t.name, t.shape, t.persistent) for t in op.buffers()] == [("gate.e_score_correction_bias", (8,), True)]
    assert {t.name: t.shape for t in op.params()} == {
        "gate.weight": (8, 16), "experts.gate_up_proj": (8, 12, 16), "experts.down_proj": (8, 16, 6),
        "shared_experts.gate_proj.weight": (12, 16), "shared_experts.up_proj.weight": (12, 16),
        "shared_experts.down_proj.weight": (16, 12)}
    assert op.idle_params() == 6 * 3 * 16 * 6  # the six experts a token does not pick; shared ones always run
    # router 16 -> 8, then 2 experts of width 6 and the shared MLP of width 12, three projections each
    assert op.flops([(3, 16)], [(3, 16)]) == 2 * 3 * 16 * 8 + (2 * 6 + 12) * 3 * 2 * 3 * 16


def test_shared_zero_keeps_the_empty_tensors_transformers_builds():
    op = MoE(hidden=16, intermediate=6, experts=4, top_k=1, shared=0)
    assert {t.name: t.shape for t in op.params() if "shared" in t.name} == {
        "shared_experts.gate_proj.weight": (0, 16), "shared_experts.up_proj.weight": (0, 16),
        "shared_experts.down_proj.weight": (16, 0)}


@pytest.mark.parametrize("hp, words", [
    ({"groups": 3}, "groups=3 must divide experts=8"),
    ({"groups": 2, "top_groups": 4}, "top_groups=4"),
    ({"shared": -1}, "shared must be 0 or more"),
])
def test_moe_refuses_groups_that_do_not_fit(hp, words):
    with pytest.raises(SpecError, match=words):
        MoE(hidden=16, intermediate=6, experts=8, **hp)


MOE_SPEC = """
inputs: {x: [N, 4]}
nodes:
  - {name: mlp, op: moe, hidden: 4, intermediate: 3, experts: 4, top_k: K, scoring: "'sigmoid'",
     correction_bias: true, groups: 2, top_groups: 1, scaling: 2.0, normalize: NORM, shared: 5}
"""


@pytest.mark.parametrize("top_k, normalize", [(1, "true"), (2, "false")])
def test_group_limited_routing_with_a_correction_bias(tmp_path, top_k, normalize):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, MOE_SPEC.replace("K", str(top_k)).replace("NORM", normalize), 0.5)
    state = module.state_dict()
    with torch.no_grad():
        state["mlp.gate.weight"].copy_(torch.eye(4) * 4)  # the scores are sigmoid(4 x) of the input itself
        state["mlp.gate.e_score_correction_bias"].copy_(torch.tensor([0.3, 0.0, 0.0, 0.2]))
    # scores 0.98, 0.02, 0.77, 0.69; for the choice 1.28, 0.02, 0.77, 0.89: expert 0 is the best alone, but
    # group {2, 3} (1.66) beats group {0, 1} (1.30), and within it the bias puts expert 3 before 2
    x = torch.tensor([[1.0, -1.0, 0.3, 0.2]])
    with torch.no_grad():
        got = module(x=x)["mlp"]
    w = dict(state)

    def expert(e, t):
        gate, up = (t @ w["mlp.experts.gate_up_proj"][e].T).chunk(2, -1)
        return (torch.nn.functional.silu(gate) * up) @ w["mlp.experts.down_proj"][e].T

    scores = torch.sigmoid(4 * x[0])
    picked = [3] if top_k == 1 else [3, 2]
    weights = scores[picked] / (scores[picked].sum() if normalize == "true" else 1)
    shared = (torch.nn.functional.silu(x @ w["mlp.shared_experts.gate_proj.weight"].T) *
              (x @ w["mlp.shared_experts.up_proj.weight"].T)) @ w["mlp.shared_experts.down_proj.weight"].T
    want = sum(2.0 * wt * expert(e, x) for wt, e in zip(weights, picked)) + shared
    assert (got - want).abs().max() < 1e-5


# ---- DeepSeek-V3 itself: its config.json as published (the keys transformers reads) ----------------
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "attention_bias": False,
               "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432,
               "kv_lora_rank": 512, "max_position_embeddings": 163840, "moe_intermediate_size": 2048,
               "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1,
               "norm_topk_prob": True, "num_attention_heads": 128, "num_experts_per_tok": 8,
               "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1,
               "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
               "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                                "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"},
               "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
               "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc", "v_head_dim": 128,
               "vocab_size": 129280}


@pytest.fixture(scope="module")
def deepseek_v3(tmp_path_factory):
    path = tmp_path_factory.mktemp("deepseek") / "config.json"
    path.write_text(json.dumps(DEEPSEEK_V3))
    return load_config(path)


def test_deepseek_v3_has_671b_parameters_of_which_37b_active(deepseek_v3):
    report = deepseek_v3.params()
    assert report.total == 671_026_404_352  # DeepseekV3ForCausalLM(config) on the meta device, the same
    # a token skips 248 of 256 routed experts (3 x 7168 x 2048 each) in the 58 MoE layers
    assert report.totals.active == 671_026_404_352 - 58 * 248 * 3 * 7168 * 2048 == 37_552_282_624


def test_deepseek_v3_caches_its_latent_layer_by_layer(deepseek_v3):
    m = estimate_memory(deepseek_v3, {"B": 1, "S": 4096})
    assert [(e.path, e.layers, e.width, e.context, e.rule) for e in m.kv_cache] == [
        ("model.layers.0.self_attn", 3, 576, 4096, "latent (kv_rank 512 + rope_dim 64)"),
        ("model.layers.3.self_attn", 58, 576, 4096, "latent (kv_rank 512 + rope_dim 64)")]
    assert m.kv_cache_bytes == 61 * (512 + 64) * 4096 * 2  # bf16: 275 MiB, where MHA's keys and values take 61 x 2 x 128 x 192 / 576 times more


def test_deepseek_v3_scores_take_yarns_mscale(deepseek_v3):
    (scale,) = {n.op.scale for n in _ops(deepseek_v3, "latent_attention")}
    assert scale == pytest.approx(192 ** -0.5 * (0.1 * math.log(40) + 1) ** 2)  # 0.13523 in transformers


def _ops(model, name):
    return [node for _, node, *_ in counted(model.shapes(B=1, S=8).run) if node.op.op_name == name]


YARN_SPEC = """
inputs: {x: [B, S]}
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 8, scaling: "'yarn'", factor: 4.0, original_max: 16,
     attention_factor: 1.5}
"""


def test_yarn_divides_the_slow_frequencies_by_the_factor(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, YARN_SPEC)
    (inv_freq,) = [b for name, b in module.named_buffers() if name.endswith("inv_freq")]
    plain = 10000.0 ** (-torch.arange(0, 8, 2) / 8)
    # dims turning more than 32 times over 16 positions: none below 8*ln(16/(64*pi))/(2*ln(1e4)) < 0 (kept: 0);
    # fewer than once: from ceil(8*ln(16/(2*pi))/(2*ln(1e4))) = 1 on (divided by 4); no dim between
    assert torch.allclose(inv_freq, plain / torch.tensor([1.0, 4.0, 4.0, 4.0]))
    with torch.no_grad():
        cos = module(x=torch.zeros(1, 3, dtype=torch.long))["rot"]  # the first output
    assert torch.allclose(cos[0, 0], torch.full((8,), 1.5))  # position 0: cos 1, times attention_factor


def test_yarn_needs_its_original_length():
    with pytest.raises(SpecError, match="original_max"):
        REGISTRY["rotary_embedding"](head_dim=8, scaling="yarn", factor=4.0)
