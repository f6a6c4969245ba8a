"""Qwen3-MoE and gpt-oss (the mixtral template's switches) beyond what the recorded fixtures
show: the public checkpoints' totals and active parameters, the layer schedules (dense layers,
sliding layers), and the configs the template refuses, by key."""
from __future__ import annotations

import json

import pytest
from conftest import write_config

from archgraph.errors import ArchgraphError
from archgraph.load import load_config

GPT_OSS_20B = {  # openai/gpt-oss-20b's config.json, as published (transformers 4.55)
    "architectures": ["GptOssForCausalLM"], "attention_bias": True, "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 2880, "intermediate_size": 2880, "max_position_embeddings": 131072, "model_type": "gpt_oss",
    "num_attention_heads": 64, "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8,
    "num_local_experts": 32, "rms_norm_eps": 1e-05, "rope_theta": 150000, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12, "swiglu_limit": 7.0,
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                     "rope_type": "yarn", "truncate": False},
    "tie_word_embeddings": False, "vocab_size": 201088}
QWEN3_30B_A3B = {  # Qwen/Qwen3-30B-A3B's config.json (its switches and sizes)
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False, "decoder_sparse_step": 1, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 6144, "max_position_embeddings": 40960,
    "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": True,
    "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
    "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
    "sliding_window": None, "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936}


def test_gpt_oss_20b_total_and_active_parameters(tmp_path, cli):
    code, out, _ = cli("params", write_config(tmp_path, **GPT_OSS_20B), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == 20_914_757_184  # GptOssForCausalLM on the meta device
    # a token leaves 28 of 32 experts per layer idle: 3 matrices 2880 x 2880 and 3 x 2880 biases each
    assert data["active"] == 20_914_757_184 - 24 * 28 * (3 * 2880 * 2880 + 3 * 2880) == 4_187_440_704


def test_qwen3_30b_a3b_total_and_active_parameters(tmp_path, cli):
    code, out, _ = cli("params", write_config(tmp_path, **QWEN3_30B_A3B), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == 30_532_122_624  # Qwen3MoeForCausalLM on the meta device
    assert data["active"] == 30_532_122_624 - 48 * 120 * (3 * 2048 * 768) == 3_353_032_704


def _layers(path) -> dict[str, object]:
    """Each layer's feed-forward op (lib.moe's: its experts) and attention window."""
    out = {}
    for node_path, node, *_ in load_config(path).params().nodes():
        if node_path.endswith((".mlp", ".mlp.experts")):
            out[node_path.split(".")[1] + ".mlp"] = node.op.op_name
        if node_path.endswith(".self_attn"):
            out[node_path.split(".")[1] + ".window"] = node.op.window
    return out


SMALL_QWEN = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeModel"], "vocab_size": 50, "hidden_size": 16,
              "num_hidden_layers": 5, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 12,
              "moe_intermediate_size": 4, "num_experts": 3, "num_experts_per_tok": 2}


def test_qwen3_moe_layer_schedule_follows_the_sparse_step_and_mlp_only_layers(tmp_path):
    path = write_config(tmp_path, **SMALL_QWEN, decoder_sparse_step=2, mlp_only_layers=[3],
                        use_sliding_window=True, sliding_window=4)
    layers = _layers(path)
    assert [layers[f"{i}.mlp"] for i in range(5)] == ["gated_mlp", "experts", "gated_mlp", "gated_mlp", "gated_mlp"]
    assert [layers[f"{i}.window"] for i in range(5)] == [4] * 5  # use_sliding_window: every layer


def test_qwen3_moe_without_experts_is_dense(tmp_path):
    layers = _layers(write_config(tmp_path, **{**SMALL_QWEN, "num_experts": 0}))
    assert {layers[f"{i}.mlp"] for i in range(5)} == {"gated_mlp"}


SMALL_OSS = {"model_type": "gpt_oss", "architectures": ["GptOssModel"], "vocab_size": 50, "hidden_size": 16,
             "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
             "intermediate_size": 6, "num_local_experts": 3, "num_experts_per_tok": 2}


def test_gpt_oss_layers_slide_every_other_one_unless_layer_types_say(tmp_path):
    layers = _layers(write_config(tmp_path, **SMALL_OSS))
    assert [layers[f"{i}.window"] for i in range(4)] == [128, None, 128, None]
    kinds = ["full_attention", "sliding_attention", "sliding_attention", "full_attention"]
    layers = _layers(write_config(tmp_path, **SMALL_OSS, layer_types=kinds, sliding_window=5))
    assert [layers[f"{i}.window"] for i in range(4)] == [None, 5, 5, None]
    layers = _layers(write_config(tmp_path, **SMALL_OSS, sliding_window=None))
    assert [layers[f"{i}.window"] for i in range(4)] == [None] * 4


def test_gpt_oss_rope_type_the_template_cannot_run_is_refused_by_key(tmp_path, cli):
    path = write_config(tmp_path, **SMALL_OSS, rope_parameters={"rope_type": "proportional", "rope_theta": 1e4,
                                                                 "partial_rotary_factor": 0.5})
    code, out, err = cli("params", path)
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}: 'rope_parameters.rope_type' is \"proportional\", which archgraph does "
                   "not know for model_type 'gpt_oss'\n  fix: known values: default, linear, dynamic, yarn, longrope, "
                   "llama3\n")


