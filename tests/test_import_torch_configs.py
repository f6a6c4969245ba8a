"""`import-torch config.json` of configs whose models need more than the config says: a field left
unset (None) that the model needs is set as its documentation or relatives set it (`hfdefaults`),
inputs are made as the model's processor makes them (`hfinputs`), and the spec's description says
what was set; the spec counts what transformers builds from the same config."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from archgraph.cli import main  # noqa: E402
from archgraph.fromtorch import hfdefaults, notes  # noqa: E402
from archgraph.load import load  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

OCR_TEXT = {"model_type": "deepseek_ocr2_text", "num_hidden_layers": 3, "hidden_size": 32, "num_attention_heads": 4,
            "intermediate_size": 64, "moe_intermediate_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
            "n_shared_experts": 1, "vocab_size": 100}
ESM = {"model_type": "esm", "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4,
       "intermediate_size": 64}


def test_mlp_layer_types_left_unset_is_one_dense_layer_then_sparse_ones():
    config = transformers.AutoConfig.for_model(**OCR_TEXT)
    assert config.mlp_layer_types is None
    said = hfdefaults.fill(config, "DeepseekOcr2TextModel")
    assert config.mlp_layer_types == ["dense", "sparse", "sparse"]
    assert said == ["the config leaves mlp_layer_types unset, without which transformers cannot build "
                    "DeepseekOcr2TextModel: archgraph set mlp_layer_types = ['dense', 'sparse', 'sparse'] (the first "
                    "layer dense, the rest sparse, as the config's documentation writes it: "
                    "['dense', 'sparse', 'sparse', ...])"]


def test_first_k_dense_replace_sets_how_many_layers_are_dense():
    config = transformers.AutoConfig.for_model(**OCR_TEXT)
    config.first_k_dense_replace = 2  # a relative's key (DeepSeek-V2), read where the config has it
    config.num_hidden_layers = 7
    hfdefaults.fill(config, "M")
    assert config.mlp_layer_types == ["dense"] * 2 + ["sparse"] * 5


def test_an_unset_vocabulary_is_the_default_vocabulary_of_the_config_module():
    """ESM's default config sets no vocabulary; its module's default is ESM-2's 33 tokens, '<pad>'
    at 1 and '<mask>' at 32 (as ESM-2's checkpoints set them)."""
    config = transformers.AutoConfig.for_model(**ESM)
    said = hfdefaults.fill(config, "EsmModel")
    assert (config.vocab_size, config.pad_token_id, config.mask_token_id) == (33, 1, 32)
    assert said == ["the config leaves vocab_size, pad_token_id and mask_token_id unset, without which transformers "
                    "cannot build EsmModel: archgraph set vocab_size = 33, pad_token_id = 1, mask_token_id = 32 "
                    "(vocab_size the length of the default vocabulary of transformers.models.esm.configuration_esm "
                    "(get_default_vocab_list), pad_token_id the index of '<pad>', mask_token_id the index of '<mask>')"]


def test_a_config_whose_fields_are_set_or_unknown_to_the_rules_is_left_as_it_is():
    config = transformers.AutoConfig.for_model("bert", vocab_size=50, pad_token_id=None)
    assert hfdefaults.fill(config, "BertModel") == [] and config.pad_token_id is None


def test_a_build_that_fails_for_another_reason_is_refused_with_its_own_error():
    from archgraph.errors import ArchgraphError
    config = transformers.AutoConfig.for_model("bert")

    def fails():
        raise ArchgraphError("transformers cannot build BertModel from this config: boom")
    with pytest.raises(ArchgraphError, match="boom"):
        hfdefaults.built(fails, config, "BertModel")


NEMOTRON = {"model_type": "nemotron", "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4,
            "head_dim": 8, "intermediate_size": 64, "vocab_size": 100}
T5GEMMA2_TEXT = {"model_type": "t5gemma2_text", "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 64, "vocab_size": 100,
                 "layer_types": ["sliding_attention", "full_attention"]}


def test_a_field_documented_to_default_to_another_is_set_to_its_value():
    """NemotronConfig leaves num_key_value_heads None ('If it is not specified, will default to
    `num_attention_heads`'), and NemotronModel divides by it: set to num_attention_heads, and said."""
    config = transformers.AutoConfig.for_model(**NEMOTRON)
    assert hfdefaults.fill(config, "NemotronModel") == [
        "the config leaves num_key_value_heads unset, without which transformers cannot build NemotronModel: "
        "archgraph set num_key_value_heads = 4 (NemotronConfig's documentation: it defaults to num_attention_heads)"]
    assert config.num_key_value_heads == 4


def test_a_field_documented_with_a_number_is_left_unset():
    """Mistral's sliding_window 'defaults to 4096', but None there means no window: not set."""
    config = transformers.AutoConfig.for_model("mistral", sliding_window=None)
    assert hfdefaults.fill(config, "MistralModel") == [] and config.sliding_window is None


def test_a_field_the_config_class_lacks_is_its_modules_default():
    """T5Gemma2TextEncoder reads config.dropout_rate, which T5Gemma2TextConfig does not declare
    (T5Gemma2Config sets it on its parts): the default the module's configs give it, 0.0."""
    config = transformers.AutoConfig.for_model(**T5GEMMA2_TEXT)
    failure = "transformers cannot build T5Gemma2TextEncoder: 'T5Gemma2TextConfig' object has no attribute 'dropout_rate'"
    assert hfdefaults.fill(config, "T5Gemma2TextEncoder") == []  # only where the build's failure names it
    said = hfdefaults.fill(config, "T5Gemma2TextEncoder", failure)
    assert config.dropout_rate == 0.0
    assert said == ["the config leaves dropout_rate unset, without which transformers cannot build T5Gemma2TextEncoder: "
                    "archgraph set dropout_rate = 0.0 (T5Gemma2TextConfig has no dropout_rate, which the model reads: "
                    "T5Gemma2Config's default, as the configs of its own module give it)"]


def test_a_field_left_unset_without_a_documented_default_is_refused_naming_it_and_its_example():
    """Informer's prediction_length is 'typically dictated by the dataset': refused naming it, the
    fix saying where to set it and the value InformerConfig's own example sets; import_coverage
    sets that value and says so."""
    from archgraph.errors import ArchgraphError
    from archgraph.fromtorch import hfbuild
    from import_coverage import _example
    config = transformers.AutoConfig.for_model("informer")
    with pytest.raises(ArchgraphError) as err:
        hfdefaults.built(lambda: hfbuild.build(hfbuild.base_class(config), config, "config.json"), config,
                         "InformerModel")
    assert err.value.message == ("transformers cannot build InformerModel from this config: ValueError: The "
                                 "`prediction_length` config needs to be specified; the config leaves prediction_length "
                                 "unset, and InformerConfig documents no default for it")
    assert err.value.hint == 'set "prediction_length" in the config (InformerConfig\'s own example sets prediction_length=12)'
    assert config.prediction_length is None  # never set by archgraph
    assert _example("informer", err.value.message) == {"prediction_length": 12}


def test_notes_are_kept_only_while_recording():
    notes.say("not kept")
    assert notes.said() == ""
    with notes.recording():
        notes.say("a")
        notes.say("a")
        notes.say("b")
        assert notes.said() == "; a; b"
    assert notes.said() == ""


@pytest.mark.slow
@pytest.mark.parametrize("raw, cls, count, said", [
    (OCR_TEXT, "DeepseekOcr2TextModel", 37_472, "archgraph set mlp_layer_types = ['dense', 'sparse', 'sparse']"),
    (ESM, "EsmModel", 52_105, "archgraph set vocab_size = 33, pad_token_id = 1, mask_token_id = 32"),
    (NEMOTRON, "NemotronModel", 19_904, "archgraph set num_key_value_heads = 4"),
    (T5GEMMA2_TEXT, "T5Gemma2TextEncoder", 21_984, "archgraph set dropout_rate = 0.0"),
])
def test_a_default_config_transformers_cannot_build_imports_with_the_field_set(raw, cls, count, said, tmp_path):
    """The spec counts what transformers builds from the config with the same field set, every
    state_dict name and shape equal (tools/import_coverage's comparison), and says what was set."""
    from import_coverage import _compare
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main(["import-torch", str(path), "-o", str(tmp_path / "m.yaml")]) == 0
    assert _compare(path, tmp_path / "m.yaml") == {"class": cls, "params": count, "status": "imported"}
    assert said in load(str(tmp_path / "m.yaml")).description


PIX2STRUCT = {"model_type": "pix2struct", "vision_config": {
    "hidden_size": 32, "patch_embed_hidden_size": 12, "d_ff": 64, "d_kv": 8, "num_hidden_layers": 1,
    "num_attention_heads": 4, "seq_len": 64}, "text_config": {
    "vocab_size": 100, "hidden_size": 32, "d_kv": 8, "d_ff": 64, "num_layers": 1, "num_heads": 4}}
INSTRUCTBLIP = {"model_type": "instructblip", "num_query_tokens": 4, "text_config": {
    "model_type": "llama", "vocab_size": 100, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
    "num_attention_heads": 4}, "vision_config": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                                                 "num_attention_heads": 4, "image_size": 16, "patch_size": 8},
    "qformer_config": {"vocab_size": 50, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 4, "encoder_hidden_size": 32}}


