"""compare: encoder, decoder and encoder-decoder side by side, and the chart."""
from __future__ import annotations

import json

import pytest
from conftest import REFERENCE

import archgraph


def test_compare_json_encoder_decoder(cli):
    code, out, err = cli("compare", "bert-base-uncased", "gpt2", "t5-small", "--set", "S=512", "--json")
    assert code == 0, err
    bert, gpt2, t5 = json.loads(out)["models"]
    assert [bert["params"], gpt2["params"], t5["params"]] == [109_482_240, 124_439_808, 60_506_624]
    assert bert["by_category"]["embedding"] == 23_835_648
    assert gpt2["embedding_share"] == (50257 + 1024) * 768 / 124_439_808
    assert [bert["layers"], gpt2["layers"], t5["layers"]] == [12, 12, 12]
    assert [bert["per_layer"], gpt2["per_layer"]] == [7_087_872, 7_087_872]
    assert [bert["width"], gpt2["width"], t5["width"]] == [768, 768, 512]
    assert gpt2["weights_bytes"]["int4"] == 124_439_808 // 2
    assert bert["kv_cache_bytes"] is None
    assert gpt2["kv_cache_bytes"] == 2 * 12 * 512 * 768 * 2
    assert t5["kv_cache_bytes"] == 2 * (6 + 6) * 512 * 8 * 64 * 2  # self + cross attention, T = S
    assert t5["bindings"] == {"B": 1, "S": 512, "T": 512}
    flops = archgraph.passes.flops.count_flops(archgraph.load("gpt2"), {"B": 1, "S": 512})
    assert gpt2["flops_per_token"] == flops.forward // 512


def test_compare_table_and_chart(cli, tmp_path):
    chart = tmp_path / "chart.png"
    code, out, err = cli("compare", "bert-base-uncased", "gpt2", "-o", str(chart))
    assert code == 0, err
    assert "embedding share" in out and "— (no decoder)" in out and "21.8%" in out
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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
    assert (whisper["layers"], whisper["per_layer"]) == (8, 4 * 384 ** 2 + 3 * 384 + 4 * 384 + 2 * 384 * 1536 + 1536 + 384)
    assert (resnet["layers"], resnet["per_layer"]) == (3 + 4 + 6 + 3, 1_117_184)
    assert t5["layers"] == 12


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
    code, out, err = cli("compare", str(path), "gpt2")
    assert code == 0, err
    assert "at clip: B=1, S=77; gpt2: B=1, S=512)" in " ".join(out.split())
