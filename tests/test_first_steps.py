"""First steps that cannot fail: the docs' example files from any folder, a did-you-mean for a
mistyped command, and a fix line where a newcomer's first mistakes land (a tab in YAML, a block
call short of an input)."""
from __future__ import annotations

import pytest

from conftest import ROOT


def test_examples_copies_the_docs_files_into_any_folder_and_replaces_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("params", "examples/tiny-llama/config.json")
    assert (code, err) == (2, "archgraph: error: no config file 'examples/tiny-llama/config.json'\n"
                              "  fix: the docs' examples/ files are archgraph's: 'archgraph examples .' copies "
                              "them into ./examples\n")
    wanted = sorted(p.relative_to(ROOT / "examples") for p in (ROOT / "examples").rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts)
    code, out, _ = cli("examples", ".")
    assert code == 0 and out.startswith(f"copied {len(wanted)} example files into examples;")
    assert sorted(p.relative_to(tmp_path / "examples") for p in (tmp_path / "examples").rglob("*")) == [
        *sorted({q for p in wanted for q in p.parents if q.name} | set(wanted))]
    code, out, _ = cli("params", "examples/tiny-llama/config.json", "--json")
    assert code == 0 and '"total":64752' in out
    assert cli("examples")[1].startswith(f"copied 0 example files into examples ({len(wanted)} already there)")
    (tmp_path / "examples" / "dit.yaml").write_text("mine")
    (tmp_path / "examples" / "tiny-llama" / "config.json").unlink()
    code, _, err = cli("examples")
    assert code == 2 and "'examples/dit.yaml' exists and differs from archgraph's example; nothing was copied" in err
    assert (tmp_path / "examples" / "dit.yaml").read_text() == "mine"
    assert not (tmp_path / "examples" / "tiny-llama" / "config.json").exists()


@pytest.mark.parametrize("typed, guess", [("parms", "params"), ("rendr", "render"), ("comapre", "compare"),
                                          ("exampels", "examples")])
def test_a_mistyped_command_gets_a_did_you_mean(cli, typed, guess):
    code, out, err = cli(typed, "gpt2")
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: unknown command '{typed}'\n"
                   f"  fix: did you mean '{guess}'? ('archgraph --help' says what each does)\n")


def test_a_tab_in_yaml_says_tabs_are_not_allowed_and_where(cli, tmp_path):
    spec = tmp_path / "tab.yaml"
    spec.write_text("archgraph: 1\nname: x\nvariables:\n  H: 4\n\tL: 3\n")
    code, _, err = cli("params", str(spec))
    assert (code, err) == (2, f"archgraph: error: {spec}:5: YAML does not allow tabs for indentation; line 5 "
                              "column 1 holds one\n  fix: indent with spaces\n")


CALL = """archgraph: 1
name: x
inputs:
  x: {shape: [B, 4]}
blocks:
  two:
    inputs: [a, b]
    nodes:
      - {name: s, op: add, in: [a, b]}
nodes:
  - {name: c, block: two, in: IN}
"""


@pytest.mark.parametrize("given, error, fix", [
    ("[x]", "block 'two' takes 2 input(s) (a, b); 'in' gives 1",
     "give a node for each of a, b, in that order or by name: in: {a: NODE, b: NODE}"),
    ("{a: x}", "block 'two' needs the input(s) b", "give each in 'in:' (its inputs: a, b), e.g. in: {a: NODE, b: NODE}"),
])
def test_a_block_call_short_of_an_input_says_how_to_give_it(cli, tmp_path, given, error, fix):
    spec = tmp_path / "call.yaml"
    spec.write_text(CALL.replace("IN", given))
    code, _, err = cli("params", str(spec))
    assert (code, err) == (2, f"archgraph: error: {spec}:11: node 'c': {error}\n  fix: {fix}\n")


def test_a_retired_hyperparameter_says_what_to_write_instead_not_a_near_name(cli, tmp_path):
    # attention's weight_layout retired (f57847b); difflib's nearest field, qkv_layout, means something else
    spec = tmp_path / "old.yaml"
    spec.write_text("archgraph: 1\nname: old\ninputs:\n  x: {shape: [B, S, 768]}\nnodes:\n"
                    "  - {name: attn, op: attention, in: x, hidden: 768, heads: 12, weight_layout: in_out}\n")
    code, out, err = cli("params", str(spec))
    assert (code, out) == (2, "")
    assert "op 'attention' no longer takes 'weight_layout'" in err
    assert "qkv_layout" not in err
    assert err.endswith("  fix: write the projections as linear nodes (a linear's weight_layout: in_out keeps "
                        "GPT-2's Conv1D [in, out] weights) and the scores with sdpa, as specs/hf/gpt2.yaml does\n")
    from archgraph.errors import SpecError
    from archgraph.ops import REGISTRY
    with pytest.raises(SpecError, match="op 'attention' no longer takes 'weight_layout'"):
        REGISTRY["attention"].build({"hidden": 768, "heads": 12, "weight_layout": "in_out"})
