"""Dropout probabilities from the configs: every config key holding a dropout probability that
transformers applies reaches the template (a dropout node's p, an attention op's `dropout`), so the
module computes what transformers computes in training mode too; keys transformers stores and never
applies are listed here by name, each with why, and a key in neither place fails."""
from __future__ import annotations

import json

import pytest

from archgraph import hf
from archgraph.load import load_config

# Keys a config class stores that its transformers 5.23.0 model never applies (read the modeling
# files): nothing to honour.  model_type -> {key: why}
NOT_APPLIED = {
    "phi3": {"embd_pdrop": "Phi3Model has no embedding dropout (only resid_pdrop and attention_dropout)"},
    "gpt2": {"summary_first_dropout": "only GPT2DoubleHeadsModel's SequenceSummary reads it, a head not built"},
    "electra": {"summary_last_dropout": "only ElectraForMultipleChoice's SequenceSummary reads it, a head not built"},
    "dbrx": {"emb_pdrop": "DbrxModel stores it and never applies it (only resid_pdrop and attn_pdrop)"},
}

# Keys transformers applies and the template does not read yet: the module's training-mode outputs
# differ from transformers' when they are not 0 (eval is exact).  Each one is work left; the list only
# shrinks.  model_type -> keys
NOT_YET = {
    "opt": ["layerdrop"],
    "falcon": ["hidden_dropout", "attention_dropout"],
    "bart": ["encoder_layerdrop", "decoder_layerdrop"], "mbart": ["encoder_layerdrop", "decoder_layerdrop"],
    "whisper": ["encoder_layerdrop", "decoder_layerdrop"],
    "wav2vec2": ["layerdrop"], "hubert": ["layerdrop"],
    "dinov2": ["drop_path_rate"], "dinov2_with_registers": ["drop_path_rate"], "dinov3_vit": ["drop_path_rate"],
    "convnext": ["drop_path_rate"],
    "internvl_vision": ["hidden_dropout_prob", "projection_dropout"],   # InternViT's MLP and attention outputs
    "deberta-v2": ["hidden_dropout_prob", "attention_probs_dropout_prob", "pooler_dropout"],
    "swin": ["hidden_dropout_prob", "attention_probs_dropout_prob", "drop_path_rate"],
    "segformer": ["hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout_prob", "drop_path_rate"],
    "mobilenet_v2": ["classifier_dropout_prob"], "efficientnet": ["dropout_rate", "drop_connect_rate"],
    "detr": ["encoder_layerdrop", "decoder_layerdrop", "dropout", "attention_dropout", "activation_dropout"],
}


def _read_keys(entry) -> set[str]:
    """The config keys a key table reads: its variables' keys (text_config.attention_dropout as
    written), and the sub-configs it hands to their own model_type's table whole (`configs:`)."""
    keys = set(entry.get("configs") or {})
    for rule in (entry.get("variables") or {}).values():
        key = rule if isinstance(rule, str) else rule.get("key") if isinstance(rule, dict) else None
        for part in (key or "").split("|"):
            if part:
                keys.add(part.rstrip("?"))
    return keys


def _is_read(key: str, read: set[str]) -> bool:
    """`key` read as written, or inside a sub-config handed whole to its own table (`configs:`)."""
    return key in read or "." in key and key.split(".")[0] in read


def _drop_keys(model_type: str, nested: bool = False) -> set[str]:
    """The config class's keys holding a dropout probability; `nested`: its sub-configs' too
    (text_config.attention_dropout)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(model_type).to_dict()
    keys = {k for k in config if "drop" in k.lower()}
    if nested:
        keys |= {f"{k}.{sub}" for k, v in config.items() if isinstance(v, dict) and k.endswith("config")
                 for sub in v if "drop" in sub.lower()}
    return keys


@pytest.mark.parametrize("model_type", hf.family_names())
def test_every_dropout_key_is_read_or_named_as_not_applied(model_type):
    """A sub-config's keys (text_config.attention_dropout) are its own model_type's table's."""
    keys = _drop_keys(model_type, nested=True)
    read = _read_keys(hf.family(model_type))
    listed = set(NOT_APPLIED.get(model_type, {})) | set(NOT_YET.get(model_type, []))
    assert not (read & listed), f"{model_type}: read, and listed as not applied or not yet: {sorted(read & listed)}"
    unread = {k for k in keys - listed if not _is_read(k, read)}
    assert unread == set(), f"{model_type}: dropout keys neither read nor listed"
    assert listed <= keys, f"{model_type}: listed keys its config class does not have: {sorted(listed - keys)}"


