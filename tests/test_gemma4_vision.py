"""Gemma 4 with images (issue 29): the published checkpoints' totals and active parameters, the
vision tower's buffers and what it refuses, the optional towers (`present:` of a key table's
sub-config rule; the audio tower composed), the image tokens' block mask in the sliding layers,
what `memory` keeps and what `compare` says the tower does."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_config

from archgraph.hf import import_config
from archgraph.load import load_config

DATA = Path(__file__).parent / "data" / "hf"
torch = pytest.importorskip("torch")


def _fixture(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())["config"]


# a token leaves 120 of the 128 experts idle in each of the 30 layers: gate_up [1408, 2816] and down [2816, 704]
IDLE_26B = 30 * 120 * 3 * 704 * 2816


@pytest.mark.parametrize("name, total, active", [
    # transformers 5.23.0 on the meta device (configs written from the published ones, no Hub access)
    ("gemma4-26b-a4b-it-reconstructed", 25_805_933_872, 25_805_933_872 - IDLE_26B),
    ("gemma4-31b-it-reconstructed", 31_273_086_512, 31_273_086_512),
    ("gemma4_vision-26b-a4b-tower-reconstructed", 569_548_080, 569_548_080),
])
def test_published_models_with_images(tmp_path, cli, name, total, active):
    code, out, _ = cli("params", write_config(tmp_path, **_fixture(name)), "--json")
    data = json.loads(out)
    assert code == 0 and (data["total"], data["active"]) == (total, active)
    assert active in (569_548_080, 4_395_322_672, 31_273_086_512)   # the "A4B": 3.8 B of text, 0.57 B of tower


def test_the_tower_keeps_its_rotary_frequencies_and_clipping_bounds_as_buffers(tmp_path):
    config = _fixture("gemma4-odd-untied-clipped-k2-gqa")
    model = load_config(write_config(tmp_path, **config))
    buffers = {path + "." + row.name if row.name else path: (tuple(row.shape), row.persistent)
               for path, _, _, rows in model.params().nodes() for row in rows if row.buffer}
    tower = {k: v for k, v in buffers.items() if k.startswith("model.vision_tower.")}
    assert tower["model.vision_tower.encoder.rotary_emb.inv_freq"] == ((3,), False)   # head_dim 12: 12 / 4 frequencies
    assert tower["model.vision_tower.encoder.layers.0.self_attn.q_proj.input_min"] == ((), True)
    assert tower["model.vision_tower.std_scale"] == ((48,), True)
    # 7 clippable linears per layer (q, k, v, o, gate, up, down), 4 bounds each, 3 layers; 2 rotary tables, 2 std
    assert len(tower) == 7 * 4 * 3 + 2 + 2


@pytest.mark.parametrize("name, total", [
    # transformers 5.23.0 on the meta device: text, vision and audio towers and both embedders
    ("gemma4-e2b-it-reconstructed", 5_104_297_504),
    ("gemma4-e4b-it-reconstructed", 7_941_100_832),
])
def test_the_small_checkpoints_compose_the_audio_tower(tmp_path, cli, name, total):
    config = _fixture(name)
    code, out, _ = cli("params", write_config(tmp_path, **config), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == data["active"] == total
    without = load_config(write_config(tmp_path, **{**config, "audio_config": None})).params().total
    # the conformer (gemma4_audio-gemma-4-e2b's count) and embed_audio's [H, output_proj_dims] projection
    audio = json.loads((DATA / "gemma4_audio-gemma-4-e2b.json").read_text())["expected_params"]
    assert total - without == audio + config["text_config"]["hidden_size"] * 1536


def test_a_kernel_of_one_is_refused_saying_why(tmp_path, cli):
    config = {**_fixture("gemma4_vision-26b-a4b-tower-reconstructed"), "pooling_kernel_size": 1}
    code, _, err = cli("params", write_config(tmp_path, **config))
    assert code == 2 and "pooling_kernel_size 1" in err and "keeps the padding patches" in err


def test_a_config_without_vision_config_has_no_tower(tmp_path):
    with_tower = _fixture("gemma4-odd-untied-clipped-k2-gqa")
    imported = import_config(with_tower)
    assert imported.variables["vision"] is True and imported.sources["vision"] == "vision_config (given)"
    alone = import_config({**with_tower, "vision_config": None})
    assert alone.variables["vision"] is False and alone.sources["vision"] == "vision_config (absent or null)"
    model = load_config(write_config(tmp_path, **_fixture("gemma4-odd-base-text-only-untied")))
    names = [path for path, *_ in model.params().nodes()]
    assert names and not any("vision" in n for n in names)
    assert model.params().total == 187_376   # transformers 5.23.0's Gemma4Model without a tower


def test_the_text_model_alone_reads_vision_bidirectional_attention_and_stays_causal(tmp_path):
    text = {k: v for k, v in _fixture("gemma4-26b-a4b-it-reconstructed")["text_config"].items()}
    assert text["use_bidirectional_attention"] == "vision"
    model = load_config(write_config(tmp_path, **text, architectures=["Gemma4ForCausalLM"]))
    assert model.params().total == 25_233_141_760   # gemma4_text-26b-a4b-reconstructed's


def test_a_null_token_id_matches_no_token(tmp_path):
    """transformers compares the ids with None (no token is one): a null video or audio id embeds no pad."""
    import test_torch_hf as cases
    config = {**cases.CASES["gemma4-cond-gen-text-only-capped"], "video_token_id": None, "audio_token_id": None}
    reference, module = cases._loaded_pair(tmp_path, config)
    ids = torch.tensor([[5, 91, 92, 258884 % 97, 7]])
    with torch.no_grad():
        assert (module(input_ids=ids)["logits"] - reference(input_ids=ids).logits).abs().max() < 1e-4
    imported = import_config(config)
    assert (imported.variables["video_token"], imported.variables["audio_token"]) == (-1, -1)


def test_memory_caches_the_decoder_by_layer_kind_and_nothing_for_the_tower(tmp_path):
    from archgraph.passes.memory import estimate_memory
    report = estimate_memory(load_config(write_config(tmp_path, **_fixture("gemma4-26b-a4b-it-reconstructed"))),
                             {"B": 1, "S": 8192})
    layers = {}
    for e in report.kv_cache:
        assert e.path.startswith("model.language_model.")
        layers[e.rule] = layers.get(e.rule, 0) + e.layers
    assert layers == {"sliding window of 1024": 25, "full attention": 5}
    # sliding: 8 kv heads x 256 keys and values; full: 2 heads x 512, keys = values but both kept
    assert report.kv_cache_bytes == 2 * (25 * 1024 * 2 * 8 * 256 + 5 * 8192 * 2 * 2 * 512)


def test_compare_says_the_towers_layers_attend_both_ways(tmp_path):
    from archgraph.passes.stacks import find_stacks
    model = load_config(write_config(tmp_path, **_fixture("gemma4-odd-untied-clipped-k2-gqa")))
    does = {s.path: s.does for s in find_stacks(model)}
    assert does["model.vision_tower.encoder.layers"] == ("bidirectional",)


def test_image_tokens_attend_both_ways_only_in_the_sliding_layers(tmp_path):
    """With mm_token_type_ids an image's tokens see each other in the sliding layers (transformers'
    create_masks_for_vision_model); the module agrees with and without them, and they change the output."""
    import test_torch_hf as cases
    config = cases.CASES["gemma4-cond-gen"]
    reference, module = cases._loaded_pair(tmp_path, config)
    inputs = cases._inputs(module, config)
    causal = {**inputs, "mm_token_type_ids": torch.zeros_like(inputs["mm_token_type_ids"])}
    with torch.no_grad():
        both, alone = reference(**inputs).logits, reference(**causal).logits
        assert (module(**inputs)["logits"] - both).abs().max() < 1e-4
        assert (module(**causal)["logits"] - alone).abs().max() < 1e-4
    assert (both - alone).abs().max() > 1e-3


def test_an_encoders_causal_convolution_keeps_no_window():
    from archgraph.ops import REGISTRY
    conv = REGISTRY["causal_conv1d"]
    assert conv(channels=8, kernel_size=5).cache([(2, 7, 8)], [(2, 7, 8)], True).state == 8 * 4
    assert conv(channels=8, kernel_size=5, cached=False).cache([(2, 7, 8)], [(2, 7, 8)], True) is None


def test_the_audio_tower_is_an_encoder_stack_with_no_cache(tmp_path):
    from archgraph.passes.memory import estimate_memory
    from archgraph.passes.stacks import find_stacks
    model = load_config(write_config(tmp_path, **_fixture("gemma4-e2b-it-reconstructed")))
    does = {s.path: s.does for s in find_stacks(model)}
    assert does["model.audio_tower.layers"] == ("bidirectional", "local window of 12 in blocks of 12", "convolution")
    report = estimate_memory(model, {"B": 1, "S": 4096, "T": 400})
    assert {e.rule for e in report.kv_cache} == {"sliding window of 512", "full attention"}
    assert sum(e.layers for e in report.kv_cache) == 15   # E2B's last 20 of 35 layers read others' keys and values
