"""A config that gives only `model_type` (and the class) takes the defaults of the
family's transformers configuration class: totals recorded with transformers 5.23.0."""
from __future__ import annotations

import pytest

from archgraph.hf import load_config
from conftest import write_config

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
    config = {"model_type": model_type}
    if architecture:
        config["architectures"] = [architecture]
    assert load_config(write_config(tmp_path, **config)).params().total == total
