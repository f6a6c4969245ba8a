"""Family-specific behaviour of the gemma, mixtral and resnet templates (specs/hf/)
that the recorded fixtures in tests/data/hf do not show by themselves: errors for
configs the templates cannot build, the defaults of absent keys, switches that
move a stride without changing a tensor, and import-hf round trips."""
from __future__ import annotations

import pytest

from archgraph.errors import ArchgraphError
from archgraph.commands.import_hf import spec_text
from archgraph.load import load_config
from archgraph.load import load
from conftest import write_config


def _tensors(model) -> dict[str, list[int]]:
    return {tensor: list(row.shape) for tensor, row in model.params().tensors()}


def _shapes(model, **bindings) -> dict[str, list]:
    return {path: [list(s) for s in outputs] for path, _, outputs in model.shapes(**bindings).nodes()}


def test_resnet_class_without_a_template_head_is_refused(tmp_path, cli):
    path = write_config(tmp_path, model_type="resnet", architectures=["ResNetForMaskedLM"])
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}: model class 'ResNetForMaskedLM' is not supported for "
                   "model_type 'resnet'\n  fix: supported classes end in: Model, ForImageClassification; "
                   "or set \"architectures\" to one of them\n")


def test_resnet_seventh_stage_is_refused(tmp_path, cli):
    path = write_config(tmp_path, model_type="resnet", depths=[1] * 7, hidden_sizes=[8] * 7)
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}: 'depths[6]' is set, but archgraph's 'resnet' template cannot "
                   "build it: it builds 1 to 6 stages\n  fix: write a spec for it: start from "
                   "'archgraph import-hf' of a config the template builds, and edit that\n")


def test_resnet_unknown_layer_type_lists_the_known_ones(tmp_path, cli):
    path = write_config(tmp_path, model_type="resnet", layer_type="preactivation", **RESNET50)
    code, _, err = cli("params", str(path))
    assert code == 2
    assert "'layer_type' is \"preactivation\"" in err and "known values: basic, bottleneck" in err


RESNET50 = {"hidden_sizes": [256, 512, 1024, 2048], "depths": [3, 4, 6, 3]}  # ResNetConfig's defaults


def test_resnet_with_only_its_lists_is_resnet50(tmp_path):
    report = load_config(write_config(tmp_path, model_type="resnet", **RESNET50)).params()
    assert report.total == 23_508_032
    assert report.totals.buffers == 53_173  # running_mean + running_var of 53 norms, and 53 counters


def test_resnet_without_its_lists_is_an_error(tmp_path, cli):
    path = write_config(tmp_path, model_type="resnet")
    code, _, err = cli("params", str(path))
    assert code == 2
    assert err == (f"archgraph: error: {path}: the config lacks 'hidden_sizes[0]', which a 'resnet' model needs\n"
                   "  fix: add 'hidden_sizes[0]' to the config (it sets 'h0')\n")


def test_resnet_depth_zero_still_builds_the_first_layer(tmp_path):
    model = load_config(write_config(tmp_path, model_type="resnet", layer_type="basic", embedding_size=4,
                                     hidden_sizes=[4, 8], depths=[0, 1]))
    tensors = _tensors(model)
    assert tensors["encoder.stages.0.layers.0.layer.0.convolution.weight"] == [4, 4, 3, 3]
    assert "encoder.stages.0.layers.0.shortcut.convolution.weight" not in tensors  # 4 -> 4, stride 1
    assert tensors["encoder.stages.1.layers.0.shortcut.convolution.weight"] == [8, 4, 1, 1]
    assert not any(t.startswith("encoder.stages.0.layers.1.") for t in tensors)


@pytest.mark.parametrize("dib, first, second", [(False, [2, 4, 56, 56], [2, 4, 28, 28]),
                                                (True, [2, 4, 28, 28], [2, 4, 28, 28])])
def test_resnet_downsample_in_bottleneck_moves_the_stride(tmp_path, dib, first, second):
    config = {"model_type": "resnet", "embedding_size": 16, "hidden_sizes": [16], "depths": [1],
              "downsample_in_first_stage": True, "downsample_in_bottleneck": dib}
    model = load_config(write_config(tmp_path, **config))
    shapes = _shapes(model, B=2)
    layer = "encoder.stages.0.layers.0"
    assert shapes[f"{layer}.layer.0.convolution"] == [first]
    assert shapes[f"{layer}.layer.1.convolution"] == [second]
    assert shapes[f"{layer}.shortcut.convolution"] == [[2, 16, 28, 28]]
    assert model.params().total == 2_992  # transformers: 2,992 either way (a stride, not a tensor)


