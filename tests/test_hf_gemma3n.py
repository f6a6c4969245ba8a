"""Gemma 3n with images (specs/hf/gemma3n.yaml): the gemma3n_text decoder, timm's MobileNet-V5 tower
and the two multimodal embedders.  transformers' Gemma3nModel always builds its audio tower too,
which archgraph does not build yet: every gemma3n config is refused by audio_config, and the
template is checked here against the fixtures of tests/data/gemma3n (gemma-3n-E2B's and E4B's
configs written from the published checkpoints, recorded by transformers 5.23.0 with timm 1.0.31)
without their model.audio_tower tensors.  Where timm imports, the template's outputs are checked
against transformers' on input_ids and pixel_values (no audio features)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import write_config

import archgraph
from archgraph import ArchgraphError
from archgraph.hf import import_config

ROOT = Path(__file__).resolve().parents[1]
SPEC = str(ROOT / "specs" / "hf" / "gemma3n.yaml")
DATA = ROOT / "tests" / "data" / "gemma3n"
FIXTURES = sorted(p.stem for p in DATA.glob("*.json"))


def _variables(config: dict) -> dict:
    """gemma3n.yaml's variables for a gemma3n config, as gemma3n's key table sets them (the text
    decoder's by gemma3n_text's table), for the template without its audio tower."""
    text = import_config({**config["text_config"], "model_type": "gemma3n_text"}).variables
    vision, audio = config.get("vision_config", {}), config.get("audio_config", {})
    arch = config["architectures"][0]
    out = {k: v for k, v in text.items() if k not in ("head", "tie")}
    out.update(head="base" if arch == "Gemma3nModel" else "cond_gen", tie=config.get("tie_word_embeddings", True))
    for var, sub, key in [("VH", vision, "hidden_size"), ("VV", vision, "vocab_size"), ("v_off", vision, "vocab_offset"),
                          ("v_eps", vision, "rms_norm_eps"), ("AH", audio, "hidden_size"), ("AV", audio, "vocab_size"),
                          ("a_off", audio, "vocab_offset"), ("a_eps", audio, "rms_norm_eps")]:
        if key in sub:
            out[var] = sub[key]
    if "image_token_id" in config:
        out["image_token"] = config["image_token_id"]
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_the_template_is_gemma3n_without_its_audio_tower(name):
    fixture = json.loads((DATA / f"{name}.json").read_text())
    prefix = "audio_tower." if fixture["config"]["architectures"] == ["Gemma3nModel"] else "model.audio_tower."
    want = {k: v for k, v in fixture["param_shapes"].items() if not k.startswith(prefix)}
    report = archgraph.load(SPEC, _variables(fixture["config"])).params()
    mine = {tensor: list(row.shape) for tensor, row in report.tensors()}
    assert mine == want
    audio = sum(_numel(v) for k, v in fixture["param_shapes"].items() if k.startswith(prefix))
    assert report.total == fixture["expected_params"] - audio
    assert audio == 681_348_640   # Gemma3nAudioEncoder at gemma-3n's audio_config


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def test_real_checkpoint_totals():
    totals = {n: json.loads((DATA / f"{n}.json").read_text())["expected_params"] for n in FIXTURES}
    assert totals == {"gemma3n-e2b": 5_418_464_192, "gemma3n-e4b": 7_818_517_072, "gemma3n-e4b-base": 7_818_517_072}


@pytest.mark.parametrize("config", [
    {"model_type": "gemma3n"},
    json.loads((DATA / "gemma3n-e4b.json").read_text())["config"],
])
def test_every_gemma3n_config_is_refused_by_its_audio_tower(tmp_path, config):
    path = write_config(tmp_path, **config)
    with pytest.raises(ArchgraphError, match="'audio_config' is (set|absent).*Gemma3nModel always builds the "
                                             "audio tower"):
        archgraph.load(path)


def test_a_vision_width_the_tower_cannot_give_is_refused():
    variables = _variables(json.loads((DATA / "gemma3n-e4b.json").read_text())["config"])
    with pytest.raises(ArchgraphError, match="must be 2048 and 256"):
        archgraph.load(SPEC, {**variables, "VH": 1024})


TIMM = importlib.util.find_spec("timm") is not None and importlib.util.find_spec("torchvision") is not None


@pytest.mark.slow
@pytest.mark.skipif(not TIMM, reason="timm (which needs a torchvision built for the torch beside it) is not installed")
@pytest.mark.parametrize("arch, tie, padded", [("Gemma3nForConditionalGeneration", True, False),
                                               ("Gemma3nModel", True, True),
                                               ("Gemma3nForConditionalGeneration", False, True)])
def test_images_and_multimodal_ids_compute_what_transformers_computes(arch, tie, padded):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from test_torch_hf import GEMMA3N_TEXT

    from archgraph.torch import to_module
    text = {**GEMMA3N_TEXT, "vocab_size": 300}   # room for both embedders' ids past the text's
    config = {"model_type": "gemma3n", "architectures": [arch], "text_config": text, "tie_word_embeddings": tie,
              "vision_config": {"model_type": "gemma3n_vision", "vocab_size": 8, "vocab_offset": 200,
                                "rms_norm_eps": 1e-5},
              "audio_config": {"model_type": "gemma3n_audio", "vocab_size": 6, "vocab_offset": 208, "hidden_size": 48,
                               "conf_num_hidden_layers": 1, "conf_num_attention_heads": 2, "rms_norm_eps": 1e-5},
              "image_token_id": 201}
    cfg = transformers.AutoConfig.for_model(**config)
    cfg._attn_implementation = cfg.text_config._attn_implementation = "eager"
    torch.manual_seed(0)
    ref = getattr(transformers, arch)(cfg).eval()
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if "vision_tower" not in name:
                p.normal_(0, 0.5 if p.dim() == 1 else 0.1)
            elif name.endswith("gamma"):
                p.normal_(0, 0.3)
            elif p.dim() == 1:
                p.normal_(1.0, 0.2)
    module = to_module(archgraph.load(SPEC, _variables(config)), check_memory=False).eval()
    module.load_state_dict({k: v for k, v in ref.state_dict().items() if "audio_tower" not in k}, strict=True)
    ids = torch.randint(0, 200, (2, 262))
    ids[:, 2:258] = 201                                                       # the image's 256 tokens
    ids[0, 259], ids[1, 260], ids[0, 261], ids[1, 1] = 203, 210, 207, 213     # embed_vision's and embed_audio's ids
    pixels = torch.randn(2, 3, 64, 64)
    mask = torch.ones_like(ids)
    if padded:   # row 0 starts with two padding positions, row 1 ends with three
        mask[0, :2] = 0
        mask[1, -3:] = 0
    with torch.no_grad():
        out = ref(input_ids=ids, pixel_values=pixels, attention_mask=mask)
        got = module(input_ids=ids, pixel_values=pixels, attention_mask=mask)
    key = "last_hidden_state" if arch == "Gemma3nModel" else "logits"
    want, got = getattr(out, key), got[key]
    assert got.shape == want.shape
    keep = mask.bool()   # what padding positions hold is nobody's output
    assert torch.allclose(got[keep], want[keep], atol=1e-4)