@pytest.mark.slow
@pytest.mark.parametrize("raw, cls, count, said", [
    (PIX2STRUCT, "Pix2StructForConditionalGeneration", 35_840, ""),
    (INSTRUCTBLIP, "InstructBlipModel", 64_832, "the config leaves image_token_index unset: archgraph set it to 99"),
    ({"model_type": "qwen2_5_omni_dit", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
      "ff_mult": 2, "emb_dim": 16, "head_dim": 8, "mel_dim": 10, "enc_dim": 12, "enc_emb_dim": 14,
      "enc_channels": [8, 8, 8, 8, 24], "enc_attention_channels": 4, "enc_se_channels": 4, "enc_res2net_scale": 2,
      "num_embeds": 50, "repeats": 2}, "Qwen2_5OmniToken2WavDiTModel", 46_562, "imported from PyTorch"),
])
def test_a_model_reading_inputs_as_its_processor_makes_them_imports(raw, cls, count, said, tmp_path):
    """Pix2Struct's flattened patches (row, column, pixels), InstructBLIP's image placeholders (its
    default config sets no image token) and the token2wav DiT's mel frames, codes, speaker and time
    are made, and the model imports as transformers counts it."""
    from import_coverage import _compare
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main(["import-torch", str(path), "-o", str(tmp_path / "m.yaml")]) == 0
    assert _compare(path, tmp_path / "m.yaml") == {"class": cls, "params": count, "status": "imported"}
    assert said in load(str(tmp_path / "m.yaml")).description


def test_an_infinite_bound_is_read_as_the_number_it_is(tmp_path):
    """Mamba-2's time_step_limit [0, inf] (the default of Nemotron-H's text config: no upper bound,
    written Infinity by json.dumps) is a number transformers reads, not a size beyond archgraph's
    limits (it refused nemo_speechlm and nemotron_h_omni); a size of inf is still refused by name."""
    from archgraph.configcheck import read_raw
    from archgraph.errors import ArchgraphError
    from archgraph.fromtorch import hfconfig
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "nemotron_h", "time_step_limit": [0.0, float("inf")]}))
    assert "Infinity" in path.read_text()
    raw = read_raw(path)
    assert raw["time_step_limit"] == [0.0, float("inf")]
    assert hfconfig.config_object(raw, path).time_step_limit[1] == float("inf")
    path.write_text(json.dumps({"model_type": "nemotron_h", "hidden_size": float("inf")}))
    with pytest.raises(ArchgraphError) as err:
        hfconfig.config_object(read_raw(path), path)
    assert err.value.message == "'hidden_size' must be a whole number; received inf"