def test_resnet_image_classification_reads_the_pooled_features(tmp_path):
    config = {"model_type": "resnet", "architectures": ["ResNetForImageClassification"],
              "hidden_sizes": [8, 12], "depths": [1, 1], "embedding_size": 8, "num_labels": 7}
    model = load_config(write_config(tmp_path, **config))
    assert _tensors(model)["classifier.1.weight"] == [7, 12]
    assert model.shapes(B=3).outputs == {"logits": (3, 7)}


def test_gemma_projections_follow_head_dim_not_hidden(tmp_path):
    config = {"model_type": "gemma", "architectures": ["GemmaForCausalLM"], "vocab_size": 50, "hidden_size": 32,
              "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 3, "num_key_value_heads": 1,
              "head_dim": 20}
    report = load_config(write_config(tmp_path, **config)).params()
    tensors = {t: list(r.shape) for t, r in report.tensors()}
    assert tensors["model.layers.0.self_attn.q_proj.weight"] == [60, 32]
    assert tensors["model.layers.0.self_attn.o_proj.weight"] == [32, 60]
    assert tensors["model.layers.0.self_attn.k_proj.weight"] == [20, 32]
    assert (report.total, report.totals.tied) == (7_584, 50 * 32)  # lm_head tied by default (transformers: 7,584)


def test_gemma_absent_kv_heads_and_head_dim_take_gemma_defaults(tmp_path):
    # GemmaConfig: num_key_value_heads 16 (not the head count), head_dim 256
    config = {"model_type": "gemma", "architectures": ["GemmaModel"], "vocab_size": 10, "hidden_size": 8,
              "intermediate_size": 4, "num_hidden_layers": 1, "num_attention_heads": 16}
    tensors = _tensors(load_config(write_config(tmp_path, **config)))
    assert tensors["layers.0.self_attn.q_proj.weight"] == [4096, 8]
    assert tensors["layers.0.self_attn.k_proj.weight"] == [4096, 8]


def test_mixtral_top_k_above_the_expert_count_builds_as_in_transformers(tmp_path):
    config = {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "vocab_size": 10,
              "hidden_size": 8, "intermediate_size": 3, "num_hidden_layers": 1, "num_attention_heads": 2,
              "num_key_value_heads": 1, "num_local_experts": 1, "num_experts_per_tok": 2}
    tensors = _tensors(load_config(write_config(tmp_path, **config)))
    assert tensors["model.layers.0.mlp.gate.weight"] == [1, 8]
    assert tensors["model.layers.0.mlp.experts.gate_up_proj"] == [1, 6, 8]
    assert tensors["model.layers.0.mlp.experts.down_proj"] == [1, 8, 3]


def test_mixtral_num_experts_alias_wins_as_in_transformers(tmp_path):
    config = {"model_type": "mixtral", "architectures": ["MixtralModel"], "vocab_size": 10, "hidden_size": 8,
              "intermediate_size": 3, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
              "num_local_experts": 5, "num_experts": 3}
    assert _tensors(load_config(write_config(tmp_path, **config)))["layers.0.mlp.gate.weight"] == [3, 8]


@pytest.mark.parametrize("config", [
    {"model_type": "resnet", "architectures": ["ResNetForImageClassification"], "layer_type": "basic",
     "embedding_size": 4, "hidden_sizes": [4, 6, 8, 10, 12, 14], "depths": [1, 0, 2, 1, 1, 3], "num_labels": 4},
    {"model_type": "mixtral", "architectures": ["MixtralForQuestionAnswering"], "vocab_size": 30, "hidden_size": 16,
     "intermediate_size": 5, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
     "num_local_experts": 3},
    {"model_type": "gemma", "architectures": ["GemmaForTokenClassification"], "vocab_size": 30, "hidden_size": 16,
     "intermediate_size": 5, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
     "head_dim": 6, "attention_bias": True, "num_labels": 3},
    {"model_type": "clip", "architectures": ["CLIPModel"], "projection_dim": 6,  # towers used as blocks
     "text_config": {"vocab_size": 30, "hidden_size": 8, "intermediate_size": 5, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 9},
     "vision_config": {"hidden_size": 12, "intermediate_size": 7, "num_hidden_layers": 2, "num_attention_heads": 3,
                       "image_size": 16, "patch_size": 8}},
], ids=["resnet", "mixtral", "gemma", "clip"])
def test_import_hf_round_trips(tmp_path, config):
    path = write_config(tmp_path, **config)
    spec = tmp_path / "imported.yaml"
    spec.write_text(spec_text(path))
    assert _tensors(load(str(spec))) == _tensors(load_config(path))


