"""GPT-2, OPT, GPT-NeoX, BLOOM and Falcon configs beyond the recorded fixtures: the
defaults of a config that gives only its model_type (transformers' config defaults,
recorded with transformers 5.23.0), the switches that pick tensors, import-hf round
trips, and the errors for classes and layouts the families do not have."""
from __future__ import annotations

import pytest

from archgraph.errors import ArchgraphError
from archgraph.commands.import_hf import spec_text
from archgraph.load import load_config
from archgraph.load import load

from conftest import write_config


def _tensors(tmp_path, **config) -> dict[str, list[int]]:
    return {t: list(row.shape) for t, row in load_config(write_config(tmp_path, **config)).params().tensors()}


def test_falcon_layer_norms_follow_parallel_attn_and_num_ln_in_parallel_attn(tmp_path):
    base = dict(model_type="falcon", architectures=["FalconModel"], hidden_size=8, num_attention_heads=2,
                num_hidden_layers=1, vocab_size=10)
    def norms(**switches):
        return sorted(t[len("h.0."):-len(".weight")] for t in _tensors(tmp_path, **base, **switches)
                      if t.startswith("h.0.") and t.endswith(("norm.weight", "ln_attn.weight", "ln_mlp.weight")))
    assert norms() == ["input_layernorm"]
    assert norms(new_decoder_architecture=True) == ["ln_attn", "ln_mlp"]
    assert norms(new_decoder_architecture=True, num_ln_in_parallel_attn=1) == ["input_layernorm"]
    assert norms(num_ln_in_parallel_attn=2) == ["ln_attn", "ln_mlp"]
    assert norms(parallel_attn=False) == ["input_layernorm", "post_attention_layernorm"]
    assert norms(parallel_attn=False, new_decoder_architecture=True) == ["input_layernorm", "post_attention_layernorm"]


@pytest.mark.parametrize("switches, rows", [
    ({}, 8 + 2 * 4),                                                     # multi_query: one k and one v head
    ({"multi_query": False}, 3 * 8),                                     # full multi-head
    ({"new_decoder_architecture": True, "num_kv_heads": 1}, (2 + 2) * 4),
    ({"new_decoder_architecture": True}, (2 + 2 * 2) * 4),               # num_kv_heads defaults to the heads
])


def test_falcon_query_key_value_width(tmp_path, switches, rows):
    shapes = _tensors(tmp_path, model_type="falcon", architectures=["FalconModel"], hidden_size=8,
                      num_attention_heads=2, num_hidden_layers=1, vocab_size=10, **switches)
    assert shapes["h.0.self_attention.query_key_value.weight"] == [rows, 8]


def test_opt_projects_in_and_out_only_when_word_embed_proj_dim_differs(tmp_path):
    base = dict(model_type="opt", architectures=["OPTForCausalLM"], hidden_size=8, num_attention_heads=2,
                num_hidden_layers=1, vocab_size=10, ffn_dim=4)
    shapes = _tensors(tmp_path, **base, word_embed_proj_dim=6)
    assert shapes["model.decoder.project_in.weight"] == [8, 6]
    assert shapes["model.decoder.project_out.weight"] == [6, 8]
    assert shapes["model.decoder.embed_tokens.weight"] == shapes["lm_head.weight"] == [10, 6]
    assert not [t for t in _tensors(tmp_path, **base, word_embed_proj_dim=8) if "project" in t]


def test_import_hf_round_trips_for_every_family(tmp_path):
    configs = [
        dict(model_type="gpt2", architectures=["GPT2LMHeadModel"], n_embd=12, n_head=3, n_layer=2, vocab_size=20,
             add_cross_attention=True, tie_word_embeddings=False),
        dict(model_type="opt", architectures=["OPTForCausalLM"], hidden_size=8, num_attention_heads=2,
             num_hidden_layers=2, word_embed_proj_dim=4, do_layer_norm_before=False, vocab_size=20),
        dict(model_type="gpt_neox", architectures=["GPTNeoXForCausalLM"], hidden_size=16, num_attention_heads=2,
             num_hidden_layers=2, intermediate_size=8, rotary_pct=0.5, vocab_size=20),
        dict(model_type="bloom", architectures=["BloomForTokenClassification"], hidden_size=8, n_head=2, n_layer=2,
             vocab_size=20, num_labels=3),
        dict(model_type="falcon", architectures=["FalconForCausalLM"], hidden_size=12, num_attention_heads=3,
             num_hidden_layers=2, new_decoder_architecture=True, num_kv_heads=1, vocab_size=20),
    ]
    for config in configs:
        path = write_config(tmp_path, **config)
        spec = tmp_path / "spec.yaml"
        spec.write_text(spec_text(path))
        imported, direct = load(str(spec)).params(), load_config(path).params()
        assert imported.total == direct.total
        assert list(imported.tensors()) == list(direct.tensors())


def test_a_class_the_family_does_not_have_is_refused(tmp_path):
    path = write_config(tmp_path, model_type="opt", architectures=["OPTForTokenClassification"])
    with pytest.raises(ArchgraphError) as err:
        load_config(path)
    assert err.value.message == "model class 'OPTForTokenClassification' is not supported for model_type 'opt'"
    assert "ForCausalLM" in err.value.hint and "ForTokenClassification" not in err.value.hint


def test_falcon_key_value_heads_that_do_not_divide_the_heads_are_refused(tmp_path):
    path = write_config(tmp_path, model_type="falcon", hidden_size=16, num_attention_heads=4, num_kv_heads=3,
                        new_decoder_architecture=True, num_hidden_layers=1, vocab_size=10)
    with pytest.raises(ArchgraphError, match="heads=4 is not a multiple of kv_heads=3"):
        load_config(path)


def test_helium_heads_that_do_not_span_the_hidden_size_are_refused(tmp_path):
    # HeliumAttention's o_proj is [hidden, hidden]: transformers builds [64, 64] here and cannot run it
    path = write_config(tmp_path, model_type="helium", hidden_size=64, num_attention_heads=4, head_dim=8,
                        num_key_value_heads=4, num_hidden_layers=1, vocab_size=50, intermediate_size=20)
    with pytest.raises(ArchgraphError, match="num_attention_heads x head_dim must equal hidden_size"):
        load_config(path)
    fits = write_config(tmp_path, model_type="helium", hidden_size=64, num_attention_heads=4, head_dim=16,
                        num_key_value_heads=4, num_hidden_layers=1, vocab_size=50, intermediate_size=20)
    assert load_config(fits).params().total == 50 * 64 + 4 * 64 * 64 + 3 * 64 * 20 + 3 * 64   # HeliumModel
