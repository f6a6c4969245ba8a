"""compare: encoder, decoder and encoder-decoder side by side, and the chart."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REFERENCE, ROOT

import archgraph
from archgraph.passes.compare import compare

DATA = Path(__file__).parent / "data" / "hf"


def test_compare_json_encoder_decoder(cli):
    code, out, err = cli("compare", "bert-base-uncased", "gpt2", "t5-small", "--set", "S=512", "--json")
    assert code == 0, err
    bert, gpt2, t5 = json.loads(out)["models"]
    assert [bert["kind"], gpt2["kind"], t5["kind"]] == ["encoder-only", "decoder-only", "encoder-decoder"]
    assert [bert["params"], gpt2["params"], t5["params"]] == [109_482_240, 124_439_808, 60_506_624]
    assert [m["active_params"] for m in (bert, gpt2, t5)] == [109_482_240, 124_439_808, 60_506_624]
    assert bert["by_category"]["embedding"] == 23_835_648
    assert gpt2["embedding_share"] == (50257 + 1024) * 768 / 124_439_808
    assert [bert["width"], gpt2["width"], t5["width"]] == [768, 768, 512]
    stacks = lambda m: [(s["path"], s["role"], s["layers"], s["params_per_layer"], s["does"]) for s in m["stacks"]]
    assert stacks(bert) == [("encoder.layer", "encoder", 12, 7_087_872, ["bidirectional"])]
    assert stacks(gpt2) == [("transformer.h", "decoder", 12, 7_087_872, ["causal"])]
    assert gpt2["params_outside_stacks"] == {"embedding": (50257 + 1024) * 768, "norm": 2 * 768}  # wte, wpe, ln_f
    # T5: the encoder layer is self-attention 4·512² + feed-forward 2·512·2048 + 2 norms; the decoder
    # layer adds cross-attention 4·512² and a norm; block 0 of each also holds the 32 x 8 bias table
    encoder, decoder = 4 * 512 ** 2 + 2 * 512 * 2048 + 2 * 512, 8 * 512 ** 2 + 2 * 512 * 2048 + 3 * 512
    assert stacks(t5) == [("encoder.block", "encoder", 6, encoder, ["bidirectional"]),
                          ("decoder.block", "decoder", 6, decoder, ["causal", "cross-attention"])]
    assert (encoder, decoder) == (3_146_752, 4_195_840)
    assert [s["params"] for s in t5["stacks"]] == [6 * encoder + 256, 6 * decoder + 256]

    forward = archgraph.passes.flops.count_flops(archgraph.load("gpt2"), {"B": 1, "S": 512}).forward
    one = archgraph.passes.flops.count_flops(archgraph.load("gpt2"), {"B": 1, "S": 1}).forward
    assert gpt2["flops"]["decoder_prefill"] == gpt2["flops"]["forward"] == forward == 136_370_454_528
    # a new token costs a one-token forward plus scores and values over the 512 cached keys in 12 layers
    assert gpt2["flops"]["per_generated_token"] == one + 12 * 4 * 768 * 512 == 266_385_408
    assert (gpt2["flops"]["encoder_pass"], gpt2["flops"]["decoder_length"]) == (None, "S")
    assert bert["flops"]["encoder_pass"] == bert["flops"]["forward"] == 96_848_317_440
    assert (bert["flops"]["decoder_prefill"], bert["flops"]["per_generated_token"]) == (None, None)
    t5_flops = t5["flops"]  # 12288·T² + 83291648·T + 25792872448 at S=512 (512·T: the head's rescale)
    assert t5_flops["decoder_length"] == "T"
    assert t5_flops["encoder_pass"] == 25_792_872_448
    assert t5_flops["decoder_prefill"] == 12288 * 512 ** 2 + 83_291_648 * 512
    assert t5_flops["encoder_pass"] + t5_flops["decoder_prefill"] == t5_flops["forward"]
    assert t5_flops["per_generated_token"] == 83_291_648 + 12288 * 513

    assert gpt2["memory"]["weights_bytes"]["int4"] == 124_439_808 // 2
    assert bert["memory"]["kv_cache_bytes"] == bert["memory"]["state_cache_bytes"] == 0
    assert gpt2["memory"]["kv_cache_bytes"] == 2 * 12 * 512 * 768 * 2
    assert t5["memory"]["kv_cache_bytes"] == 2 * (6 + 6) * 512 * 8 * 64 * 2  # self + cross attention, T = S
    assert gpt2["memory"]["serving_bytes"] == 2 * 124_439_808 + 2 * 12 * 512 * 768 * 2
    assert gpt2["memory"]["training_state_bytes"] == 16 * 124_439_808
    assert gpt2["memory"]["training_bytes"] == 16 * 124_439_808 + gpt2["memory"]["activation_bytes"]
    assert t5["bindings"] == {"B": 1, "S": 512, "T": 512}


def _config(tmp_path, name: str) -> str:
    (tmp_path / name).mkdir()
    path = tmp_path / name / "config.json"
    path.write_text(json.dumps(json.loads((DATA / f"{name}.json").read_text())["config"]))
    return str(path)


def test_a_mixture_of_experts_has_active_parameters_and_mamba_keeps_no_kv_cache(cli, tmp_path):
    """Mixtral (hidden 48, 2 of 4 experts of 3·48·37) and Mamba (a fixed state, 0 bytes of KV cache)."""
    code, out, err = cli("compare", _config(tmp_path, "mixtral-causal-gqa"), _config(tmp_path, "mamba-130m-layout"),
                         "--set", "S=64", "--json")
    assert code == 0, err
    mixtral, mamba = json.loads(out)["models"]
    expert = 3 * 48 * 37
    layer = 2 * 48 * 48 + 2 * 48 * 16 + 2 * 48 + 48 * 4 + 4 * expert  # q, o, k, v (2 KV heads), norms, router
    assert [(s["path"], s["layers"], s["params_per_layer"], s["active_params_per_layer"], s["does"])
            for s in mixtral["stacks"]] == [("model.layers", 2, layer, layer - 2 * expert,
                                             ["causal", "MoE 4 experts top 2"])]
    assert (mixtral["params"], mixtral["active_params"]) == (75_792, 75_792 - 2 * 2 * expert)
    assert mixtral["memory"]["kv_cache_bytes"] == 2 * 2 * 64 * 2 * 8 * 2  # layers, K and V, S, heads, dim, bf16
    (stack,) = mamba["stacks"]
    assert (stack["path"], stack["layers"], stack["params_per_layer"], stack["does"]) == \
        ("backbone.layers", 2, 3_771_648, ["state-space"])
    assert mamba["memory"]["kv_cache_bytes"] == 0
    assert mamba["memory"]["state_cache_bytes"] == 2 * 1536 * (4 + 16) * 2  # conv and SSM states, bf16
    flops = mamba["flops"]  # no attention: every token costs the same
    assert flops["per_generated_token"] * 64 == flops["decoder_prefill"] == flops["forward"]


VIT_MOE = """\
archgraph: 1
name: vit-moe
description: a small ViT whose odd layers are a mixture of 4 experts (top 1)
variables: {H: 64, I: 128, L: 4}
inputs:
  pixels: {shape: [B, 3, 32, 32]}