def test_gpt_oss_without_experts_is_refused(tmp_path, cli):
    code, out, err = cli("params", write_config(tmp_path, **{**SMALL_OSS, "num_local_experts": 0}))
    assert (code, out) == (2, "")
    assert "expected a positive integer. Received: experts=0" in err and "node 'mlp'" in err


SMALL_DEEPSEEK = dict(model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"], vocab_size=50, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, intermediate_size=37,
                      moe_intermediate_size=11, n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1,
                      first_k_dense_replace=1, q_lora_rank=12, kv_lora_rank=10, qk_nope_head_dim=6,
                      qk_rope_head_dim=4, v_head_dim=5)


def test_deepseek_v3_head_dim_other_than_the_rope_dims_is_refused(tmp_path):
    """transformers sizes DeepSeek-V3's rotary table by head_dim, which its config class sets to
    qk_rope_head_dim (and saves); another value computed other outputs while the key table
    dropped it (tools/audit_config_keys.py)."""
    saved = load_config(write_config(tmp_path, **SMALL_DEEPSEEK, head_dim=4)).params().total
    assert saved == load_config(write_config(tmp_path, **SMALL_DEEPSEEK)).params().total
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **SMALL_DEEPSEEK, head_dim=2))
    assert err.value.message.startswith("the 'deepseek_v3' template cannot be built with this config: head_dim "
                                        "must equal qk_rope_head_dim: transformers builds DeepSeek-V3's rotary table")


# ---- DeepSeek-V2 (issue 29): the recorded checkpoints' totals and active parameters, and the router
# settings transformers' DeepseekV2 does not compute, refused by key
def _fixture_config(name: str) -> dict:
    from pathlib import Path
    return json.loads((Path(__file__).parent / "data" / "hf" / f"{name}.json").read_text())["config"]


