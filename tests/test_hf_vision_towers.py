"""Vision towers of issue 29 (DINOv3, Qwen2.5-VL's, Qwen3-VL's, Mllama's): what their templates
refuse by name, and the sizes their inputs take (counts and parity: test_hf_configs.py,
test_torch_hf.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from archgraph.errors import ArchgraphError
from archgraph.load import load_config
from conftest import write_config

DINOV3 = dict(model_type="dinov3_vit", architectures=["DINOv3ViTModel"], hidden_size=32, num_attention_heads=4,
              intermediate_size=40, num_hidden_layers=2, image_size=32, patch_size=8, num_register_tokens=2)


def test_dinov3_puts_the_class_and_register_tokens_ahead_of_the_patches(tmp_path):
    shapes = load_config(write_config(tmp_path, **DINOV3), {"B": 1}).shapes()
    assert shapes.shape_of("embeddings") == [(1, 1 + 2 + 16, 32)]
    assert shapes.shape_of("patch_grid") == [(2, 1, 19)]   # the rotary positions of all 19 tokens, 3 of them at 0
    assert shapes.shape_of("rope_embeddings") == [(1, 19, 8), (1, 19, 8)]


def test_dinov3_refuses_heads_that_do_not_split_in_quarters(tmp_path):
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **{**DINOV3, "hidden_size": 24}))   # head size 6
    assert "the head size (hidden_size / num_attention_heads) must be a multiple of 4" in err.value.message
    assert "D=6" in err.value.message


def test_dinov3_refuses_a_query_bias_without_a_value_bias(tmp_path):
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **DINOV3, query_bias=True, value_bias=False))
    assert "query_bias and value_bias differ" in err.value.message


QWEN2_5_VL = dict(model_type="qwen2_5_vl", architectures=["Qwen2_5_VLForConditionalGeneration"], image_token_id=100,
                  text_config=dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=37,
                                   rope_parameters=dict(rope_type="default", mrope_section=[2, 2, 2])),
                  vision_config=dict(depth=3, hidden_size=32, num_heads=4, out_hidden_size=48, intermediate_size=40,
                                     patch_size=4, window_size=16, fullatt_block_indexes=[1]))


def test_qwen2_5_vl_layers_attend_in_windows_but_at_fullatt_block_indexes(tmp_path):
    model = load_config(write_config(tmp_path, **QWEN2_5_VL), {"B": 1, "IH": 16, "IW": 24})
    shapes = model.shapes()
    assert shapes.shape_of("model.visual.window_mask") == [(1, 1, 24, 24)]   # 4 x 6 patches
    biases = {path: ins[3:] for path, _, ins, _ in shapes.io()
              if path.startswith("model.visual.blocks.") and path.endswith(".attn")}
    assert biases == {"model.visual.blocks.0.attn": [(1, 1, 24, 24)], "model.visual.blocks.1.attn": [],
                      "model.visual.blocks.2.attn": [(1, 1, 24, 24)]}


def test_qwen2_5_vl_refuses_a_merger_narrower_than_the_text_model(tmp_path):
    config = {**QWEN2_5_VL, "vision_config": {**QWEN2_5_VL["vision_config"], "out_hidden_size": 40}}
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **config))
    assert "vision_config.out_hidden_size must equal the text model's hidden_size" in err.value.message


def test_qwen2_vl_default_config_is_refused_by_its_merger_width(tmp_path):
    """Qwen2VLConfig's defaults give the merger 3584 outputs and the text model 8192: transformers builds
    that model and cannot run it.  A config that leaves vision_config.hidden_size out takes 3584."""
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, model_type="qwen2_vl", architectures=["Qwen2VLForConditionalGeneration"]))
    assert ("vision_config.hidden_size must equal the text model's hidden_size" in err.value.message
            and "H=8192, VH=3584" in err.value.message), err.value.message


def test_qwen2_5_vl_refuses_a_window_smaller_than_a_merged_token(tmp_path):
    config = {**QWEN2_5_VL, "vision_config": {**QWEN2_5_VL["vision_config"], "window_size": 7}}
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **config))
    assert "window_size must be at least spatial_merge_size * patch_size pixels" in err.value.message


QWEN3_VL = dict(model_type="qwen3_vl", architectures=["Qwen3VLForConditionalGeneration"], image_token_id=100,
                text_config=dict(vocab_size=120, hidden_size=48, num_hidden_layers=3, num_attention_heads=4,
                                 num_key_value_heads=2, head_dim=12, intermediate_size=37,
                                 rope_parameters=dict(rope_type="default", mrope_section=[2, 2, 2])),
                vision_config=dict(depth=3, hidden_size=32, num_heads=4, out_hidden_size=48, intermediate_size=40,
                                   patch_size=4, num_position_embeddings=16, deepstack_visual_indexes=[0, 2]))


def test_qwen3_vl_keeps_the_tapped_layers_and_adds_each_feature_after_an_early_decoder_layer(tmp_path):
    shapes = load_config(write_config(tmp_path, **QWEN3_VL), {"B": 1, "IH": 16, "IW": 24, "S": 10}).shapes()
    # 24 patches; the kept states: the embeddings and layers 0 and 2, side by side
    assert shapes.shape_of("model.visual.blocks.2.joined") == [(1, 24, 3 * 32)]
    assert shapes.shape_of("model.visual.deepstack") == [(1, 6, 2 * 48)]   # 6 merged tokens, 2 features
    assert shapes.shape_of("model.deepstack") == [(1, 10, 2 * 48)]         # over the sequence
    added = sorted(path for path, _, _, _ in shapes.io() if path.endswith(".deepstack_added"))
    assert added == ["model.language_model.layers.0.deepstack_added", "model.language_model.layers.1.deepstack_added"]


def test_qwen3_vl_refuses_deepstack_layers_out_of_order_or_beyond_the_tower(tmp_path):
    for indexes in ([2, 0], [1, 3], [1, 1]):
        config = {**QWEN3_VL, "vision_config": {**QWEN3_VL["vision_config"], "deepstack_visual_indexes": indexes}}
        with pytest.raises(ArchgraphError) as err:
            load_config(write_config(tmp_path, **config))
        assert "deepstack_visual_indexes must be increasing layer numbers of the vision tower" in err.value.message



@pytest.mark.parametrize("name, total, layers, hidden, width, active", [
    ("qwen3_vl_moe-30b-a3b-instruct", 31_070_754_032, 48, 2048, 768, 3_891_664_112),
    ("qwen3_vl_moe-235b-a22b-instruct", 235_670_022_896, 94, 4096, 1536, 22_767_151_856)])
def test_qwen3_vl_moe_active_parameters_leave_out_the_experts_not_chosen(tmp_path, cli, name, total, layers,
                                                                        hidden, width, active):
    """128 experts, 8 chosen per token: 120 experts' gate, up and down projections idle in every layer."""
    fixture = json.loads((Path(__file__).parent / "data" / "hf" / f"{name}.json").read_text())
    code, out, _ = cli("params", write_config(tmp_path, **fixture["config"]), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == fixture["expected_params"] == total
    assert data["active"] == total - layers * 120 * 3 * hidden * width == active


MLLAMA = dict(model_type="mllama", architectures=["MllamaForConditionalGeneration"],
              text_config=dict(vocab_size=120, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                               num_key_value_heads=2, intermediate_size=37, cross_attention_layers=[1, 3],
                               pad_token_id=0),
              vision_config=dict(hidden_size=24, num_hidden_layers=3, num_global_layers=2, attention_heads=4,
                                 intermediate_size=40, vision_output_dim=72, image_size=12, patch_size=4,
                                 max_num_tiles=3, intermediate_layers_indices=[0, 2]))


def test_mllama_decoder_cross_attends_to_every_tiles_tokens_at_cross_attention_layers(tmp_path):
    shapes = load_config(write_config(tmp_path, **MLLAMA), {"B": 1, "S": 5}).shapes()
    # 3 tiles of 9 patches and a class token, each padded to 16 for the encoders
    assert shapes.shape_of("model.vision_model.vision_mask") == [(1, 1, 48, 48)]
    assert shapes.shape_of("model.vision_model.features") == [(1, 3, 10, 72)]   # 24 x (1 + 2 kept layers)
    cross = {path: ins[1] for path, _, ins, _ in shapes.io() if path.endswith(".cross_attn")}
    assert cross == {"model.language_model.layers.1.cross_attn": (1, 30, 32),
                     "model.language_model.layers.3.cross_attn": (1, 30, 32)}
    selfs = sorted(path[:-len(".core")] for path, _, _, _ in shapes.io()   # lib.attention's sdpa
                   if path.endswith(".self_attn.core") and "language" in path)
    assert selfs == ["model.language_model.layers.0.self_attn", "model.language_model.layers.2.self_attn"]


def test_mllama_memory_keeps_a_cross_attention_cache_of_the_image_tokens(tmp_path, cli):
    code, out, _ = cli("memory", write_config(tmp_path, **MLLAMA), "--set", "S=8")
    assert code == 0
    lines = [line for line in out.splitlines() if "cross-attention" in line]
    assert lines and "2 of model.language_model.layers (1, 3), cross_attn" in lines[0] and "30 tokens" in lines[0]


@pytest.mark.parametrize("vision, message", [
    ({"vision_output_dim": 48}, "vision_output_dim must be hidden_size x (1 + len(intermediate_layers_indices))"),
    ({"intermediate_layers_indices": [], "vision_output_dim": 24}, "must name at least one local layer"),
    ({"intermediate_layers_indices": [2, 0]}, "must be increasing layer numbers of the local encoder")])
def test_mllama_refuses_what_its_forward_cannot_run(tmp_path, vision, message):
    config = {**MLLAMA, "vision_config": {**MLLAMA["vision_config"], **vision}}
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **config))
    assert message in err.value.message


