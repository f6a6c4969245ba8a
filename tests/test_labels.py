"""Every label says what its number is (issue 38): the tensors ties and shared blocks reuse, each
counted once with how many times it is used; which FLOPs a figure is (a whole forward, divided by
which input's tokens; compare's forward per new token; sweep's 6N training FLOPs per token); a
stack's parameters outside its repeated layers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import archgraph
from archgraph.load import load_config

DATA = Path(__file__).parent / "data" / "hf"


def test_t5_small_names_its_shared_embedding_and_how_often_it_is_used(cli):
    code, out, _ = cli("params", "t5-small")
    assert code == 0
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "Shared (counted once) 16,449,536 1 tensor" in lines
    assert "Reuses (not counted again) 49,348,608 3 × 16,449,536" in lines  # shared, encoder, decoder, lm_head
    assert "shared: shared.weight (16,449,536) used 4 times" in lines
    assert not [line for line in lines if "Tied or shared" in line]
    data = json.loads(cli("params", "t5-small", "--json")[1])
    assert data["shared"] == [{"path": "shared.weight", "params": 16_449_536, "uses": 4}]
    assert data["tied"] == 3 * 16_449_536  # the key stays: the reuses' sum


def test_albert_names_its_shared_layer_as_a_block():
    report = archgraph.load("albert-base-v2").params()
    [shared] = report.shared()
    assert (shared.path, shared.params, shared.uses, shared.block) == \
        ("encoder.albert_layer_groups.0.albert_layers.0", 7_087_872, 12, True)
    assert shared.reused == report.totals.tied == 11 * 7_087_872


@pytest.mark.parametrize("name", ["bart-base-tied", "albert-masked-lm-tied", "bert-masked-lm-tied",
                                  "bart-condgen-untied-odd-heads", "albert-groups-inner"])
def test_the_reuses_add_up_to_what_transformers_counts_twice(tmp_path, name):
    """named_parameters(remove_duplicate=False) counts a tied tensor under each name: the
    recorded `params_if_tied_counted_twice` less the total is what the listed reuses add."""
    fixture = json.loads((DATA / f"{name}.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fixture["config"]))
    report = load_config(path).params()
    shared = report.shared()
    assert sum(s.reused for s in shared) == report.totals.tied
    if not any(s.block for s in shared):
        assert report.totals.tied == fixture["params_if_tied_counted_twice"] - fixture["expected_params"]


def test_flops_names_the_whole_forward_and_the_tokens_it_is_divided_by(cli):
    out = cli("flops", "t5-small", "--set", "B=1", "--set", "S=512", "--set", "T=512")[1]
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "Forward (the whole model) 71,659,421,696 71.66 GFLOP" in lines
    assert "Forward ÷ 512 tokens of input_ids 139,959,808 139.96 MFLOP" in lines  # decoder's T tokens not divided by
    data = json.loads(cli("flops", "t5-small", "--set", "B=1", "--set", "S=512", "--set", "T=512", "--json")[1])
    assert (data["forward_flops_per_token"], data["tokens"], data["tokens_of"]) == (139_959_808, 512, "input_ids")
    out = cli("flops", "resnet-50", "--set", "B=1")[1]
    assert "Forward ÷ 1 sample of pixel_values" in out and "samples" not in out
    out = cli("flops", "t5-small")[1]  # symbolic: no figure in units, no 'None'
    assert "None" not in out and "— (give every size a value: --set)" in out


def test_sweep_says_its_flops_per_token_are_6n_training_flops(cli):
    out = cli("sweep", "gpt2", "--vary", "L=2,4")[1]
    assert "6N training" in out and "FLOPs/token" in out
    assert "per_token" not in out
