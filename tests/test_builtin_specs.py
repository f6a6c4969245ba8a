"""Every built-in spec against figures archgraph did not compute: the Hugging Face
reference (totals, every tensor's name and shape, measured forward shapes), the
seed documents and the GPT-3 paper."""
from __future__ import annotations

import pytest

import archgraph
from archgraph.dims import to_json
from conftest import measured_shapes, reference

# spec name -> reference file in tests/data/reference/hf
WITH_REFERENCE = {
    "bert-base-uncased": "bert-base-uncased",
    "bert-base-chinese": "bert-base-chinese",
    "bloom-1b4-zh": "bloom-1b4-zh",
    "gpt2": "gpt2",
    "llama-2-7b": "llama-2-7b",
    "llama-3-8b": "llama-3-8b",
    "t5-small": "t5-small",
    "albert-base-v2": "albert-base-v2",
    "resnet-50": "resnet-50",
}
# the reference holds only the total for these
TOTAL_ONLY = {"llama-2-70b": "llama-2-70b"}


@pytest.mark.parametrize("spec", sorted(WITH_REFERENCE | TOTAL_ONLY))
def test_total_matches_reference(spec):
    names = WITH_REFERENCE | TOTAL_ONLY
    assert archgraph.load(spec).params().total == reference(names[spec])["expected_params"]


@pytest.mark.parametrize("spec", sorted(WITH_REFERENCE))
def test_every_tensor_name_and_shape_matches_reference(spec):
    ref = reference(WITH_REFERENCE[spec])
    mine = {name: list(row.shape) for name, row in archgraph.load(spec).params().tensors()}
    assert sorted(set(ref["param_shapes"]) - set(mine)) == []
    assert sorted(set(mine) - set(ref["param_shapes"])) == []
    assert mine == ref["param_shapes"]


@pytest.mark.parametrize("spec", sorted(WITH_REFERENCE))
def test_tied_elements_are_what_a_naive_count_adds(spec):
    ref = reference(WITH_REFERENCE[spec])
    report = archgraph.load(spec).params()
    if spec == "albert-base-v2":  # one layer applied 12 times: torch lists it once, we report the reuse
        (layer,) = _shared_blocks(report.blocks)
        assert layer.repeat == 12
        assert report.totals.tied == 11 * layer.per_repetition.total
    else:
        assert report.total + report.totals.tied == ref["params_if_tied_counted_twice"]


def _shared_blocks(rows):
    for row in rows:
        if row.shared:
            yield row
        yield from _shared_blocks(row.children)


def test_seed_figures():
    assert archgraph.load("bert-base-uncased-nopooler").params().total == 108_891_648  # seeds 000, 001
    assert archgraph.load("bert-base-chinese").params().total == 102_267_648           # seed 002


def test_bloom_categories_are_those_of_seed_003():
    report = archgraph.load("bloom-1b4-zh").params()
    assert report.total == 1_303_111_680
    assert dict(report.totals.by_category) == {
        "embedding": 94_504_960, "norm": 204_800, "attention": 402_849_792, "mlp": 805_552_128, "head": 0}
    assert report.totals.tied == 94_504_960  # the lm_head: listed by the seed, counted once
    lm_head = next(rows for path, node, new, rows in report.nodes() if path == "lm_head")
    assert lm_head[0].tied_to == "transformer.word_embeddings.weight"


def test_gpt3_175b_from_the_paper_table():
    # Brown et al. 2020, Table 2.1: n_layers 96, d_model 12288, n_heads 96, d_head 128, context 2048.
    L, d, V, P = 96, 12288, 50257, 2048
    per_layer = (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d) + 2 * (2 * d)
    expected = V * d + P * d + L * per_layer + 2 * d
    report = archgraph.load("gpt3-175b").params()
    assert report.total == expected == 174_604_259_328
    assert report.totals.tied == V * d


def _compare_shapes(spec: str, measured: str, bindings: dict, least: int, **settings):
    truth = measured_shapes(measured)["leaf_output_shapes"]
    report = archgraph.load(spec, settings).shapes(**bindings)
    matched = 0
    for path, _, outputs in report.nodes():
        if path in truth:
            assert [to_json(d) for d in outputs[0]] == truth[path], path
            matched += 1
    assert matched >= least


def test_bert_shapes_match_the_measured_forward_pass():
    _compare_shapes("bert-base-uncased", "bert-base-uncased", {"B": 2, "S": 16}, least=139)


def test_gpt2_shapes_match_the_measured_forward_pass():
    # every measured module but the 12 attention dropouts inside the core
    _compare_shapes("gpt2", "gpt2", {"B": 2, "S": 16}, least=113 - 12)


def test_symbolic_shapes_stay_symbolic():
    report = archgraph.load("gpt2").shapes()
    assert [to_json(d) for d in report.outputs["logits"]] == ["B", "S", 50257]
    assert [to_json(d) for d in report.shape_of("transformer.wpe")[0]] == [1, "S", 768]


def test_every_builtin_spec_loads_and_zoo_lists_it(cli):
    names = set(archgraph.builtin_specs())
    assert {"bert-base-uncased", "bert-base-uncased-nopooler", "bert-base-chinese", "bloom-1b4-zh", "gpt2",
            "llama-2-7b", "t5-small", "albert-base-v2", "resnet-50", "gpt3-175b"} <= names
    code, out, err = cli("zoo")
    assert code == 0 and err == ""
    for name in names:
        assert name in out
    assert "174,604,259,328" in out and "6,738,415,616" in out