def test_mllama_causal_lm_is_refused_by_name(tmp_path):
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **{**MLLAMA, "architectures": ["MllamaForCausalLM"]}))
    assert "model class 'MllamaForCausalLM' is not supported for model_type 'mllama'" in err.value.message


QWEN3_5 = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"], "image_token_id": 60,
           "text_config": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
                           "head_dim": 16, "intermediate_size": 40, "vocab_size": 64, "linear_num_key_heads": 1,
                           "linear_num_value_heads": 2, "linear_key_head_dim": 8, "linear_value_head_dim": 8},
           "vision_config": {"depth": 1, "hidden_size": 16, "num_heads": 2, "intermediate_size": 20,
                             "out_hidden_size": 32, "num_position_embeddings": 4, "patch_size": 2}}


@pytest.mark.parametrize("rope, sections", [
    ({"partial_rotary_factor": 0.25}, [1, 1, 0]),          # 2 frequencies of [11, 11, 10]: time, row
    ({"partial_rotary_factor": 1.0}, [3, 3, 2]),           # 8 frequencies: T H W T H W T H
    ({"partial_rotary_factor": 1.0, "mrope_section": [6, 1, 1]}, [6, 1, 1])])
def test_qwen3_5_cuts_mrope_section_to_the_frequencies_interleaving_reaches(tmp_path, rope, sections):
    """transformers' Qwen3_5TextRotaryEmbedding deals frequency j to the row when j mod 3 = 1 and j < 3 x
    mrope_section[1] (the column likewise), whatever the sections add up to: time takes the rest."""
    text = {**QWEN3_5["text_config"], "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, **rope}}
    shapes = load_config(write_config(tmp_path, **{**QWEN3_5, "text_config": text}), {"B": 1}).shapes()
    rotary = [node.op for path, node, _, _ in shapes.io() if path == "model.language_model.rotary_emb"]
    assert len(rotary) == 1 and list(rotary[0].sections) == sections
    assert rotary[0].section_layout == "interleaved"


@pytest.mark.parametrize("rope, message", [
    ({"rope_type": "yarn", "factor": 2.0}, "rope_type other than 'default' is not in the template"),
    ({"mrope_section": [4, 4]}, "mrope_section must list three counts of frequencies")])
def test_qwen3_5_refuses_rotary_tables_it_does_not_build(tmp_path, rope, message):
    text = {**QWEN3_5["text_config"], "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, **rope}}
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **{**QWEN3_5, "text_config": text}))
    assert message in err.value.message