blocks:
  layer:
    args: [H, I, moe]
    nodes:
      - {name: norm1, op: layer_norm, in: x, normalized_shape: H}
      - {name: attn, op: attention, hidden: H, heads: 4}
      - {name: res1, op: add, in: [attn, x]}
      - {name: norm2, op: layer_norm, normalized_shape: H}
      - {name: fc1, op: linear, in_features: H, out_features: I, when: not moe}
      - {name: act, op: activation, fn: "'gelu'", when: not moe}
      - {name: fc2, op: linear, in_features: I, out_features: H, when: not moe}
      - {name: experts, op: moe, in: norm2, hidden: H, intermediate: I, experts: 4, top_k: 1, when: moe}
      - {name: res2, op: add, in: ["fc2|experts", res1]}
nodes:
  - {name: patches, op: conv2d, in: pixels, in_channels: 3, out_channels: H, kernel_size: 8, stride: 8,
     category: embedding}
  - {name: flat, op: flatten, start_dim: 2}
  - {name: tokens, op: transpose, dim0: 1, dim1: 2}
  - {name: embeddings, op: class_token, hidden: H, num_patches: 16}
  - {name: blocks, block: layer, repeat: L, H: H, I: I, moe: "i % 2 == 1"}
  - {name: norm, op: layer_norm, normalized_shape: H}