def _dropouts(model) -> dict[str, float]:
    """node path -> its dropout probability: a dropout node's p, an attention op's dropout."""
    out = {}
    from archgraph import SpecError
    try:
        report = model.shapes(B=1, S=4)
    except SpecError:   # an image model: no sequence length to give
        report = model.shapes(B=1)
    for path, node, _ in report.nodes():
        if node.op.__class__.__name__ == "Dropout":
            out[path] = node.op.p
        elif getattr(node.op, "dropout", 0):
            out[path] = node.op.dropout
    return out


TINY = {"vocab_size": 64, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 4, "num_key_value_heads": 2}

# a config with distinct probabilities, and where each must arrive (layer 0's nodes; lib.attention's
# probabilities are its sdpa's, self_attn.core)
CARRIED = {
    "llama": ({"attention_dropout": 0.11}, {"layers.0.self_attn.core": 0.11}),
    "starcoder2": ({"attention_dropout": 0.11, "residual_dropout": 0.22, "embedding_dropout": 0.33},
                   {"layers.0.self_attn.core": 0.11, "layers.0.attn_dropout": 0.22,
                    "layers.0.mlp_dropout": 0.22, "embed_dropout": 0.33}),
    "phi3": ({"attention_dropout": 0.11, "resid_pdrop": 0.22, "embd_pdrop": 0.33},
             {"layers.0.self_attn.core": 0.11, "layers.0.attn_dropout": 0.22,
              "layers.0.mlp_dropout": 0.22}),
    "phi": ({"attention_dropout": 0.11, "resid_pdrop": 0.22, "embd_pdrop": 0.33},
            {"layers.0.self_attn.core": 0.11, "layers.0.attn_dropout": 0.22,
             "layers.0.mlp_dropout": 0.22, "embed_dropout": 0.33}),
    "stablelm": ({"attention_dropout": 0.11, "hidden_dropout": 0.22},
                 {"layers.0.self_attn.core": 0.11, "layers.0.mlp_dropout": 0.22}),
    "olmo2": ({"attention_dropout": 0.11}, {"layers.0.self_attn.core": 0.11}),
    "cohere": ({"attention_dropout": 0.11}, {"layers.0.self_attn.core": 0.11}),
    "glm4": ({"attention_dropout": 0.11}, {"layers.0.self_attn.core": 0.11}),
    "mixtral": ({"attention_dropout": 0.11}, {"layers.0.self_attn": 0.11}),
    "qwen3_moe": ({"attention_dropout": 0.11}, {"layers.0.self_attn": 0.11}),
    "gemma": ({"attention_dropout": 0.11}, {"layers.0.self_attn.core": 0.11}),
    "gemma2": ({"attention_dropout": 0.11}, {"layers.0.self_attn": 0.11}),
    "gemma3_text": ({"attention_dropout": 0.11}, {"layers.0.self_attn": 0.11}),
    "clip_text_model": ({"attention_dropout": 0.11}, {"encoder.layers.0.self_attn": 0.11}),
    "siglip_vision_model": ({"attention_dropout": 0.11, "image_size": 32, "patch_size": 8},
                            {"encoder.layers.0.self_attn": 0.11}),
    "clip": ({"text_config": {"attention_dropout": 0.11}, "vision_config": {"attention_dropout": 0.22}},
             {f"text_model.encoder.layers.{i}.self_attn": 0.11 for i in range(12)} |
             {f"vision_model.encoder.layers.{i}.self_attn": 0.22 for i in range(12)}),
    "gpt2": ({"attn_pdrop": 0.11, "resid_pdrop": 0.22, "embd_pdrop": 0.33},
             {"h.0.attn.core": 0.11, "h.0.attn.resid_dropout": 0.22, "h.0.mlp.dropout": 0.22, "drop": 0.33}),
    "gpt_bigcode": ({"attn_pdrop": 0.11, "resid_pdrop": 0.22, "embd_pdrop": 0.33},
                    {"h.0.attn": 0.11, "h.0.attn.resid_dropout": 0.22, "h.0.mlp.dropout": 0.22, "drop": 0.33}),
    "bert": ({"hidden_dropout_prob": 0.22, "attention_probs_dropout_prob": 0.11},
             {"embeddings.dropout": 0.22, "encoder.layer.0.attention.self.attend": 0.11,
              "encoder.layer.0.attention.output.dropout": 0.22, "encoder.layer.0.output.dropout": 0.22}),
    "roberta": ({"architectures": ["RobertaForSequenceClassification"], "classifier_dropout": 0.33},
                {"roberta.embeddings.dropout": 0.1, "roberta.encoder.layer.0.attention.self.attend": 0.1,
                 "roberta.encoder.layer.0.attention.output.dropout": 0.1, "roberta.encoder.layer.0.output.dropout": 0.1,
                 "classifier.dropout": 0.33, "classifier.dropout_2": 0.33}),
    "electra": ({"architectures": ["ElectraForTokenClassification"], "hidden_dropout_prob": 0.22},   # the classifier's too
                {"electra.embeddings.dropout": 0.22, "electra.encoder.layer.0.attention.self.attend": 0.1,
                 "electra.encoder.layer.0.attention.output.dropout": 0.22, "electra.encoder.layer.0.output.dropout": 0.22,
                 "dropout": 0.22}),
    "t5": ({"num_layers": 1, "num_decoder_layers": 1, "dropout_rate": 0.22},
           {"encoder.dropout": 0.22, "encoder.block.0.layer.0.SelfAttention": 0.22,
            "encoder.block.0.layer.0.dropout": 0.22, "encoder.block.0.layer.1.DenseReluDense": 0.22,
            "encoder.block.0.layer.1.dropout": 0.22, "encoder.final_dropout": 0.22, "decoder.dropout": 0.22,
            "decoder.block.0.layer.0.SelfAttention": 0.22, "decoder.block.0.layer.0.dropout": 0.22,
            "decoder.block.0.layer.1.EncDecAttention": 0.22, "decoder.block.0.layer.1.dropout": 0.22,
            "decoder.block.0.layer.2.DenseReluDense": 0.22, "decoder.block.0.layer.2.dropout": 0.22,
            "decoder.final_dropout": 0.22}),
    "bart": ({"encoder_layers": 1, "decoder_layers": 1, "d_model": 16, "encoder_attention_heads": 4,
              "decoder_attention_heads": 4, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32,
              "dropout": 0.11, "attention_dropout": 0.22, "activation_dropout": 0.33},
             {"encoder.dropout": 0.11, "encoder.layers.0.self_attn": 0.22, "encoder.layers.0.self_attn_dropout": 0.11,
              "encoder.layers.0.activation_dropout": 0.33, "encoder.layers.0.fc2_dropout": 0.11, "decoder.dropout": 0.11,
              "decoder.layers.0.self_attn": 0.22, "decoder.layers.0.self_attn_dropout": 0.11,
              "decoder.layers.0.encoder_attn": 0.22, "decoder.layers.0.encoder_attn_dropout": 0.11,
              "decoder.layers.0.activation_dropout": 0.33, "decoder.layers.0.fc2_dropout": 0.11}),
    "codegen": ({"n_embd": 16, "n_layer": 1, "n_head": 4, "rotary_dim": 4, "attn_pdrop": 0.11, "resid_pdrop": 0.22,
                 "embd_pdrop": 0.33},
                {"drop": 0.33, "h.0.attn": 0.11, "h.0.attn.resid_dropout": 0.22, "h.0.mlp.dropout": 0.22}),
    "opt": ({"ffn_dim": 32, "do_layer_norm_before": False, "dropout": 0.22, "attention_dropout": 0.11},
            {"decoder.layers.0.self_attn": 0.11, "decoder.layers.0.self_attn_dropout": 0.22,
             "decoder.layers.0.fc2_dropout": 0.22}),
}