def test_qwen3_5_reads_text_config_as_its_own_class_whatever_type_it_names(tmp_path):
    """Qwen3_5Config builds Qwen3_5TextConfig from text_config even when it names another model_type."""
    named = {**QWEN3_5, "text_config": {**QWEN3_5["text_config"], "model_type": "qwen3_5_moe_text"}}
    assert load_config(write_config(tmp_path, **named)).params().total == 25_132   # transformers 5.23.0


@pytest.mark.parametrize("name, total, layers, experts, hidden, width, active", [
    ("qwen3_5_moe-35b-a3b", 35_107_181_936, 40, 256 - 8, 2048, 512, 3_901_560_176),
    ("qwen3_5_moe-397b-a17b", 396_802_360_816, 60, 512 - 10, 4096, 1024, 17_805_051_376)])
def test_qwen3_5_moe_active_parameters_leave_out_the_experts_not_chosen(tmp_path, cli, name, total, layers,
                                                                       experts, hidden, width, active):
    """The tower, the shared experts and the routers all run; of the routed experts only top_k per token."""
    fixture = json.loads((Path(__file__).parent / "data" / "hf" / f"{name}.json").read_text())
    code, out, _ = cli("params", write_config(tmp_path, **fixture["config"]), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == fixture["expected_params"] == total
    assert data["active"] == total - layers * experts * 3 * hidden * width == active
