"""Gemma 2 and Gemma 3 (text) through specs/hf/gemma2.yaml, beyond what the recorded fixtures
show: the published sizes, the decoding cache of sliding and full layers, the buffers
transformers registers, the switches refused by name, and which rotary tables exist."""
from __future__ import annotations

import pytest
from conftest import write_config

from archgraph.load import load_config

GEMMA2_9B = {"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "hidden_size": 3584,
             "intermediate_size": 14336, "num_hidden_layers": 42, "num_attention_heads": 16,
             "num_key_value_heads": 8, "head_dim": 256, "vocab_size": 256000, "sliding_window": 4096}
GEMMA3_1B = {"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "hidden_size": 1152,
             "intermediate_size": 6912, "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
             "head_dim": 256, "vocab_size": 262144, "sliding_window": 512, "sliding_window_pattern": 6,
             "rope_theta": 1000000, "rope_local_base_freq": 10000, "rope_scaling": None}


def test_published_sizes(tmp_path):  # transformers 5.23 on the meta device gives the same totals
    assert load_config(write_config(tmp_path, **GEMMA2_9B)).params().total == 9_241_705_984
    assert load_config(write_config(tmp_path, **GEMMA3_1B)).params().total == 999_885_952


@pytest.mark.parametrize("config, total", [   # transformers 5.23 on the meta device, every key absent
    ({"model_type": "gemma2"}, 2_614_341_888),                                          # Gemma2Model
    ({"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"]}, 2_628_658_432),
])
def test_absent_keys_take_the_config_class_defaults(tmp_path, config, total):
    # the fixtures keep one layer (the parity test builds them in transformers); these, all 26
    assert load_config(write_config(tmp_path, **config)).params().total == total


def test_sliding_layers_cache_the_window_and_full_layers_every_token(tmp_path):
    cache = _cache(write_config(tmp_path, **GEMMA2_9B), S=8192)
    per_token = 2 * 8 * 256  # keys and values: kv_heads x head_dim each
    assert {rule for rule, _, _ in cache} == {"sliding window of 4096", "full attention"}
    assert sum(layers * tokens * per_token for _, layers, tokens in cache) == 21 * per_token * (4096 + 8192)


def test_short_sequences_fill_less_than_the_window(tmp_path):
    cache = _cache(write_config(tmp_path, **GEMMA3_1B), S=100)
    assert {(rule, tokens) for rule, _, tokens in cache} == {("sliding window of 512", 100), ("full attention", 100)}
    assert sum(layers for _, layers, _ in cache) == 26


def _cache(path, **sizes):
    from archgraph.passes.memory import estimate_memory
    report = estimate_memory(load_config(path), {"B": 1, **sizes})
    return [(e.rule, e.layers, e.context) for e in report.kv_cache]


def _buffers(path) -> dict:
    rows = load_config(path).params().nodes()
    return {f"{node_path}.{r.name}": (tuple(r.shape), r.persistent)
            for node_path, _, _, tensors in rows for r in tensors if r.buffer}


def test_buffers_are_registered_as_transformers_does(tmp_path):
    assert _buffers(write_config(tmp_path, **GEMMA3_1B)) == {
        "model.embed_tokens.embed_scale": ((), False),   # sqrt(hidden), a 0-d buffer state_dict() leaves out
        "model.rotary_emb.full_attention_inv_freq": ((128,), False),      # the full layers' table
        "model.rotary_emb.full_attention_original_inv_freq": ((128,), False),
        "model.rotary_emb.sliding_attention_inv_freq": ((128,), False),   # the sliding layers' (local base)
        "model.rotary_emb.sliding_attention_original_inv_freq": ((128,), False)}


@pytest.mark.parametrize("layers, tables", [
    ({"num_hidden_layers": 2}, ["sliding_attention"]),     # 2 layers of a pattern of 6: all slide
    ({"layer_types": ["full_attention"] * 3, "num_hidden_layers": 3}, ["full_attention"]),
    ({"num_hidden_layers": 3, "sliding_window_pattern": 1}, ["full_attention"]),  # every layer full
])
def test_gemma3_builds_only_the_rotary_tables_its_layers_use(tmp_path, layers, tables):
    found = _buffers(write_config(tmp_path, **{**GEMMA3_1B, **layers}))
    assert sorted(k for k in found if "rotary" in k) == [f"model.rotary_emb.{kind}_{b}" for kind in tables
                                                         for b in ("inv_freq", "original_inv_freq")]


def test_gemma2_shares_one_rotary_table(tmp_path):
    found = _buffers(write_config(tmp_path, **GEMMA2_9B))
    assert sorted(found) == ["model.embed_tokens.embed_scale", "model.rotary_emb.inv_freq",
                             "model.rotary_emb.original_inv_freq"]


@pytest.mark.parametrize("config, key, why", [
    ({"model_type": "gemma2", "use_bidirectional_attention": True}, "use_bidirectional_attention",
     "attention without the causal mask is not in the template"),
    ({"model_type": "gemma3_text", "use_bidirectional_attention": True}, "use_bidirectional_attention",
     "attention without the causal mask is not in the template"),
])
def test_switches_the_template_cannot_build_are_refused_by_name(tmp_path, cli, config, key, why):
    path = write_config(tmp_path, **config)
    code, out, err = cli("params", path)
    assert (code, out) == (2, "")
    assert err.startswith(f"archgraph: error: {path}: '{key}' is set, but archgraph's '{config['model_type']}' "
                          f"template cannot build it: {why}\n")


@pytest.mark.parametrize("rope, key", [   # the full layers take every type the rotary op computes
    ({"rope_scaling": {"rope_type": "proportional", "factor": 8.0}}, "rope_scaling.rope_type"),
    ({"rope_parameters": {"full_attention": {"rope_type": "proportional", "factor": 2.0, "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
     "rope_parameters.full_attention.rope_type"),
    ({"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}},
     "rope_parameters.sliding_attention.rope_type"),
])
def test_gemma3_rope_types_archgraph_cannot_compute_are_refused_by_name(tmp_path, cli, rope, key):
    path = write_config(tmp_path, model_type="gemma3_text", **rope)
    code, _, err = cli("params", path)
    assert code == 2
    assert f"'{key}' is " in err and "which archgraph does not know for model_type 'gemma3_text'" in err


def test_memory_table_gives_one_cache_row_per_rule(tmp_path):
    # Gemma 3 27B's schedule (Gemma3TextModel): 5 sliding layers then a full one, 10 times, and 2 sliding
    from archgraph.passes.memory import estimate_memory
    from archgraph.render.memory import cache_rows
    config = write_config(tmp_path, model_type="gemma3_text", num_hidden_layers=62, hidden_size=64,
                          intermediate_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                          vocab_size=100, sliding_window=1024)
    report = estimate_memory(load_config(config), {"B": 1, "S": 8192})
    assert len(report.kv_cache) == 21
    per_token = 2 * 16  # keys and values: 1 kv head x 16
    assert cache_rows(report.kv_cache) == [
        ("cache, sliding window of 1024: 52 of layers (0..4, 6..10, 12..16, ..., 60..61), self_attn "
         f"({per_token} values/token, 1,024 tokens)", 52 * 1024 * per_token * 2),
        ("cache, full attention: 10 of layers (5, 11, 17, ..., 59), self_attn "
         f"({per_token} values/token, 8,192 tokens)", 10 * 8192 * per_token * 2),
    ]