# where a config class's defaults are not 0 (GPT2Config: 0.1 each)
DEFAULTS = {
    "gpt2": {"h.0.attn.core": 0.1, "h.0.attn.resid_dropout": 0.1, "h.0.mlp.dropout": 0.1, "drop": 0.1},
    "gpt_bigcode": {"h.0.attn": 0.1, "h.0.attn.resid_dropout": 0.1, "h.0.mlp.dropout": 0.1, "drop": 0.1},
}


DEFAULTS["bart"] = {k: 0.1 for k, v in CARRIED["bart"][1].items() if v == 0.11}   # BartConfig: dropout 0.1, the rest 0
DEFAULTS["opt"] = {"decoder.layers.0.self_attn_dropout": 0.1, "decoder.layers.0.fc2_dropout": 0.1}
DEFAULTS["t5"] = {k: 0.1 for k in CARRIED["t5"][1]}
DEFAULTS["bert"] = {"embeddings.dropout": 0.1, "encoder.layer.0.attention.self.attend": 0.1,
                    "encoder.layer.0.attention.output.dropout": 0.1, "encoder.layer.0.output.dropout": 0.1}
DEFAULTS["roberta"] = {k: 0.1 for k in CARRIED["roberta"][1]}
DEFAULTS["electra"] = {k: 0.1 for k in CARRIED["electra"][1]}


