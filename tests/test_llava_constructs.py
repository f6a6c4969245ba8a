"""The constructs LLaVA's template is made of, each on its own: `masked_scatter`, the vision towers'
feature layers (the hidden states after FLS layers, side by side; `index_select` by constant
`indices`), llama.yaml's `embeds` (its decoder reads inputs_embeds; the embedding table is its
caller's), and the key table's sub-configs (`configs:`, each read by its own model_type's table)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import archgraph
from archgraph import load
from archgraph.load import load_text

torch = pytest.importorskip("torch")
from archgraph.torch import to_module

SPECS = Path(__file__).parent.parent / "specs" / "hf"


def test_masked_scatter_writes_the_source_in_order_where_the_mask_holds():
    model = load_text("name: ms\ninputs:\n  x: [2, 4, 3]\n  ids: {shape: [2, 4], dtype: int64}\n  src: [2, 2, 3]\n"
                      "nodes:\n  - {name: hit, op: eq, in: ids, constant: 7}\n"
                      "  - {name: mask, op: unsqueeze, dim: -1}\n"
                      "  - {name: out, op: masked_scatter, in: [x, mask, src]}\n"
                      "outputs:\n  out: out\n", "ms.yaml")
    x, src = torch.zeros(2, 4, 3), torch.arange(12.0).reshape(2, 2, 3)
    ids = torch.tensor([[7, 1, 7, 2], [3, 7, 4, 7]])
    got = to_module(model)(x=x, ids=ids, src=src)["out"]
    assert torch.equal(got, x.masked_scatter((ids == 7).unsqueeze(-1), src))
    assert got[0, 2].tolist() == [3.0, 4.0, 5.0] and got[1, 1].tolist() == [6.0, 7.0, 8.0]
    assert got[0, 1].tolist() == [0.0, 0.0, 0.0]


def test_clip_vision_feature_is_the_hidden_state_after_fl_layers():
    sizes = {"H": 16, "L": 3, "A": 2, "I": 20, "C": 3, "IS": 12, "PS": 4}
    whole = load(str(SPECS / "clip_vision.yaml"), {**sizes, "FLS": [3]})
    split = load(str(SPECS / "clip_vision.yaml"), {**sizes, "FLS": [1]})
    # the split changes no tensor: the layers keep their numbers
    names = [n for n, _ in split.params().state_dict()]
    assert names == [n for n, _ in whole.params().state_dict()]
    assert "encoder.layers.2.mlp.fc2.weight" in names and split.params().total == whole.params().total
    a, b = to_module(whole).eval(), to_module(split).eval()
    b.load_state_dict(a.state_dict(), strict=True)
    pixels = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        full, part = a(pixel_values=pixels), b(pixel_values=pixels)
        assert torch.allclose(full["last_hidden_state"], part["last_hidden_state"], atol=1e-6)
        assert torch.allclose(full["features"], full["last_hidden_state"], atol=1e-6)  # FL = L: the last
        assert not torch.allclose(part["features"], part["last_hidden_state"], atol=1e-3)
    assert part["features"].shape == (2, 10, 16)


@pytest.mark.parametrize("spec", ["clip_vision.yaml", "siglip_vision.yaml"])
def test_vision_features_of_several_layers_are_those_hidden_states_side_by_side_in_order(spec):
    sizes = {"H": 8, "L": 3, "A": 2, "I": 12, "C": 3, "IS": 8, "PS": 4}
    single = {d: load(str(SPECS / spec), {**sizes, "FLS": [d]}) for d in range(4)}
    several = load(str(SPECS / spec), {**sizes, "FLS": [2, 0, 3, 2]})   # unsorted, the embeddings, twice
    assert [n for n, _ in several.params().state_dict()] == [n for n, _ in single[0].params().state_dict()]
    module = to_module(several).eval()
    pixels = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        got = module(pixel_values=pixels)["features"]
        want = []
        for d in (2, 0, 3, 2):
            one = to_module(single[d]).eval()
            one.load_state_dict(module.state_dict(), strict=True)
            want.append(one(pixel_values=pixels)["features"])
    assert got.shape == (2, want[0].shape[1], 4 * 8)
    assert torch.equal(got, torch.cat(want, dim=-1))


def test_index_select_by_constant_indices_takes_them_in_order_and_repeated():
    model = load_text("name: pick\ninputs:\n  x: [2, 4, 3]\n"
                      "nodes:\n  - {name: out, op: index_select, dim: 1, indices: [3, 0, 0, -1]}\n", "pick.yaml")
    x = torch.arange(24.0).reshape(2, 4, 3)
    got = to_module(model)(x=x)["out"]
    assert torch.equal(got, x[:, [3, 0, 0, 3]])
    from archgraph import ArchgraphError
    with pytest.raises(ArchgraphError, match=r"indices \[4\] are outside dim 1 of size 4"):
        load_text("name: pick\ninputs:\n  x: [2, 4, 3]\n"
                  "nodes:\n  - {name: out, op: index_select, dim: 1, indices: [1, 4]}\n", "pick.yaml").shapes()


def test_clip_vision_without_feature_has_its_usual_outputs():
    model = load(str(SPECS / "clip_vision.yaml"), {"H": 16, "L": 2, "A": 2, "I": 20, "IS": 12, "PS": 4})
    with torch.no_grad():
        out = to_module(model).eval()(pixel_values=torch.randn(1, 3, 12, 12))
    assert set(out) == {"last_hidden_state", "pooler_output"}


def test_llama_embeds_reads_inputs_embeds_and_leaves_the_table_to_its_caller():
    sizes = {"head": "base", "V": 50, "H": 16, "L": 2, "A": 2, "I": 24}
    plain = load(str(SPECS / "llama.yaml"), sizes)
    given = load(str(SPECS / "llama.yaml"), {**sizes, "embeds": True})
    assert plain.params().total - given.params().total == 50 * 16   # embed_tokens is the caller's
    a, b = to_module(plain).eval(), to_module(given).eval()
    assert tuple(a.input_names) == ("input_ids", "attention_mask")
    assert tuple(b.input_names) == ("input_ids", "attention_mask", "inputs_embeds")
    state = {k: v for k, v in a.state_dict().items() if not k.startswith("embed_tokens")}
    b.load_state_dict(state, strict=True)
    ids = torch.randint(0, 50, (2, 5))
    with torch.no_grad():
        want = a(input_ids=ids)["last_hidden_state"]
        got = b(input_ids=ids, inputs_embeds=a.tensor("embed_tokens.weight")[ids])["last_hidden_state"]
    assert torch.allclose(want, got, atol=1e-6)


def _llava(tmp_path, **change):
    import json
    config = json.loads((Path(__file__).parent / "data" / "hf" / "llava-cond-gen.json").read_text())["config"]
    for key, value in change.items():
        config[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("change, message", [
    ({"text_config": {"model_type": "mixtral", "hidden_size": 32}},
     "'text_config.model_type' is \"mixtral\", but archgraph's 'llava' template cannot build it"),
    ({"vision_config": {"model_type": "dinov2"}}, "'vision_config.model_type' is \"dinov2\""),
    ({"text_config": {"model_type": "qwen2", "hidden_size": [32]}}, "'text_config.hidden_size' must be a number"),
])
def test_llava_refuses_what_its_template_cannot_build_by_key(tmp_path, change, message):
    from archgraph import ArchgraphError
    with pytest.raises(ArchgraphError, match=message):
        load(str(_llava(tmp_path, **change)))


# transformers 5.23.0's LlavaForConditionalGeneration on the meta device, text_config a one-layer model
TEXT = {"model_type": "llama", "vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
        "intermediate_size": 40}


@pytest.mark.parametrize("change, total", [
    ({"text_config": TEXT}, 303_555_744),   # no vision_config: LlavaConfig's ViT-L/14 at 336 pixels
    ({"text_config": TEXT, "vision_config": {"model_type": "clip_vision_model"}}, 87_496_096),   # CLIPVisionConfig's
    ({"text_config": {"model_type": "qwen2", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
                      "num_key_value_heads": 2},
      "vision_config": {"model_type": "siglip_vision_model", "num_hidden_layers": 1}}, 26_783_968),  # Qwen2Config's
])
def test_llava_sub_configs_take_their_own_config_class_defaults(tmp_path, change, total):
    import json
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"], **change}))
    assert load(str(path)).params().total == total


def test_sub_config_values_say_where_they_came_from(tmp_path):
    from archgraph.hf import import_file
    imported = import_file(_llava(tmp_path, text_config={"model_type": "mistral", "hidden_size": 32,
                                                         "num_attention_heads": 8, "num_hidden_layers": 1},
                                  vision_feature_layer=-1))
    v, src = imported.variables, imported.sources
    assert (v["I"], v["KV"], v["W"], v["text_type"]) == (14336, 8, 4096, "mistral")
    assert src["I"] == "text_config.intermediate_size (absent: mistral's default)"
    assert (v["v_H"], v["v_act"], src["v_act"]) == (24, "quick_gelu", "vision_config.hidden_act (absent: clip_vision_model's template)")
    assert (v["FLS"], v["vision_type"]) == ([-1], "clip_vision_model")
    assert (v["eps"], v["v_eps"]) == (1e-6, 1e-5)   # the templates write them 1e-6, which YAML reads as a word
    siglip = import_file(_llava(tmp_path, vision_config={"model_type": "siglip_vision_model"})).variables
    assert (siglip["v_eps"], siglip["v_PS"], siglip["v_act"], siglip["v_use_head"]) == (1e-6, 16, "gelu_tanh", True)


# public checkpoints' configs (llava-hf/...), their totals from transformers 5.23.0 on the meta device
BAKLLAVA = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "image_token_index": 32000,
            "text_config": {"model_type": "mistral", "intermediate_size": 14336, "max_position_embeddings": 32768,
                            "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
                            "sliding_window": 4096, "vocab_size": 32064},
            "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024, "image_size": 336,
                              "intermediate_size": 4096, "num_attention_heads": 16, "num_hidden_layers": 24,
                              "patch_size": 14, "projection_dim": 768},
            "vision_feature_layer": -2, "vision_feature_select_strategy": "default"}
INTERLEAVE = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "image_token_index": 151646,
              "text_config": {"model_type": "qwen2", "hidden_size": 1024, "intermediate_size": 2816,
                              "max_window_layers": 21, "num_attention_heads": 16, "num_hidden_layers": 24,
                              "num_key_value_heads": 16, "rope_theta": 1000000.0, "sliding_window": 32768,
                              "tie_word_embeddings": True, "use_sliding_window": False, "vocab_size": 152000},
              "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 384,
                                "intermediate_size": 4304, "num_attention_heads": 16, "num_hidden_layers": 26,
                                "patch_size": 14, "vision_use_head": False},
              "vision_feature_layer": -1, "vision_feature_select_strategy": "full"}


@pytest.mark.parametrize("config, total, vision", [
    (BAKLLAVA, 7_566_743_552, 303_507_456),                                        # bakLlava-v1-hf
    (INTERLEAVE, 864_031_264, 397_747_744),                                        # llava-interleave-qwen-0.5b-hf
    ({**BAKLLAVA, "text_config": {"model_type": "llama", "vocab_size": 32064},
      "vision_feature_layer": [-2, -5, -8, -11, 6]}, 7_080_204_288, 303_507_456),  # llava-1.5-7b, five feature layers
    ({**BAKLLAVA, "image_token_index": 256000, "text_config": {                     # Intel/llava-gemma-2b (tied)
        "model_type": "gemma", "head_dim": 256, "hidden_act": "gelu", "hidden_size": 2048, "intermediate_size": 16384,
        "num_attention_heads": 8, "num_hidden_layers": 18, "num_key_value_heads": 1, "vocab_size": 256000}},
     2_815_975_424, 303_507_456),
])
def test_public_llava_checkpoints_count_what_transformers_builds(tmp_path, config, total, vision):
    import json
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    model = load(str(path))
    assert model.params().total == total
    assert sum(row.count for name, row in model.params().tensors()
               if name.startswith("model.vision_tower.") and row.tied_to is None) == vision


TILED = {"model_type": "llava_next", "image_grid_pinpoints": [[8, 16], [16, 16]],
         "text_config": {"model_type": "llama", "vocab_size": 120, "hidden_size": 32, "num_hidden_layers": 1,
                         "num_attention_heads": 4, "intermediate_size": 37},
         "vision_config": {"model_type": "clip_vision_model", "hidden_size": 24, "num_hidden_layers": 1,
                           "num_attention_heads": 4, "intermediate_size": 29, "image_size": 8, "patch_size": 2}}


@pytest.mark.parametrize("size, tiles, tokens", [
    ((8, 8), 3, 16 + 4 * 5),       # [8, 16]: 1 x 2 tiles, the 4 x 8 map unpadded to 4 x 4, a newline per row
    ((16, 16), 5, 16 + 8 * 9),     # [16, 16]: 2 x 2 tiles, nothing to unpad
    ((6, 20), 3, 16 + 2 * 9),      # [8, 16]: a wide image keeps 2 of the map's 4 rows (int(6 * 8 / 20) = 2)
])
def test_a_tiled_image_takes_the_tiles_and_tokens_its_size_picks(tmp_path, size, tiles, tokens):
    from archgraph.load import load_config
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TILED))
    model = load_config(path, {"IMH": size[0], "IMW": size[1]})
    shapes = model.shapes(B=2, S=50)
    assert shapes.shape_of("tiles") == [(2 * tiles, 3, 8, 8)]
    assert shapes.shape_of("image_features") == [(2, tokens, 32)]
    assert model.params().total == load_config(path).params().total   # the image's size adds no parameters


@pytest.mark.parametrize("change, says", [
    ({"vision_feature_select_strategy": "full"}, "vision_feature_select_strategy 'default' drops CLIP's class token"),
    ({"image_grid_pinpoints": [[8, 12]]}, "must be whole tiles of vision_config.image_size"),
])
def test_a_tiled_image_transformers_cannot_lay_out_is_refused_by_name(tmp_path, change, says):
    from archgraph.load import load_config
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TILED, **change}))
    with pytest.raises(archgraph.ArchgraphError, match=re.escape(says)):
        load_config(path)
