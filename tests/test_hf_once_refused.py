"""Configs transformers runs that archgraph refused before issue 35 (OLMoE's clip_qkv, PhiMoE's two mscales,
T5Gemma's yarn, longrope and llama3 stacks, InternVL's vision_feature_layer, wav2vec 2.0's
use_weighted_layer_sum and add_adapter; DeepSeek-V2's and PhiMoE's keys transformers reads and ignores): each is built, with the parameters transformers 5.23.0 counts
(measured with its classes, every tensor; tests/test_torch_hf.py compares the outputs), and the neighbours
transformers cannot run are refused with its reason, by the key."""
from __future__ import annotations

import json

import pytest

from archgraph.errors import ArchgraphError
from archgraph.load import load_config
from test_torch_hf import CASES   # the configs alone: no torch needed

# keys transformers reads and ignores (DeepSeek's own code's router switches; PhiMoE's sparsemixer picks two)
EXTRA = {"deepseek_v2-causal-keys-transformers-ignores": {**CASES["deepseek_v2-causal"], "norm_topk_prob": True,
                                                          "scoring_func": "sigmoid", "moe_layer_freq": 2},
         "phimoe-causal-three-per-token": {**CASES["phimoe-causal"], "num_experts_per_tok": 3}}

# parameters as transformers 5.23.0 counts them (sum of numel over model.parameters())
COUNTS = {"olmoe-causal-clip-qkv": 69_552, "phimoe-longrope-mscales-long": 48_512,
          "t5gemma-cond-gen-rope-yarn-longrope": 56_192, "t5gemma-base-rope-llama3-yarn-mscale": 56_192,
          "internvl-feature-layer-2": 35_087, "internvl-feature-layer-embeddings": 31_170,
          "wav2vec2-seq-cls-weighted": 23_696, "wav2vec2-ctc-adapter": 25_149,
          "wav2vec2-base-adapter-same-width": 20_792, "wav2vec2-pretraining-adapter": 29_629,
          "hubert-seq-cls-weighted": 16_906, "hubert-base-adapter-ignored": 16_602,
          "hubert-ctc-adapter-same-width": 17_625,
          "deepseek_v2-causal-keys-transformers-ignores": 38_858, "phimoe-causal-three-per-token": 48_801}


def _load(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return load_config(path)


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_a_config_refused_before_counts_as_transformers(tmp_path, name):
    assert _load(tmp_path, EXTRA.get(name) or CASES[name]).params().total == COUNTS[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXTRA))
def test_a_key_transformers_ignores_computes_what_transformers_computes(tmp_path, monkeypatch, name):
    """As tests/test_torch_hf.py's cases (the other configs above are among them): at 7 tokens, and on a padded
    batch."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import test_torch_hf
    monkeypatch.setitem(test_torch_hf.CASES, name, EXTRA[name])
    (tmp_path / "padded").mkdir()
    test_torch_hf.test_template_computes_what_transformers_computes(tmp_path, name)
    test_torch_hf.test_padded_batch_computes_what_transformers_computes(tmp_path / "padded", name)


REFUSED = [
    ("internvl-cond-gen", {"vision_feature_layer": 0}, "vision_feature_layer 0 (the embeddings) is refused"),
    ("internvl-cond-gen", {"vision_feature_layer": -4}, "vision_feature_layer must index the vision tower's hidden"),
    ("internvl-cond-gen", {"vision_feature_layer": [-1]}, "'vision_feature_layer' must be a number; received [-1]"),
    ("Wav2Vec2ForSequenceClassification", {"add_adapter": True},
     "Sequence classification does not support the use of Wav2Vec2 adapters"),
    ("Wav2Vec2ForPreTraining", {"add_adapter": True, "output_hidden_size": 24},
     "output_hidden_size must equal hidden_size (transformers fails)"),
    ("HubertForSequenceClassification", {"add_adapter": True},
     "Sequence classification does not support the use of Hubert adapters"),
    ("hubert-ctc-stable-layer", {"add_adapter": True}, "HuBERT has no adapter: with add_adapter HubertForCTC's"),
    ("hubert-ctc-stable-layer", {"add_adapter": True, "output_hidden_size": 24}, "(the constraint 'head != 'ctc' or"),
]


@pytest.mark.parametrize("name, change, says", REFUSED, ids=[f"{n}-{'-'.join(c)}" for n, c, _ in REFUSED])
def test_what_transformers_cannot_run_is_refused_with_its_reason(tmp_path, name, change, says):
    with pytest.raises(ArchgraphError) as error:
        _load(tmp_path, {**CASES[name], **change})
    assert says in str(error.value)