@pytest.mark.parametrize("model_type", sorted(CARRIED))
def test_the_configs_probabilities_reach_the_ops(tmp_path, model_type):
    extra, want = CARRIED[model_type]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **TINY, **extra}))
    assert _dropouts(load_config(path)) == want
    path.write_text(json.dumps({"model_type": model_type, **TINY, **{k: v for k, v in extra.items()
                                                                     if "drop" not in k and not k.endswith("config")}}))
    assert _dropouts(load_config(path)) == DEFAULTS.get(model_type, {})   # the config class's defaults


def _with_dropout(config: dict, p: float) -> dict:
    """The config with every dropout key its config class has (top level) set to p, and
    classifier_dropout, which a ...ForTokenClassification reads when present (else 0.1)."""
    out = {**config, **dict.fromkeys(_drop_keys(config["model_type"]) | {"classifier_dropout"}, p)}
    for key in _drop_keys(config["model_type"], nested=True):   # text_config.attention_dropout
        sub, _, name = key.partition(".")
        if name and isinstance(config.get(sub), dict):
            out[sub] = {**out[sub], name: p}
    return out


TRAINED = ["llama-causal", "llama-token-cls", "phi3-causal", "starcoder2-causal", "stablelm-causal", "phi-causal",
           "olmo2-causal", "cohere-causal", "glm4-causal", "qwen2-causal", "mixtral-causal", "qwen3_moe-causal",
           "gpt_oss-causal", "gemma-causal", "gemma2-causal-capped", "gemma3_text-causal", "jamba-causal",
           "recurrent_gemma-causal", "deepseek_v3-causal", "gpt2-lm", "gpt2-cross-inverse-layer", "gpt_bigcode-mqa",
           "bert-mlm", "bert-cross-attention", "BertForSequenceClassification", "BertForTokenClassification",
           "RobertaForSequenceClassification", "XLMRobertaForTokenClassification", "ElectraForSequenceClassification",
           "ElectraForTokenClassification", "ElectraForCausalLM", "clip-model", "siglip-model", "clip-text", "siglip-vision",
           "llava-cond-gen", "llava-gemma", "llava-qwen2-siglip-full", "qwen2_vl-cond-gen",
           "T5ForConditionalGeneration", "T5ForSequenceClassification", "T5ForTokenClassification",
           "BartModel", "BartForSequenceClassification", "BartForCausalLM", "whisper-cond-gen", "WhisperForCausalLM", "vit-image-cls", "dinov2-base", "gptj-causal", "codegen-causal", "gpt_neox-causal", "gpt_neox-sequential",
           "GPTNeoXForTokenClassification", "opt-causal", "OPTForSequenceClassification",
           "bloom-causal", "BloomForTokenClassification",
           "MPNetForMaskedLM", "MPNetForSequenceClassification", "MPNetForTokenClassification",
           "DistilBertForSequenceClassification", "DistilBertForTokenClassification", "DistilBertForQuestionAnswering",
           "AlbertForSequenceClassification", "AlbertForPreTraining", "albert-base",
           "ModernBertForMaskedLM", "ModernBertForSequenceClassification", "ModernBertForTokenClassification"]


@pytest.mark.slow
@pytest.mark.parametrize("name", TRAINED)
def test_training_mode_computes_what_transformers_computes(tmp_path, name):
    """With every dropout at 0, a training-mode forward is transformers' training-mode forward; with
    0.3 everywhere the module's training-mode outputs differ from its eval outputs."""
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    from test_torch_hf import CASES, _hf_model, _hf_only, _inputs, _settings
    config = _with_dropout(CASES[name], 0.0)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    reference = _hf_model(config).train()
    module = to_module(load_config(path, _settings(config))).train()
    module.load_state_dict(reference.state_dict(), strict=True)
    inputs = _inputs(module, config)
    with torch.no_grad():
        want, got = reference(**inputs, **_hf_only(config, inputs)), module(**inputs)
    for key, value in got.items():
        assert (value - getattr(want, key)).abs().max().item() < 1e-4, key
    path.write_text(json.dumps(_with_dropout(CASES[name], 0.3)))
    module = to_module(load_config(path, _settings(config)))
    module.load_state_dict(reference.state_dict(), strict=True)
    with torch.no_grad():
        evaluated = module.eval()(**inputs)
        trained = module.train()(**inputs)
    for key, value in trained.items():
        assert (value - evaluated[key]).abs().max().item() > 1e-3, key
