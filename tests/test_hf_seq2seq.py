"""T5, BART and Whisper configs beyond the recorded fixtures: the transformers defaults
of a config that gives only model_type and the class (totals recorded with transformers
5.23.0), the switches with surprising effects (T5 always ties; Whisper's frozen encoder
positions), and the errors for classes and values the families do not have."""
from __future__ import annotations

import pytest

from archgraph.errors import ArchgraphError
from archgraph.load import load_config
from conftest import reference, write_config
from test_hf_defaults import REQUIRED


def test_bart_classification_without_labels_has_three_classes(tmp_path):
    path = write_config(tmp_path, model_type="bart", architectures=["BartForSequenceClassification"],
                        **REQUIRED["bart"])
    assert load_config(path).params().total == 407_344_131


def test_t5_ties_the_lm_head_even_when_the_config_says_not_to(tmp_path):
    # transformers 5 reads tie_word_embeddings=false (T5 v1.1) as "do not rescale", and ties anyway
    path = write_config(tmp_path, model_type="t5", architectures=["T5ForConditionalGeneration"], vocab_size=100,
                        d_model=16, d_kv=4, d_ff=24, num_layers=2, num_heads=3, tie_word_embeddings=False)
    report = load_config(path).params()
    rows = dict(report.tensors())
    assert rows["lm_head.weight"].tied_to == "shared.weight"
    assert rows["decoder.embed_tokens.weight"].tied_to == "shared.weight"
    assert (report.total, report.totals.tied) == (9_664, 3 * 100 * 16)


def test_t5_encoder_model_has_no_decoder(tmp_path):
    path = write_config(tmp_path, model_type="t5", architectures=["T5EncoderModel"], vocab_size=100, d_model=16,
                        d_kv=4, d_ff=24, num_layers=2, num_decoder_layers=5, num_heads=3)
    model = load_config(path)
    names = [t for t, _ in model.params().tensors()]
    assert not [n for n in names if n.startswith("decoder.")]
    assert names[:2] == ["shared.weight", "encoder.embed_tokens.weight"]
    assert {k: tuple(map(str, v)) for k, v in model.shapes().outputs.items()} == {"last_hidden_state": ("B", "S", "16")}


T5_TINY = dict(model_type="t5", vocab_size=20, d_model=8, d_kv=2, d_ff=6, num_layers=1, num_heads=2)


@pytest.mark.parametrize("architecture, switches, refused", [
    ("T5EncoderModel", {"is_decoder": True}, "is_decoder is true: T5EncoderModel"),
    ("T5ForTokenClassification", {"is_decoder": True}, "is_decoder is true: T5EncoderModel"),
    ("T5ForConditionalGeneration", {"is_decoder": True}, None),   # T5Model's stacks set their own
    ("T5ForConditionalGeneration", {"is_encoder_decoder": False}, "is_encoder_decoder is false"),
    ("T5Model", {"is_encoder_decoder": False}, "is_encoder_decoder is false"),
    ("T5EncoderModel", {"is_encoder_decoder": False}, None),     # T5EncoderModel sets it to false itself
])
def test_t5_switches_transformers_reads_are_refused_where_they_change_the_model(tmp_path, architecture, switches,
                                                                                refused):
    """is_decoder makes T5EncoderModel's stack causal with cross-attention blocks, and
    is_encoder_decoder: false gives T5's decoder one cache for both attentions (other values):
    refused by name, where transformers reads them (tools/audit_config_keys.py found both dropped)."""
    path = write_config(tmp_path, **T5_TINY, architectures=[architecture], **switches)
    if refused is None:
        assert load_config(path).params().total > 0
        return
    with pytest.raises(ArchgraphError) as err:
        load_config(path)
    assert refused in err.value.message
    assert err.value.message.startswith("the 't5' template cannot be built with this config: ")


def test_t5_feed_forward_proj_picks_the_gated_layout(tmp_path):
    path = write_config(tmp_path, model_type="t5", vocab_size=10, d_model=8, d_ff=6, num_layers=1, num_heads=1,
                        d_kv=2, feed_forward_proj="gated-silu")
    names = [t for t, _ in load_config(path).params().tensors() if "DenseReluDense" in t]
    assert names[:3] == ["encoder.block.0.layer.1.DenseReluDense.wi_0.weight",
                         "encoder.block.0.layer.1.DenseReluDense.wi_1.weight",
                         "encoder.block.0.layer.1.DenseReluDense.wo.weight"]


def test_t5_unknown_feed_forward_proj_lists_the_known_values(tmp_path):
    path = write_config(tmp_path, model_type="t5", vocab_size=10, d_model=8, num_heads=2, num_layers=1,
                        feed_forward_proj="gated-prelu")
    with pytest.raises(ArchgraphError) as err:
        load_config(path)
    assert err.value.message == "'feed_forward_proj' is \"gated-prelu\", which archgraph does not know for " \
                                "model_type 't5'"
    assert err.value.hint.startswith("known values: relu, gelu, gelu_new, ")


def test_whisper_encoder_positions_are_parameters_but_frozen(tmp_path):
    ref = reference("whisper-tiny")
    report = load_config(write_config(tmp_path, **ref["config"])).params()
    frozen = 1500 * 384   # model.encoder.embed_positions: nn.Embedding with requires_grad_(False)
    assert (report.total, report.totals.trainable, report.totals.non_trainable) == (
        ref["expected_params"], ref["expected_params"] - frozen, frozen)


def test_whisper_reads_two_frames_per_encoder_position(tmp_path):
    path = write_config(tmp_path, model_type="whisper", architectures=["WhisperModel"], vocab_size=50, d_model=8,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_layers=1, decoder_layers=1,
                        encoder_ffn_dim=8, decoder_ffn_dim=8, num_mel_bins=3, max_source_positions=7,
                        max_target_positions=9, pad_token_id=0, bos_token_id=1, eos_token_id=1,
                        decoder_start_token_id=2)
    shapes = {path: [tuple(map(str, s)) for s in out] for path, _, out in load_config(path).shapes().nodes()}
    assert shapes["encoder.conv1"] == [("B", "8", "14")]
    assert shapes["encoder.conv2"] == [("B", "8", "7")]
    assert shapes["encoder.layer_norm"] == [("B", "7", "8")]


def test_whisper_audio_classification_is_refused(tmp_path):
    path = write_config(tmp_path, model_type="whisper", architectures=["WhisperForAudioClassification"])
    with pytest.raises(ArchgraphError) as err:
        load_config(path)
    assert err.value.message == "model class 'WhisperForAudioClassification' is not supported for " \
                                "model_type 'whisper'"
    assert "ForConditionalGeneration" in err.value.hint and "ForSequenceClassification" not in err.value.hint