"""


def test_a_vision_model_with_moe_every_other_layer(cli, tmp_path):
    """The schedule's two kinds of layer are two stacks; FLOPs are per image, at any batch."""
    spec = tmp_path / "vit-moe.yaml"
    spec.write_text(VIT_MOE)
    code, out, err = cli("compare", str(spec), "resnet-50", "--set", "B=2", "--json")
    assert code == 0, err
    vit, resnet = json.loads(out)["models"]
    attn, norms = 4 * (64 * 64 + 64), 2 * 2 * 64
    dense = attn + norms + 64 * 128 + 128 + 128 * 64 + 64
    expert = 3 * 64 * 128
    moe = attn + norms + 64 * 4 + 4 * expert
    assert [(s["path"], s["layers"], s["params_per_layer"], s["active_params_per_layer"], s["does"])
            for s in vit["stacks"]] == [("blocks.0,2", 2, dense, dense, ["bidirectional"]),
                                        ("blocks.1,3", 2, moe, moe - 3 * expert,
                                         ["bidirectional", "MoE 4 experts top 1"])]
    embeddings = 3 * 64 * 64 + 64 + 64 + 17 * 64  # patch convolution, class token, 17 positions
    assert vit["params"] == embeddings + 2 * dense + 2 * moe + 2 * 64 == 311_488
    assert vit["active_params"] == vit["params"] - 2 * 3 * expert == 164_032
    assert vit["kind"] == resnet["kind"] == "vision"
    one = archgraph.passes.flops.count_flops(archgraph.load("resnet-50"), {"B": 1}).forward
    assert resnet["flops"]["per_image"] == one == resnet["flops"]["forward"] // 2
    assert resnet["flops"]["decoder_prefill"] is None and resnet["flops"]["encoder_pass"] is None
    assert [(s["path"], s["layers"]) for s in resnet["stacks"]] == [
        (f"encoder.stages.{i}.layers", n) for i, n in enumerate((3, 4, 6, 3))]
    assert vit["memory"]["kv_cache_bytes"] == 0


def test_compare_table_fits_80_columns_and_chart(cli, tmp_path):
    from rich.console import Console

    from archgraph.render.compare import compare_table
    from archgraph.render.fit import fit
    rows = compare(["t5-small", "gpt2", "bert-base-uncased"], {}, load=archgraph.load)
    console = Console(width=80, record=True)
    console.print(fit(compare_table(rows, 80), console))
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert sum(line.startswith("┏") for line in lines) == 2  # the stacks, then the figures: one table each
    header = next(line for line in lines if "t5-small" in line and "gpt2" in line)
    assert "bert-base-uncased" in header  # three models side by side, names whole
    row = lambda label: next(line for line in lines if line.startswith(f"│ {label} "))  # noqa: E731
    assert row("  decoder.block").split("│")[1:4] == ["   decoder.block   ", "      6 ", "    4,195,840 "]
    assert "causal, cross-attention" in row("  decoder.block")
    assert row("forward per new token").split("│")[2:5] == [" 89.60 MFLOP ", " 266.39 MFLOP ", "                 — "]
    # t5's block 0 holds its relative position table besides the repeated layer: layers x per layer is 256 short
    decoder = rows[0].stacks[1]
    assert (decoder.params, decoder.layers * decoder.per_layer, decoder.extra) == (25_175_296, 25_175_040, 256)
    assert decoder.unlike() == ["decoder.block.0"] and "cross-attention; +256" in row("  decoder.block")
    assert [s.extra for s in rows[1].stacks] == [0]
    assert row("  KV cache").split("│")[2:5] == ["   12.00 MiB ", "    18.00 MiB ", "               0 B "]
    assert row("serving").split("│")[2:5] == ["  127.41 MiB ", "   255.35 MiB ", "        208.82 MiB "]
    chart = tmp_path / "chart.png"
    code, out, err = cli("compare", "bert-base-uncased", "gpt2", "--chart", str(chart))
    assert code == 0, err
    assert "encoder pass" in out and "21.8%" in out
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_more_models_than_fit_go_on_in_a_second_figures_table():
    from rich.console import Console

    from archgraph.render.compare import compare_table
    from archgraph.render.fit import fit
    rows = compare(["t5-small", "gpt2", "bert-base-uncased", "llama-2-7b", "resnet-50"], {}, load=archgraph.load)
    console = Console(width=80, record=True)
    console.print(fit(compare_table(rows, 80), console))
    lines = console.export_text().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert any("(models 4..5 of 5)" in line for line in lines)
    assert any("llama-2-7b" in line and "resnet-50" in line for line in lines)
    assert any("6,738,415,616" in line for line in lines)