@pytest.mark.parametrize("name, total, moe_layers, idle_experts, hidden, width, active", [
    # DeepSeek-V2: 59 layers of 160 experts, 6 picked; DeepSeek-V2-Lite: 26 layers of 64, 6 picked
    ("deepseek_v2-deepseek-v2", 235_741_434_880, 59, 154, 5120, 1536, 21_375_800_320),
    ("deepseek_v2-deepseek-v2-lite", 15_706_484_224, 26, 58, 2048, 1408, 2_661_150_208),
])
def test_deepseek_v2_total_and_active_parameters(tmp_path, cli, name, total, moe_layers, idle_experts, hidden,
                                                 width, active):
    code, out, _ = cli("params", write_config(tmp_path, **_fixture_config(name)), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == total  # DeepseekV2ForCausalLM on the meta device
    assert data["active"] == total - moe_layers * idle_experts * 3 * hidden * width == active


@pytest.mark.parametrize("change, words", [
    ({"topk_method": "noaux_tc"}, "topk_method must be 'greedy' or 'group_limited_greedy'"),
    ({"mlp_bias": True}, "mlp_bias"),
    ({"num_experts_per_tok": None}, "num_experts_per_tok null"),
])
def test_deepseek_v2_refuses_what_transformers_does_not_compute(tmp_path, cli, change, words):
    config = {**_fixture_config("deepseek_v2-odd-groups-seqcls"), **change}
    code, _, err = cli("params", write_config(tmp_path, **config))
    assert code == 2 and words in err, err


# ---- Granite 4.0-H (issue 29): the recorded checkpoints' totals and active parameters; a token leaves
# all but num_experts_per_tok experts of each layer idle, the shared MLP and the Mamba-2 mixers not
@pytest.mark.parametrize("name, total, idle_experts, hidden, width, active", [
    ("granitemoehybrid-granite-4.0-h-tiny", 6_939_037_248, 64 - 6, 1536, 512, 1_465_470_528),
    ("granitemoehybrid-granite-4.0-h-small", 35_478_895_104, 72 - 10, 4096, 768, 12_074_678_784),
    ("granitemoehybrid-granite-4.0-h-micro", 3_191_396_096, 0, 2048, 8192, 3_191_396_096),   # no experts
])
def test_granite_4_h_total_and_active_parameters(tmp_path, cli, name, total, idle_experts, hidden, width, active):
    code, out, _ = cli("params", write_config(tmp_path, **_fixture_config(name)), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == total  # GraniteMoeHybridForCausalLM on the meta device
    assert data["active"] == total - 40 * idle_experts * 3 * hidden * width == active
# ---- PhiMoE (issue 29): Phi-3.5-MoE's total and active parameters (its published class name, PhiMoE, too),
# and what the template refuses
def test_phi_3_5_moe_total_and_active_parameters(tmp_path, cli):
    config = {**_fixture_config("phimoe-phi-3.5-moe-instruct"), "architectures": ["PhiMoEForCausalLM"]}
    code, out, _ = cli("params", write_config(tmp_path, **config), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == 41_873_153_344  # PhimoeForCausalLM on the meta device
    # the sparsemixer leaves 14 of 16 experts per layer idle: 3 matrices 4096 x 6400 each
    assert data["active"] == 41_873_153_344 - 32 * 14 * (3 * 4096 * 6400) == 6_640_999_744


@pytest.mark.parametrize("change, words", [
    ({"rope_scaling": {"type": "yarn", "factor": 2.0, "short_mscale": 1.0, "long_mscale": 1.0}},
     "other rope types are not in the template"),
    ({"rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4, "short_mscale": 1.1,
                       "original_max_position_embeddings": 16}},
     "longrope scaling needs short_mscale and long_mscale"),
])
def test_phimoe_refuses_what_the_template_cannot_compute(tmp_path, cli, change, words):
    config = {**_fixture_config("phimoe-odd-longrope-window-seqcls"), **change}
    code, _, err = cli("params", write_config(tmp_path, **config))
    assert code == 2 and words in err, err


# ---- ERNIE 4.5 MoE (issue 29): totals, trainable (the correction bias is a parameter without gradients) and
# active parameters of the recorded checkpoints
@pytest.mark.parametrize("name, total, moe_layers, idle, hidden, width, active", [
    ("ernie4_5_moe-ernie-4.5-21b-a3b", 21_825_437_888, 27, 58, 2560, 1536, 3_352_150_208),   # layers 1-27, 6 of 64
    ("ernie4_5_moe-ernie-4.5-300b-a47b", 299_484_163_264, 51, 56, 8192, 3584, 47_926_586_560),   # 3-53, 8 of 64
])
def test_ernie4_5_moe_total_trainable_and_active_parameters(tmp_path, cli, name, total, moe_layers, idle, hidden,
                                                           width, active):
    code, out, _ = cli("params", write_config(tmp_path, **_fixture_config(name)), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == total  # Ernie4_5_MoeForCausalLM on the meta device
    assert data["trainable"] == total - moe_layers * 64   # each MoE layer's [1, 64] e_score_correction_bias
    assert data["active"] == total - moe_layers * idle * 3 * hidden * width == active


# ---- DBRX (issue 29): the published checkpoints' total and active parameters; what the template refuses
@pytest.mark.parametrize("name", ["dbrx-dbrx-base", "dbrx-dbrx-instruct"])
def test_dbrx_total_and_active_parameters(tmp_path, cli, name):
    code, out, _ = cli("params", write_config(tmp_path, **_fixture_config(name)), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == 131_596_523_520  # DbrxForCausalLM on the meta device
    # 12 of 16 experts per layer idle: their rows of w1, v1 and w2, 10752 x 6144 each
    assert data["active"] == 131_596_523_520 - 40 * 12 * (3 * 10752 * 6144) == 36_469_708_800


@pytest.mark.parametrize("change, words", [
    ({"tie_word_embeddings": True}, "DBRX has no tied lm_head"),
    ({"attn_config": {"kv_n_heads": 3, "clip_qkv": 4.0}}, "attn_config.rope_theta"),
])
def test_dbrx_refuses_what_transformers_refuses(tmp_path, cli, change, words):
    config = {**_fixture_config("dbrx-odd-gqa-p2-gelu-base"), **change}
    code, _, err = cli("params", write_config(tmp_path, **config))
    assert code == 2 and words in err, err
