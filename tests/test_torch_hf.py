"""The Hugging Face templates compute what transformers computes: a tiny random model made with
transformers 5.23.0 loads into `to_module` of its config.json (load_state_dict strict), and in eval
mode, float32, its outputs agree within 1e-4."""
from __future__ import annotations

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from archgraph.load import load_config  # noqa: E402
from archgraph.torch import to_module  # noqa: E402

pytestmark = pytest.mark.slow

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
        "vocab_size": 97, "max_position_embeddings": 64}
CASES = {
    "llama-causal": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], **TINY, "num_key_value_heads": 2},
    "llama-base-bias-tied": {"model_type": "llama", "architectures": ["LlamaModel"], **TINY,
                             "attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True},
    "llama-causal-head-dim": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], **TINY,
                              "head_dim": 16, "num_key_value_heads": 1, "rope_theta": 500.0},
    "mistral-causal": {"model_type": "mistral", "architectures": ["MistralForCausalLM"], **TINY,
                       "num_key_value_heads": 2, "sliding_window": 5},
    "qwen2-causal": {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], **TINY, "num_key_value_heads": 2},
    "qwen2-sliding-layers": {"model_type": "qwen2", "architectures": ["Qwen2Model"], **TINY, "num_key_value_heads": 2,
                             "use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1},
    "llama-seq-cls": {"model_type": "llama", "architectures": ["LlamaForSequenceClassification"], **TINY,
                      "pad_token_id": 0, "num_labels": 3},
    "llama-token-cls": {"model_type": "llama", "architectures": ["LlamaForTokenClassification"], **TINY},
    "llama-qa": {"model_type": "llama", "architectures": ["LlamaForQuestionAnswering"], **TINY},
    "gemma-causal": {"model_type": "gemma", "architectures": ["GemmaForCausalLM"], **TINY, "num_key_value_heads": 1,
                     "head_dim": 8},
    "mixtral-causal": {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], **TINY,
                       "num_local_experts": 4, "num_experts_per_tok": 2, "num_key_value_heads": 2},
    "gpt2-lm": {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 32, "n_layer": 2, "n_head": 4,
                "vocab_size": 97, "n_positions": 64},
    "gpt2-base": {"model_type": "gpt2", "architectures": ["GPT2Model"], "n_embd": 32, "n_layer": 2, "n_head": 4,
                  "vocab_size": 97, "n_positions": 64},
    "gpt_neox-causal": {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], **TINY, "rotary_pct": 0.5},
    "gpt_neox-sequential": {"model_type": "gpt_neox", "architectures": ["GPTNeoXModel"], **TINY,
                            "use_parallel_residual": False},
    "opt-causal": {"model_type": "opt", "architectures": ["OPTForCausalLM"], "hidden_size": 32, "num_hidden_layers": 2,
                   "num_attention_heads": 4, "ffn_dim": 37, "vocab_size": 97, "max_position_embeddings": 64,
                   "word_embed_proj_dim": 32},
    "opt-proj": {"model_type": "opt", "architectures": ["OPTForCausalLM"], "hidden_size": 32, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "ffn_dim": 37, "vocab_size": 97, "max_position_embeddings": 64,
                 "word_embed_proj_dim": 16, "do_layer_norm_before": False},
    "bloom-causal": {"model_type": "bloom", "architectures": ["BloomForCausalLM"], "hidden_size": 32, "n_layer": 2,
                     "n_head": 4, "vocab_size": 97},
    "falcon-new-arch": {"model_type": "falcon", "architectures": ["FalconForCausalLM"], **TINY,
                        "new_decoder_architecture": True, "num_kv_heads": 2},
    "falcon-mqa-parallel": {"model_type": "falcon", "architectures": ["FalconModel"], **TINY,
                            "new_decoder_architecture": False, "multi_query": True, "parallel_attn": True},
    "falcon-alibi": {"model_type": "falcon", "architectures": ["FalconForCausalLM"], **TINY, "alibi": True,
                     "new_decoder_architecture": False, "multi_query": False, "parallel_attn": False, "bias": True},
    "bert-base": {"model_type": "bert", "architectures": ["BertModel"], **TINY, "type_vocab_size": 2},
    "bert-mlm": {"model_type": "bert", "architectures": ["BertForMaskedLM"], **TINY},
    "roberta-mlm": {"model_type": "roberta", "architectures": ["RobertaForMaskedLM"], **TINY, "pad_token_id": 1},
    "distilbert-base": {"model_type": "distilbert", "architectures": ["DistilBertModel"], "dim": 32, "n_layers": 2,
                        "n_heads": 4, "hidden_dim": 37, "vocab_size": 97, "max_position_embeddings": 64},
    "albert-base": {"model_type": "albert", "architectures": ["AlbertModel"], **TINY, "embedding_size": 16},
    "t5-cond-gen": {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "d_model": 32, "d_kv": 8,
                    "d_ff": 37, "num_layers": 2, "num_heads": 4, "vocab_size": 97},
    "t5-gated-encoder": {"model_type": "t5", "architectures": ["T5EncoderModel"], "d_model": 32, "d_kv": 8,
                         "d_ff": 37, "num_layers": 2, "num_heads": 4, "vocab_size": 97,
                         "feed_forward_proj": "gated-gelu"},
    "bart-cond-gen": {"model_type": "bart", "architectures": ["BartForConditionalGeneration"], "d_model": 32,
                      "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
                      "decoder_attention_heads": 4, "encoder_ffn_dim": 37, "decoder_ffn_dim": 37, "vocab_size": 97,
                      "max_position_embeddings": 64},
}


def _hf_model(config: dict):
    cfg = transformers.AutoConfig.for_model(**config)
    cfg._experts_implementation = "eager"  # the reference loop (the grouped kernel wants aligned sizes)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = getattr(transformers, config["architectures"][0])(cfg).eval()
    with torch.no_grad():  # random values everywhere: norms and biases too, so they matter
        for p in model.parameters():
            p.normal_(0, 0.5 if p.dim() == 1 else 0.2)
    return model


def _inputs(model, config: dict) -> dict:
    torch.manual_seed(1)
    out = {}
    for name, spec in model.inputs.items():
        if name in ("input_ids", "decoder_input_ids"):
            out[name] = torch.randint(2, config["vocab_size"], (2, 7))  # no padding or start token
        elif name == "token_type_ids":
            out[name] = torch.randint(0, config.get("type_vocab_size", 2), (2, 7))
        else:
            raise KeyError(name)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_template_computes_what_transformers_computes(tmp_path, name):
    config = CASES[name]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    reference = _hf_model(config)
    model = load_config(path)
    module = to_module(model).eval()
    module.load_state_dict(reference.state_dict(), strict=True)
    inputs = _inputs(model, config)
    with torch.no_grad():
        want = reference(**inputs)
        got = module(**inputs)
    assert got, "the template names no outputs"
    for key, value in got.items():
        expected = getattr(want, key)
        assert value.shape == expected.shape, key
        diff = (value - expected).abs().max().item()
        assert diff < 1e-4, f"{key}: max difference {diff:.3g}"
