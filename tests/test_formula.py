"""Closed-form parameter formulas: exact at the spec's values for every built-in spec, general
(right at other values too), and the generated hand derivation (`explain`)."""
from __future__ import annotations

import json

import pytest
import sympy

import archgraph
from archgraph.passes.formula import param_formula, sym as symbol
from conftest import reference


@pytest.mark.parametrize("spec", sorted(archgraph.builtin_specs()))
def test_formula_evaluates_to_the_count_for_every_builtin_spec(spec):
    f = param_formula(archgraph.load(spec, symbolic=True))
    assert f.evaluate() == archgraph.load(spec).params().total
    assert f.notes == []  # no tensor had to be counted as a bare number
    assert f.free_names()  # and it is a formula, not a number


def test_bert_base_formula_is_the_textbook_one():
    V, P, T, H, L = (symbol(n) for n in "VPTHL")
    f = param_formula(archgraph.load("bert-base-uncased", symbolic=True))
    expected = V * H + P * H + T * H + 2 * H + L * (12 * H ** 2 + 13 * H) + H ** 2 + H
    assert sympy.expand(f.total - expected) == 0
    assert str(f.total) == "H**2 + H*P + H*T + H*V + 3*H + L*(12*H**2 + 13*H)"
    assert f.frozen == {"pooler"}  # `when: pooler` is evaluated, not symbolic


@pytest.mark.parametrize("spec, values, other", [
    ("bert-base-uncased", {"L": 24, "H": 1024, "A": 16}, "bert-large-uncased"),
    ("llama-2-7b", {"H": 8192, "L": 80, "A": 64, "KV": 8, "I": 28672}, "llama-2-70b"),
])
def test_formula_holds_at_other_values(spec, values, other):
    f = param_formula(archgraph.load(spec, symbolic=True))
    assert f.evaluate(**{k: v for k, v in values.items() if k in f.symbols}) == reference(other)["expected_params"]


def test_formula_holds_at_other_values_against_the_builder():
    f = param_formula(archgraph.load("gpt2", symbolic=True))
    for values in ({"L": 96, "H": 12288, "P": 2048}, {"L": 3, "H": 48, "V": 1000}):
        assert f.evaluate(**values) == archgraph.load("gpt2", values).params().total
    assert f.evaluate(L=96, H=12288, P=2048) == 174_604_259_328  # GPT-3 175B


def test_categories_sum_to_the_total():
    f = param_formula(archgraph.load("llama-2-7b", symbolic=True))
    assert sympy.expand(sum(f.by_category.values()) - f.total) == 0
    H, L, I = symbol("H"), symbol("L"), symbol("I")
    assert f.by_category["mlp"] == 3 * H * I * L


def test_cli_formula(cli):
    code, out, err = cli("formula", "bert-base-uncased")
    assert code == 0, err
    assert "H² + H·P + H·T + H·V + 3·H + L·(12·H² + 13·H)" in out
    assert "= 109,482,240" in out
    code, out, _ = cli("formula", "llama-2-7b", "--json", "--set", "L=2")
    data = json.loads(out)
    assert data["value"] == archgraph.load("llama-2-7b", {"L": 2}).params().total
    assert data["symbols"]["L"] == 2
    assert data["forward_flops"] == "32768*B*S**2 + 1071742976*B*S"  # 2·2·2·B·A·S²·D + 2·matmul params·B·S + norms, adds


def test_explain_is_the_hand_derivation_of_seed_001(cli):
    code, out, err = cli("explain", "bert-base-uncased")
    assert code == 0, err
    lines = out.splitlines()
    # seed 001: token 30522 x 768 = 23440896, segment 2 x 768, position 512 x 768, LayerNorm 2 x 768
    assert any("[V, H]" in line and "H·V = 30,522 × 768" in line and "23,440,896" in line for line in lines)
    assert any("embeddings.LayerNorm" in line and "bias" in line and "23,837,184" in line for line in lines)
    # one block 7,087,872, twelve 85,054,464, total without the pooler 108,891,648
    assert any("one repetition" in line and "12·H² + 13·H" in line and "7,087,872" in line for line in lines)
    assert any("× L = × 12" in line and "85,054,464" in line for line in lines)
    assert any(line.strip().endswith("108,891,648 │") for line in lines)
    assert "= 109,482,240" in out


def test_explain_json_subtotals(cli):
    code, out, _ = cli("explain", "gpt2", "--json")
    data = json.loads(out)
    assert [s["subtotal"] for s in data["steps"]][-1] == data["value"] == 124_439_808
    head = data["steps"][-1]
    assert head["tensors"] == [{"name": "weight", "shape": ["V", "H"], "formula": "H*V", "params": 0,
                                "tied_to": "transformer.wte.weight"}]


def test_unknown_model_is_an_error(cli):
    code, _, err = cli("formula", "gpt-5")
    assert code == 2 and "'gpt-5' is neither a spec file nor a built-in model" in err