def test_compare_errors(cli, tmp_path):
    code, _, err = cli("compare", "gpt2")
    assert code == 2 and "compare needs at least two models" in err
    code, _, err = cli("compare", "gpt2", "bert-base-uncased", "-o", str(tmp_path / "c.gif"))
    assert code == 2 and "cannot draw a chart as '.gif'" in err
    spec = tmp_path / "m.yaml"
    spec.write_text((archgraph.builtin_specs()["gpt2"]).read_text())
    code, _, err = cli("compare", str(spec), "gpt2", "-o", str(spec))
    assert code == 2 and "cannot draw a chart as '.yaml'" in err  # never over the spec


def test_layers_look_inside_wrappers_and_skip_a_stem(cli, tmp_path):
    """Whisper's layers sit inside model.encoder / model.decoder calls made once; ResNet's stem is a
    block too, but not a residual layer."""
    ref = json.loads((REFERENCE / "hf" / "whisper-tiny.json").read_text())
    config = tmp_path / "config.json"
    config.write_text(json.dumps(ref["config"]))
    code, out, _ = cli("compare", str(config), "resnet-50", "t5-small", "--set", "S=128", "--json")
    assert code == 0
    whisper, resnet, t5 = json.loads(out)["models"]
    # 4 encoder + 4 decoder layers; an encoder layer: q, k (no bias), v, out 4·384²+3·384, two norms
    # 4·384, fc1/fc2 2·384·1536 + 1536 + 384
    layer = 4 * 384 ** 2 + 3 * 384 + 4 * 384 + 2 * 384 * 1536 + 1536 + 384
    assert [(s["path"], s["layers"], s["params_per_layer"], s["does"]) for s in whisper["stacks"]] == [
        ("model.encoder.layers", 4, layer, ["bidirectional"]),
        ("model.decoder.layers", 4, layer + 4 * 384 ** 2 + 3 * 384 + 2 * 384, ["causal", "cross-attention"])]
    assert [s["layers"] for s in resnet["stacks"]] == [3, 4, 6, 3]
    assert [s["layers"] for s in t5["stacks"]] == [6, 6]


def test_compare_refuses_a_name_no_model_has(cli):
    code, out, err = cli("compare", "gpt2", "bert-base-uncased", "--set", "l=48")
    assert (code, out) == (2, "")
    assert err == ("archgraph: error: --set l: none of the models has a variable or dimension named 'l'\n"
                   "  fix: did you mean 'L'?\n")


@pytest.mark.parametrize("setting", ["S=0", "B=-4"])
def test_compare_refuses_a_size_that_is_not_positive(cli, setting):
    code, _, err = cli("compare", "gpt2", "bert-base-uncased", "--set", setting)
    name, value = setting.split("=")
    assert code == 2 and err.startswith(f"archgraph: error: --set {name}={value}: a size must be a positive whole number")


def test_compare_applies_a_variable_to_the_models_that_have_it(cli):
    code, out, _ = cli("compare", "gpt2", "llama-2-7b", "--set", "L=2", "--json")
    assert code == 0
    assert [m["params"] for m in json.loads(out)["models"]] == [53_561_088, 666_914_816]


def test_a_model_whose_spec_bounds_the_length_is_compared_at_that_bound(cli, tmp_path):
    """CLIP's text tower embeds at most 77 tokens (`S <= TP`): compare measures it at S=77 beside
    GPT-2 at 512 and says so, instead of failing on S=512."""
    path = tmp_path / "clip.json"
    path.write_text(json.dumps({"model_type": "clip"}))
    code, out, err = cli("compare", str(path), "gpt2", "--json")
    assert code == 0, err
    clip, gpt2 = json.loads(out)["models"]
    assert (clip["bindings"], gpt2["bindings"]) == ({"B": 1, "S": 77}, {"B": 1, "S": 512})
    # the text tower's attention is causal but never decodes: an encoder, no tokens generated, no cache
    assert [(s["path"], s["role"], s["layers"], s["does"]) for s in clip["stacks"]] == [
        ("text_model.encoder.layers", "encoder", 12, ["causal"]),
        ("vision_model.encoder.layers", "encoder", 12, ["bidirectional"])]
    assert clip["kind"] == "encoder-only" and clip["flops"]["per_generated_token"] is None
    assert clip["memory"]["kv_cache_bytes"] == 0 and clip["flops"]["encoder_pass"] == clip["flops"]["forward"]
    code, out, err = cli("compare", str(path), "gpt2")
    assert code == 0, err
    assert "at clip: B=1, S=77; gpt2: B=1, S=512" in " ".join(out.split())