def test_a_siglip_whose_towers_embed_to_different_widths_is_refused(tmp_path):
    # transformers builds it (and fails in forward): the text head gives 24 values, the image pooler 40
    config = {"model_type": "siglip", "architectures": ["SiglipModel"],
              "text_config": {"vocab_size": 30, "hidden_size": 8, "intermediate_size": 5, "num_hidden_layers": 1,
                              "num_attention_heads": 2, "projection_size": 24},
              "vision_config": {"hidden_size": 40, "intermediate_size": 7, "num_hidden_layers": 1,
                                "num_attention_heads": 2, "image_size": 16, "patch_size": 8}}
    with pytest.raises(ArchgraphError, match=r"the 'siglip' template cannot be built with this config: matmul\(\): "
                                             r"inner dimension of \[B, 24\] @ \[40, B\] is 40, expected 24"):
        load_config(write_config(tmp_path, **config))


SWIN_MIM = dict(model_type="swin", architectures=["SwinForMaskedImageModeling"], image_size=24, patch_size=3,
                embed_dim=8, depths=[2, 2], num_heads=[2, 2], window_size=2, encoder_stride=6, num_channels=2)


def test_swin_num_layers_other_than_its_stages_is_refused_for_masked_image_modeling(tmp_path):
    """SwinForMaskedImageModeling sizes its decoder by num_layers, which SwinConfig sets to
    len(depths); another value built a decoder transformers cannot run, and the key table
    dropped it (tools/audit_config_keys.py). The other classes never read it."""
    total = load_config(write_config(tmp_path, **SWIN_MIM)).params().total
    assert load_config(write_config(tmp_path, **SWIN_MIM, num_layers=2)).params().total == total
    assert load_config(write_config(tmp_path, **{**SWIN_MIM, "architectures": ["SwinModel"]}, num_layers=3)).params().total > 0
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **SWIN_MIM, num_layers=3))
    assert err.value.message.startswith("the 'swin' template cannot be built with this config: num_layers must "
                                        "equal the number of stages (len(depths))")


@pytest.mark.parametrize("config, aliases", [
    (dict(SWIN_MIM, num_heads=[1, 2]), {"num_heads": "num_attention_heads"}),
    (dict(model_type="segformer", architectures=["SegformerModel"], image_size=32, num_encoder_blocks=2,
          hidden_sizes=[8, 12], num_attention_heads=[1, 2], depths=[1, 1], sr_ratios=[2, 1], patch_sizes=[7, 3],
          strides=[4, 2], mlp_ratios=[2, 2]), {"num_encoder_blocks": "num_hidden_layers"}),
    (dict(model_type="detr", architectures=["DetrForObjectDetection"], use_timm_backbone=False, d_model=16,
          encoder_layers=1, encoder_attention_heads=2, decoder_layers=1, decoder_attention_heads=4,
          encoder_ffn_dim=20, decoder_ffn_dim=24, num_queries=5, num_labels=3,
          backbone_config={"model_type": "resnet", "hidden_sizes": [8, 12], "depths": [1, 1], "embedding_size": 8,
                           "out_features": ["stage2"]}),
     {"d_model": "hidden_size", "encoder_layers": "num_hidden_layers",
      "encoder_attention_heads": "num_attention_heads"}),
])
def test_a_key_under_its_transformers_alias_is_read(tmp_path, config, aliases):
    """A config class's attribute_map lets a config name a key by its alias (SwinConfig takes
    num_attention_heads for num_heads); the key tables read both names, as transformers does
    (tools/audit_config_keys.py found these read under one name only: the alias was dropped)."""
    want = {name: tuple(t.shape) for name, t in load_config(write_config(tmp_path, **config)).params().tensors()}
    renamed = {aliases.get(k, k): v for k, v in config.items()}
    got = {name: tuple(t.shape) for name, t in load_config(write_config(tmp_path, **renamed)).params().tensors()}
    assert got == want
