"""A config that gives only `model_type`, the class and the sizes archgraph requires (vocabulary,
width, depth, heads) takes the defaults of the family's transformers configuration class for
everything else: totals recorded with transformers 5.23.0 from `model_type` and the class alone."""
from __future__ import annotations

import pytest

from archgraph.load import load_config
from conftest import write_config

# the keys archgraph requires, at the defaults of transformers' configuration classes
REQUIRED = {
    "bert": {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12},
    "roberta": {"vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12},
    "distilbert": {"vocab_size": 30522, "dim": 768, "n_layers": 6, "n_heads": 12},
    "albert": {"vocab_size": 30000, "hidden_size": 4096, "num_hidden_layers": 12, "num_attention_heads": 64},
    "vit": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12},
    "gpt2": {"vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12},
    "opt": {"vocab_size": 50272, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12},
    "gpt_neox": {"vocab_size": 50432, "hidden_size": 6144, "num_hidden_layers": 44, "num_attention_heads": 64},
    "bloom": {"vocab_size": 250880, "hidden_size": 64, "n_layer": 2, "n_head": 8},
    "falcon": {"vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71},
    "t5": {"vocab_size": 32128, "d_model": 512, "num_heads": 8, "num_layers": 6},
    "bart": {"vocab_size": 50265, "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12,
             "encoder_attention_heads": 16, "decoder_attention_heads": 16},
    "whisper": {"vocab_size": 51865, "d_model": 384, "encoder_layers": 4, "decoder_layers": 4,
                "encoder_attention_heads": 6, "decoder_attention_heads": 6},
}

# (model_type, architectures[0] or None for none given, what transformers builds)
MINIMAL = [
    ("bert", None, 109_482_240),
    ("bert", "BertForMaskedLM", 109_514_298),
    ("bert", "BertForPreTraining", 110_106_428),
    ("roberta", None, 124_644_864),
    ("roberta", "RobertaForMaskedLM", 124_696_665),
    ("roberta", "RobertaForSequenceClassification", 124_646_402),
    ("distilbert", None, 66_362_880),
    ("distilbert", "DistilBertForMaskedLM", 66_985_530),
    ("albert", None, 222_595_584),             # AlbertConfig's defaults are xxlarge sizes
    ("albert", "AlbertForMaskedLM", 206_368_944),
    ("albert", "AlbertForPreTraining", 223_158_450),
    ("vit", None, 86_389_248),
    ("vit", "ViTForImageClassification", 85_800_194),
    ("gpt2", "GPT2Model", 124_439_808),
    ("gpt2", "GPT2LMHeadModel", 124_439_808),
    ("gpt2", "GPT2ForSequenceClassification", 124_441_344),
    ("opt", "OPTModel", 125_239_296),
    ("opt", "OPTForSequenceClassification", 125_240_832),
    ("gpt_neox", "GPTNeoXModel", 20_244_713_472),
    ("gpt_neox", "GPTNeoXForCausalLM", 20_554_567_680),
    ("gpt_neox", "GPTNeoXForSequenceClassification", 20_244_725_760),
    ("bloom", "BloomForCausalLM", 16_156_544),
    ("bloom", "BloomForSequenceClassification", 16_156_672),
    ("falcon", "FalconModel", 6_921_720_704),
    ("falcon", "FalconForSequenceClassification", 6_921_729_792),
    ("t5", "T5Model", 60_506_624),
    ("t5", "T5ForConditionalGeneration", 60_506_624),
    ("t5", "T5EncoderModel", 35_330_816),
    ("t5", "T5ForSequenceClassification", 60_770_306),
    ("t5", "T5ForTokenClassification", 35_331_842),
    ("t5", "T5ForQuestionAnswering", 60_507_650),
    ("bart", "BartModel", 406_291_456),
    ("bart", "BartForConditionalGeneration", 406_291_456),
    ("bart", "BartForQuestionAnswering", 406_293_506),
    ("bart", "BartForCausalLM", 254_084_096),
    ("whisper", "WhisperModel", 37_760_640),
    ("whisper", "WhisperForConditionalGeneration", 37_760_640),
    ("whisper", "WhisperForCausalLM", 29_552_256),
]


@pytest.mark.parametrize("model_type, architecture, total", MINIMAL)
def test_a_config_of_only_model_type_takes_the_transformers_defaults(tmp_path, model_type, architecture, total):
    config = {"model_type": model_type, **REQUIRED[model_type]}
    if architecture:
        config["architectures"] = [architecture]
    assert load_config(write_config(tmp_path, **config)).params().total == total


@pytest.mark.parametrize("model_type", sorted(REQUIRED))
def test_a_config_without_a_required_size_is_an_error_naming_it(tmp_path, cli, model_type):
    first = next(iter(REQUIRED[model_type]))
    config = {k: v for k, v in REQUIRED[model_type].items() if k != first}
    path = write_config(tmp_path, model_type=model_type, **config)
    code, out, err = cli("params", path)
    assert (code, out) == (2, "")
    assert err.startswith(f"archgraph: error: {path}: the config lacks '{first}'")
    assert f"which a '{model_type}' model needs" in err