def test_stages_of_a_schedule_hold_the_stacks_and_reduced_keys_are_not_cross_attention(cli, tmp_path):
    """Swin's four stages are runs of one scheduled call, each holding its blocks (shifted and
    unshifted windows: one stack); SegFormer's keys are a strided convolution of its queries,
    self-attention still; DETR's decoder reads the encoder's output (cross-attention)."""
    swin = tmp_path / "swin.json"
    swin.write_text(json.dumps({"model_type": "swin"}))  # Swin-T: depths 2, 2, 6, 2, dims 96..768
    code, out, err = cli("compare", str(swin), _config(tmp_path, "segformer-defaults"),
                         _config(tmp_path, "detr-base-bottleneck-gelu"), "--json")
    assert code == 0, err
    swin, segformer, detr = json.loads(out)["models"]
    assert [(s["path"], s["layers"], s["does"]) for s in swin["stacks"]] == [
        (f"encoder.layers.{i}.blocks", n, ["bidirectional"]) for i, n in enumerate((2, 2, 6, 2))]
    # a stage-0 block: 2 norms, qkv and proj with biases, a 13 x 13 x 3 position table, the MLP
    assert swin["stacks"][0]["params_per_layer"] == 4 * 96 + 96 * 288 + 288 + 96 * 96 + 96 + 13 * 13 * 3 + \
        2 * 96 * 384 + 384 + 96 == 112_347
    assert swin["kind"] == segformer["kind"] == "vision"
    assert [(s["path"], s["does"]) for s in segformer["stacks"]] == [
        (f"stages.{i}.blocks", ["bidirectional", "convolution"]) for i in range(4)]
    assert detr["kind"] == "encoder-decoder"
    assert [(s["role"], s["does"]) for s in detr["stacks"]] == [
        ("encoder", ["bidirectional"]), ("decoder", ["bidirectional", "cross-attention"])]
    assert detr["flops"]["per_image"] == detr["flops"]["forward"] and detr["flops"]["per_generated_token"] is None


def test_cross_attention_is_keys_from_another_value_not_another_block_input(cli, tmp_path):
    """BERT's template calls one attention block with (x, x) for self-attention and with
    (x, encoder_hidden_states) for cross-attention: only the second reads another sequence."""
    code, out, err = cli("compare", _config(tmp_path, "bert-masked-lm-tied"),
                         _config(tmp_path, "bert-lmhead-cross-attention"), "--set", "S=16", "--json")
    assert code == 0, err
    encoder, decoder = json.loads(out)["models"]
    assert [(s["path"], s["role"], s["does"]) for s in encoder["stacks"]] == [
        ("bert.encoder.layer", "encoder", ["bidirectional"])]
    assert encoder["kind"] == "encoder-only"
    assert [(s["path"], s["role"], s["does"]) for s in decoder["stacks"]] == [
        ("bert.encoder.layer", "decoder", ["causal", "cross-attention"])]
    assert decoder["kind"] == "encoder-decoder" and decoder["flops"]["per_generated_token"] > 0


def test_prefill_is_for_the_batch_and_a_generated_token_for_one_sequence():
    one, four = (compare(["gpt2", "t5-small"], {"B": b, "S": 64}, load=archgraph.load) for b in (1, 4))
    for a, b in zip(one, four):
        assert b.flops.prefill == 4 * a.flops.prefill and b.flops.per_token == a.flops.per_token
        assert b.memory.kv_cache_bytes == 4 * a.memory.kv_cache_bytes
    assert four[1].flops.encoder == 4 * one[1].flops.encoder


