"""BERT, RoBERTa, DistilBERT, ALBERT and ViT configs beyond the recorded fixtures: the
defaults of a config that gives only its model_type and class (transformers' config
defaults; totals recorded with transformers 5.23.0), the switches that pick tensors,
and the errors for classes and layouts the families do not have."""
from __future__ import annotations

import pytest

from archgraph.errors import ArchgraphError, ShapeError
from archgraph.load import load_config

from conftest import write_config


def _params(tmp_path, **config):
    return load_config(write_config(tmp_path, **config)).params()


def test_an_untied_mlm_decoder_owns_its_weight_and_bias(tmp_path):
    base = dict(model_type="bert", architectures=["BertForMaskedLM"], vocab_size=50, hidden_size=8,
                num_attention_heads=2, num_hidden_layers=1, intermediate_size=4, max_position_embeddings=6)
    tied, untied = _params(tmp_path, **base), _params(tmp_path, **base, tie_word_embeddings=False)
    assert untied.total - tied.total == 50 * 8 + 50   # decoder.weight and decoder.bias
    shapes = {t: list(r.shape) for t, r in tied.tensors()}
    assert shapes["cls.predictions.bias"] == shapes["cls.predictions.decoder.bias"] == [50]


def test_roberta_positions_start_after_the_padding_index(tmp_path):
    path = write_config(tmp_path, model_type="roberta", hidden_size=8, num_attention_heads=2, num_hidden_layers=1,
                        intermediate_size=4, vocab_size=20, max_position_embeddings=514, pad_token_id=1)
    model = load_config(path)
    assert model.shapes(B=1, S=512).outputs  # rows 0 and 1 are reserved: 512 positions fit
    with pytest.raises(ShapeError, match="513"):
        model.shapes(B=1, S=513)


def test_albert_counts_one_group_however_many_layers_run_it(tmp_path):
    base = dict(model_type="albert", vocab_size=30, embedding_size=4, hidden_size=8, num_attention_heads=2,
                intermediate_size=16, max_position_embeddings=10)
    one, twelve = _params(tmp_path, **base, num_hidden_layers=1), _params(tmp_path, **base, num_hidden_layers=12)
    # embeddings 30·4 + 2·4 + 10·4 + 2·4, mapping 4·8 + 8, one layer 600, pooler 8·8 + 8
    assert one.total == twelve.total == 176 + 40 + 600 + 72
    two_groups = _params(tmp_path, **base, num_hidden_layers=12, num_hidden_groups=2)
    layer = 3 * (8 * 8 + 8) + (8 * 8 + 8) + 2 * 8 + (8 * 16 + 16) + (16 * 8 + 8) + 2 * 8
    assert two_groups.total - one.total == layer


def test_albert_groups_run_as_transformers_assigns_layers_to_them(tmp_path):
    # layer j runs group int(j / (5 / 2)): layers 0-2 group 0, layers 3-4 group 1
    path = write_config(tmp_path, model_type="albert", vocab_size=30, hidden_size=8, num_attention_heads=2,
                        num_hidden_layers=5, num_hidden_groups=2)
    encoder = load_config(path).graph.nodes["model"].body
    runs = [(node.label, node.body.nodes["albert_layers.0"].repeat) for name, node in encoder.nodes.items()
            if name.startswith("encoder.albert_layer_groups")]
    assert runs == [("encoder.albert_layer_groups.0", 3), ("encoder.albert_layer_groups.1", 2)]


def test_vit_reads_image_and_patch_sizes_as_numbers_or_pairs(tmp_path):
    base = dict(model_type="vit", architectures=["ViTForImageClassification"], hidden_size=8,
                num_attention_heads=2, num_hidden_layers=1, intermediate_size=4, num_labels=5)
    model = load_config(write_config(tmp_path, **base, image_size=[30, 20], patch_size=[7, 5], num_channels=1))
    shapes = {t: list(r.shape) for t, r in model.params().tensors()}
    # (30 // 7) * (20 // 5) = 16 patches and the class token
    assert shapes["vit.embeddings.position_embeddings"] == [1, 17, 8]
    assert shapes["vit.embeddings.patch_embeddings.projection.weight"] == [8, 1, 7, 5]
    assert list(model.shapes(B=2).outputs.values()) == [(2, 5)]


@pytest.mark.parametrize("model_type, architecture", [
    ("bert", "BertForMultipleChoice"),
    ("roberta", "RobertaForPreTraining"),
    ("distilbert", "DistilBertForPreTraining"),
    ("vit", "ViTForMaskedImageModeling"),
])


def test_a_class_the_family_does_not_have_is_refused(tmp_path, model_type, architecture):
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, model_type=model_type, architectures=[architecture]))
    assert err.value.message.endswith(f"model class '{architecture}' is not supported for model_type '{model_type}'")


def test_deberta_v2_refuses_the_non_legacy_mlm_head_by_its_key(tmp_path):
    base = dict(model_type="deberta-v2", architectures=["DebertaV2ForMaskedLM"], vocab_size=50, hidden_size=8,
                num_attention_heads=2, num_hidden_layers=1, intermediate_size=4)
    assert _params(tmp_path, **base, legacy=True).total == _params(tmp_path, **base).total
    with pytest.raises(ArchgraphError, match="'legacy' is false, which archgraph does not know for model_type "
                                             "'deberta-v2'"):
        _params(tmp_path, **base, legacy=False)


def test_deberta_v2_reads_pos_att_type_written_as_one_word(tmp_path):
    """DebertaV2Config splits "p2c|c2p" (as every DeBERTa v2/v3 checkpoint writes it) into a list."""
    base = {"model_type": "deberta-v2", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
            "intermediate_size": 4, "relative_attention": True, "share_att_key": False}
    word = _params(tmp_path, **base, pos_att_type="P2C | c2p").total
    assert word == _params(tmp_path, **base, pos_att_type=["p2c", "c2p"]).total
    assert word - _params(tmp_path, **base, pos_att_type=["c2p"]).total == 8 * 8 + 8   # pos_query_proj


@pytest.mark.parametrize("model_type, arch", [
    ("bert", "BertForQuestionAnswering"), ("electra", "ElectraForQuestionAnswering"),
    ("albert", "AlbertForQuestionAnswering"), ("distilbert", "DistilBertForQuestionAnswering"),
    ("mpnet", "MPNetForQuestionAnswering"), ("deberta-v2", "DebertaV2ForQuestionAnswering"),
    ("t5", "T5ForQuestionAnswering")])
def test_a_question_answering_head_with_other_than_two_labels_is_refused_by_name(tmp_path, model_type, arch):
    config = dict(model_type=model_type, architectures=[arch], hidden_size=32, d_model=32, num_hidden_layers=1,
                  num_layers=1, num_attention_heads=4, num_heads=4, intermediate_size=37, d_ff=37, d_kv=8,
                  vocab_size=99)
    with pytest.raises(ArchgraphError, match="a ...ForQuestionAnswering head has 2 outputs, start and end "
                                             "logits: set num_labels to 2"):
        load_config(write_config(tmp_path, **config, num_labels=3))
    assert load_config(write_config(tmp_path, **config, num_labels=2)).params().total > 0
