"""Gemma 3n with images and audio (specs/hf/gemma3n.yaml): the gemma3n_text decoder, timm's
MobileNet-V5 tower, Gemma 3n's conformer audio tower (gemma3n_audio.yaml) and the two multimodal
embedders.  Its counts, names, shapes and buffers are checked by the fixtures tests/data/hf/gemma3n-*
(test_hf_configs: gemma-3n-E2B's and E4B's configs written from the published checkpoints, recorded by
transformers 5.23.0 with timm 1.0.31); here, what it refuses, and, where timm imports, its outputs
against transformers' on input_ids, pixel_values and input_features."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import write_config

import archgraph
from archgraph import ArchgraphError

ROOT = Path(__file__).resolve().parents[1]
E4B = json.loads((ROOT / "tests" / "data" / "hf" / "gemma3n-e4b.json").read_text())


def test_real_checkpoint_totals_include_the_audio_tower(tmp_path):
    assert E4B["expected_params"] == 7_818_517_072   # transformers 5.23.0, timm 1.0.31
    report = archgraph.load(write_config(tmp_path, **E4B["config"])).params()
    audio = sum(row.count for tensor, row in report.tensors() if tensor.startswith("model.audio_tower."))
    assert report.total == 7_818_517_072 and audio == 681_348_640


def test_a_vision_width_the_tower_cannot_give_is_refused(tmp_path):
    config = json.loads(json.dumps(E4B["config"]))
    config["vision_config"]["hidden_size"] = 1024
    with pytest.raises(ArchgraphError, match="must be 2048 and 256"):
        archgraph.load(write_config(tmp_path, **config))


TIMM = importlib.util.find_spec("timm") is not None and importlib.util.find_spec("torchvision") is not None


@pytest.mark.slow
@pytest.mark.skipif(not TIMM, reason="timm (which needs a torchvision built for the torch beside it) is not installed")
@pytest.mark.parametrize("arch, tie, padded", [("Gemma3nForConditionalGeneration", True, False),
                                               ("Gemma3nModel", True, True),
                                               ("Gemma3nForConditionalGeneration", False, True)])
def test_images_audio_and_multimodal_ids_compute_what_transformers_computes(tmp_path, arch, tie, padded):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from test_torch_hf import GEMMA3N_TEXT

    from archgraph.torch import to_module
    text = {**GEMMA3N_TEXT, "vocab_size": 300}   # room for both embedders' ids past the text's
    config = {"model_type": "gemma3n", "architectures": [arch], "text_config": text, "tie_word_embeddings": tie,
              "vision_config": {"model_type": "gemma3n_vision", "vocab_size": 8, "vocab_offset": 200,
                                "rms_norm_eps": 1e-5},
              # embed_audio's rows hold the text vocabulary's last id, the audio padding row
              "audio_config": {"model_type": "gemma3n_audio", "vocab_size": 6, "vocab_offset": 294, "hidden_size": 48,
                               "input_feat_size": 16, "sscp_conv_channel_size": [8, 4], "conf_num_hidden_layers": 2,
                               "conf_num_attention_heads": 2, "conf_attention_chunk_size": 4,
                               "conf_attention_context_left": 5, "rms_norm_eps": 1e-5},
              "image_token_id": 201, "audio_token_id": 295, "audio_soft_tokens_per_image": 6}
    cfg = transformers.AutoConfig.for_model(**config)
    cfg._attn_implementation = cfg.text_config._attn_implementation = "eager"
    torch.manual_seed(0)
    ref = getattr(transformers, arch)(cfg).eval()
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if "vision_tower" not in name:   # (the audio tower's too: they matter)
                p.normal_(0, 0.5 if p.dim() == 1 else 0.1)
            elif name.endswith("gamma"):
                p.normal_(0, 0.3)
            elif p.dim() == 1:
                p.normal_(1.0, 0.2)
    module = to_module(archgraph.load(write_config(tmp_path, **config)), check_memory=False).eval()
    module.load_state_dict(ref.state_dict(), strict=True)
    ids = torch.randint(0, 200, (2, 270))
    ids[:, 2:258] = 201                                                       # the image's 256 tokens
    ids[:, 260:266] = 295                                                     # the clip's 6 audio tokens
    ids[0, 259], ids[1, 266], ids[0, 267], ids[1, 1] = 203, 296, 207, 299     # embed_vision's and embed_audio's ids
    pixels = torch.randn(2, 3, 64, 64)
    features = torch.randn(2, 64, 16)             # 64 frames: 4 after the front end's and the conformer's strides
    frames = torch.ones(2, 64, dtype=torch.bool)
    frames[1, 40:] = False                        # the second clip is shorter: its last frames are padding
    mask = torch.ones_like(ids)
    if padded:   # row 0 starts with two padding positions, row 1 ends with three
        mask[0, :2] = 0
        mask[1, -3:] = 0
    inputs = {"input_ids": ids, "pixel_values": pixels, "input_features": features, "input_features_mask": frames,
              "attention_mask": mask}
    with torch.no_grad():
        out = ref(**inputs)
        got = module(**inputs)
    key = "last_hidden_state" if arch == "Gemma3nModel" else "logits"
    want, got = getattr(out, key), got[key]
    assert got.shape == want.shape
    keep = mask.bool()   # what padding positions hold is nobody's output
    assert torch.allclose(got[keep], want[keep], atol=1e-4)