def test_an_image_model_with_side_inputs_is_measured_per_image(cli):
    """DiT reads latents [B, C, I, I], timesteps and class labels [B]: no sequence of token ids."""
    code, out, err = cli("compare", str(ROOT / "examples" / "dit.yaml"), "gpt2", "--set", "B=2", "--json")
    assert code == 0, err
    dit, _ = json.loads(out)["models"]
    assert dit["kind"] == "vision" and dit["flops"]["encoder_pass"] is None
    assert dit["flops"]["per_image"] * 2 == dit["flops"]["forward"]
    assert [(s["path"], s["role"], s["does"]) for s in dit["stacks"]] == [("blocks", "encoder", ["bidirectional"])]


def test_a_model_with_fewer_positions_than_the_default_is_compared_at_its_positions(cli, tmp_path):
    """A tiny Whisper's decoder holds 12 positions: compare measures it at T=12, says so in the
    header, and keeps GPT-2 at the default S=512; a length given with --set is never changed."""
    config = json.loads((DATA / "whisper-aliases-win.json").read_text())["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "max_source_positions": 12, "max_target_positions": 12}))
    code, out, err = cli("compare", str(path), "gpt2", "--json")
    assert code == 0, err
    assert [m["bindings"] for m in json.loads(out)["models"]] == [{"B": 1, "T": 12}, {"B": 1, "S": 512}]
    code, out, err = cli("compare", str(path), "gpt2")
    assert code == 0, err
    assert "at tmp: B=1, T=12 (its positions); gpt2: B=1, S=512" in " ".join(out.split()).replace(
        f"at {tmp_path.name}:", "at tmp:")
    code, out, err = cli("compare", str(path), "gpt2", "--set", "T=13")
    assert code == 2
    assert "sequence length 13 exceeds the 12 positions of the position table" in err
    assert "fix: give a sequence length of at most 12 (--set)" in err


def test_short_convolution_layers_are_a_stack_of_their_own(cli, tmp_path):
    """LFM2-1.2B: 10 short-convolution layers and 6 attention layers, each its own stack."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(json.loads((DATA / "lfm2-1.2b.json").read_text())["config"]))
    code, out, err = cli("compare", str(config), "gpt2", "--json")
    assert code == 0, err
    lfm2 = json.loads(out)["models"][0]
    assert [(s["path"], s["layers"], s["params_per_layer"], s["does"]) for s in lfm2["stacks"]] == [
        ("model.layers.0,1,3,…,15", 10, 67_119_104, ["convolution"]),
        ("model.layers.2,5,8,…,14", 6, 60_821_632, ["causal"])]


def test_a_decoder_without_an_encoder_has_no_encoder_pass(cli, tmp_path):
    """Qwen3-Next's DeltaNet layers compute their decay exp(A_log) from parameters alone: work that does
    not grow with the length, which in a model without an encoder or a tower every forward step does.
    It belongs to the prefill and to each generated token, not to an 'encoder pass' (it was 32 FLOPs)."""
    code, out, err = cli("compare", _config(tmp_path, "qwen3_next-odd-interval-seq-cls-tied"), "gpt2",
                         "--set", "S=64", "--json")
    assert code == 0, err
    qwen = json.loads(out)["models"][0]
    assert qwen["kind"] == "decoder-only"
    assert qwen["flops"] == {"forward": 23_268_896, "encoder_pass": None, "decoder_prefill": 23_268_896,
                             "per_generated_token": 364_376, "per_image": None, "decoder_length": "S"}


def test_width_is_the_token_embeddings_not_a_vision_towers_first_table(cli, tmp_path):
    """Mllama's vision tower comes first and holds small tables (gated aspect-ratio embeddings of
    max_num_tiles x its width: 16 here); the width a designer compares is the text model's (24)."""
    code, out, err = cli("compare", _config(tmp_path, "mllama-odd-base-one-tile"), "gpt2", "--json")
    assert code == 0, err
    assert [m["width"] for m in json.loads(out)["models"]] == [24, 768]


