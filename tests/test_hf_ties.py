"""Which flag ties lm_head to the token embedding, class by class, as transformers 5.23.0 decides.

transformers ties the tensors a model's `_tied_weights_keys` names when that model's own config has
`tie_word_embeddings` (PreTrainedModel.get_expanded_tied_weights_keys), and does so for every
PreTrainedModel the model holds.  A composite's config is the top level, so text_config's flag is not
read, except where the config class copies it up (Qwen2-VL's, Qwen2.5-VL's, LLaVA's and OneVision's
__post_init__: "pre-v5 saves placed it inside text_config") or where the head is a model of the text
config (Llama 4's language_model is a Llama4ForCausalLM; Qwen3.5's ForCausalLM is built on text_config).
An absent flag is the config class's default.  TIES below is that truth table; the first test checks
archgraph against it on the combinations of the two flags (absent, false, true) that tell the rules
apart, the second (with transformers) checks the table and archgraph against the models transformers
builds on all nine.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from archgraph.load import load_config

DATA = Path(__file__).parent / "data" / "hf"

# (model_type, class) -> (which flags tie, the top level's default, text_config's default in the fixture);
# "top": the top level's tie_word_embeddings alone; "text": text_config's alone; "either"; "never"
TIES = {
    ("llava", "LlavaForConditionalGeneration"): ("either", False, True),   # a Starcoder2 ties by default
    ("llava_next", "LlavaNextForConditionalGeneration"): ("top", False, False),
    ("llava_onevision", "LlavaOnevisionForConditionalGeneration"): ("either", False, False),
    ("mistral3", "Mistral3ForConditionalGeneration"): ("top", True, False),
    ("paligemma", "PaliGemmaForConditionalGeneration"): ("top", True, True),
    ("idefics3", "Idefics3ForConditionalGeneration"): ("top", False, False),
    ("smolvlm", "SmolVLMForConditionalGeneration"): ("top", False, False),
    ("internvl", "InternVLForConditionalGeneration"): ("top", True, False),
    ("mllama", "MllamaForConditionalGeneration"): ("never", False, False),
    ("gemma3", "Gemma3ForConditionalGeneration"): ("top", True, True),
    ("gemma3", "Gemma3ForSequenceClassification"): ("never", True, True),
    ("gemma4", "Gemma4ForConditionalGeneration"): ("top", True, True),
    ("gemma3n", "Gemma3nForConditionalGeneration"): ("top", True, True),
    ("llama4", "Llama4ForConditionalGeneration"): ("text", False, False),
    ("t5gemma", "T5GemmaForConditionalGeneration"): ("top", True, True),   # the decoder's flag is not read
    ("qwen2_vl", "Qwen2VLForConditionalGeneration"): ("either", False, False),
    ("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration"): ("either", False, False),
    ("qwen3_vl", "Qwen3VLForConditionalGeneration"): ("top", False, False),
    ("qwen3_vl_moe", "Qwen3VLMoeForConditionalGeneration"): ("top", False, True),
    ("qwen3_5", "Qwen3_5ForConditionalGeneration"): ("top", False, False),
    ("qwen3_5", "Qwen3_5ForCausalLM"): ("text", False, False),
    ("qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration"): ("top", False, False),
    ("qwen3_5_moe", "Qwen3_5MoeForCausalLM"): ("text", False, False),
}
# a small recorded config of each family, its class and flags replaced by each case
BASES = {"llava": "llava-starcoder2-text-tied", "llava_next": "llava_next-odd-base-feature-layers-no-bias",
         "llava_onevision": "llava_onevision-odd-base-clip-default-llama-text-tied",
         "mistral3": "mistral3-text-tie-ignored", "paligemma": "paligemma-text-tie-ignored",
         "idefics3": "idefics3-base-tied-scale1", "smolvlm": "smolvlm-odd-text-tied",
         "internvl": "internvl-tied-defaults-vision", "mllama": "mllama-odd-base-one-tile",
         "gemma3": "gemma3-odd-untied-head-vision-defaults", "gemma4": "gemma4-odd-untied-clipped-k2-gqa",
         "gemma3n": "gemma3n-e2b", "llama4": "llama4-odd-tied-text-quarter-shuffle",
         "t5gemma": "t5gemma-condgen-untied-uneven-stacks", "qwen2_vl": "qwen2_vl-base",
         "qwen2_5_vl": "qwen2_5_vl-odd-nested-windows", "qwen3_vl": "qwen3_vl-odd-base-no-deepstack",
         "qwen3_vl_moe": "qwen3_vl_moe-odd-dense-schedule", "qwen3_5": "qwen3_5-odd-causal-text-tied",
         "qwen3_5_moe": "qwen3_5_moe-odd-base-layer-types"}
ABSENT = "absent"
FLAGS = (ABSENT, False, True)


def _sub(model_type: str) -> str:
    return "decoder" if model_type == "t5gemma" else "text_config"


def config_of(model_type: str, cls: str, top, text) -> dict:
    """The family's base config as class `cls`, its top-level and text_config (T5Gemma: decoder) flags set
    (ABSENT: left out)."""
    config = copy.deepcopy(json.loads((DATA / f"{BASES[model_type]}.json").read_text())["config"])
    config["architectures"] = [cls]
    sub = config.setdefault(_sub(model_type), {})
    for holder, flag in ((config, top), (sub, text)):
        holder.pop("tie_word_embeddings", None)
        if flag != ABSENT:
            holder["tie_word_embeddings"] = flag
    config.pop("tie_embedding", None)
    return config


def expected(key, top, text) -> bool:
    rule, top_default, text_default = TIES[key]
    top = top_default if top == ABSENT else top
    text = text_default if text == ABSENT else text
    return {"top": top, "text": text, "either": top or text, "never": False}[rule]


def archgraph_ties(tmp_path, key, top, text) -> bool:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config_of(*key, top, text)))
    heads = {name: row for name, row in load_config(path).params().tensors()
             if name.startswith(("lm_head.", "language_model.lm_head.")) and name.endswith("weight")}
    assert len(heads) == (0 if "SequenceClassification" in key[1] else 1), sorted(heads)
    return any(row.tied_to is not None for row in heads.values())


# the flags that tell the rules apart: the defaults, each flag set against the other, one set over a default
TELLING = [(ABSENT, ABSENT), (False, True), (True, False), (ABSENT, True)]
CASES = [(key, top, text) for key in TIES for top, text in TELLING]


@pytest.mark.parametrize("key, top, text", CASES, ids=[f"{cls}-top-{top}-text-{text}".lower()
                                                         for (_, cls), top, text in CASES])
def test_archgraph_ties_lm_head_as_transformers(tmp_path, key, top, text):
    assert archgraph_ties(tmp_path, key, top, text) == expected(key, top, text)


ALL = [(key, top, text) for key in TIES for top in FLAGS for text in FLAGS]


@pytest.mark.slow
@pytest.mark.parametrize("key, top, text", ALL, ids=[f"{cls}-top-{top}-text-{text}".lower()
                                                     for (_, cls), top, text in ALL])
def test_the_table_is_what_transformers_builds(tmp_path, key, top, text):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import importlib.util
    if key[0] == "gemma3n" and importlib.util.find_spec("timm") is None:
        pytest.skip("transformers builds Gemma 3n's vision tower with timm, which is not installed")
    config = config_of(*key, top, text)
    cfg = transformers.AutoConfig.for_model(**config)
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    from record_hf import build
    with torch.device("meta"):
        model = build(getattr(transformers, key[1]), cfg)
    embeddings = [m.weight for name, m in model.named_modules()
                  if isinstance(m, torch.nn.Embedding) and name.endswith("embed_tokens")]
    head = model.get_output_embeddings()
    weight = getattr(head, "weight", None) if head is not None else None
    assert any(weight is e for e in embeddings) == expected(key, top, text)
    assert archgraph_ties(tmp_path, key, top, text) == expected(key, top, text)