def test_what_limits_the_keys_is_said_with_how_many_layers(cli, tmp_path):
    """A layer schedule that mixes sliding-window (or chunked) and full attention layers is one stack,
    as they hold as many parameters; what they do says which window, and on how many of the layers:
    OLMo-3-32B slides on three of four layers, Llama 4 Scout reads its keys in chunks on three of
    four, ModernBERT-base's local layers see a window of 129 tokens around each (two of three; layer 0,
    without attn_norm, is a stack of its own)."""
    stacks = {}
    modernbert = tmp_path / "modernbert-base.json"
    modernbert.write_text(json.dumps({"model_type": "modernbert", "architectures": ["ModernBertModel"]}))
    for name in ("olmo3-32b", "llama4_text-defaults-causal", str(modernbert)):
        code, out, err = cli("compare", _config(tmp_path, name) if name[0] != "/" else name, "gpt2", "--json")
        assert code == 0, err
        stacks[name] = [(s["path"], s["layers"], s["does"]) for s in json.loads(out)["models"][0]["stacks"]]
    assert stacks["olmo3-32b"] == [("model.layers", 64, ["causal", "sliding window of 4,096 (48 of 64 layers)"])]
    assert stacks["llama4_text-defaults-causal"] == [
        ("model.layers", 48, ["causal", "chunks of 8,192 (36 of 48 layers)", "MoE 16 experts top 1"])]
    assert stacks[str(modernbert)] == [("layers.0", 1, ["bidirectional"]),
                                       ("layers.1..21", 21, ["bidirectional", "local window of 129 (14 of 21 layers)"])]


def test_a_long_stack_path_folds_after_a_dot_at_80_columns(tmp_path):
    """Gemma 4's language model's layers are `model.language_model.layers.0,1,2,…,28`: wider than the
    column at 80, the path goes on a second line after a dot, so the indices are read whole."""
    from rich.console import Console

    from archgraph.render.compare import compare_table
    from archgraph.render.fit import fit
    rows = compare([_config(tmp_path, "gemma4-26b-a4b-it-reconstructed"), "gpt2"], {}, load=archgraph.load)
    console = Console(width=80, record=True)
    console.print(fit(compare_table(rows, 80), console))
    lines = console.export_text().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    cells = [line.split("│")[1].rstrip() for line in lines if line.startswith("│ ")]
    cells = [c for c in cells if c.startswith("   ")]
    assert cells[:6] == ["   model.vision_tower.encoder.", "     layers", "   model.language_model.layers.",
                         "     0,1,2,…,28", "   model.language_model.layers.", "     5,11..29"]


def test_a_sliding_layers_per_token_flops_stop_growing_at_the_window(tmp_path):
    """Gemma 2's defaults, one layer sliding over 4,096 keys: a new token with 5,000 or 8,191 tokens
    cached scores 4,096 of them, so its FLOPs are the same; with 1,000 cached it scores 1,001."""
    from archgraph.load import load_config
    config = tmp_path / "config.json"
    config.write_text(json.dumps(json.loads((DATA / "gemma2-defaults-base.json").read_text())["config"]))
    per_token = {s: compare([str(config)], {"B": 1, "S": s}, load=load_config)[0].flops.per_token
                 for s in (1000, 5000, 8191)}
    per_key = 2 * 2 * 8 * 256   # q·k and probs·v, 8 heads of 256
    assert per_token[5000] == per_token[8191] == per_token[1000] + per_key * (4096 - 1001)
    assert per_token[1000] == 163_966_720   # as before the cap: under the window every cached key is seen
    assert per_token[8191] == 189_320_960   # (uncapped it was 222,875,392: 8,192 keys)


def test_a_second_figures_table_of_one_model_says_model_n_of_m():
    # four models at 80 columns: the fourth alone below (was '(models 4..4 of 4)')
    from rich.console import Console

    from archgraph.render.compare import compare_table
    from archgraph.render.fit import fit
    rows = compare(["t5-small", "gpt2", "bert-base-uncased", "llama-2-70b"], {}, load=archgraph.load)
    console = Console(width=80, record=True)
    console.print(fit(compare_table(rows, 80), console))
    titles = [line.strip() for line in console.export_text().splitlines() if line.startswith("at ")]
    assert titles == ["at B=1, S=512, T=512", "at B=1, S=512, T=512 (model 4 of 4)"]


def test_a_mixture_of_experts_stack_says_its_active_count_is_per_layer(cli):
    """A MoE stack's cell said '165,120 active' (tiny-moe's, docs/howto/compare.md) beside 'params/layer',
    as if it were the stack's count: it is a layer's, touched by one token."""
    from archgraph.render.compare import does_text
    [row] = compare([str(ROOT / "examples" / "parallel-moe.yaml")], {}, load=archgraph.load)
    [stack] = row.stacks
    assert does_text(stack).endswith(f"; {stack.active_per_layer:,} active per layer (one token)")
    assert stack.active_per_layer < stack.per_layer
