"""Counts need no sizes: a shape check the symbolic pass cannot decide for every size is made at
example sizes instead, with one note naming the constraints that would prove it (`--strict`
refuses, and so does `archgraph.load` unless `strict=False`)."""
from __future__ import annotations

import json

import pytest

import archgraph
from archgraph.errors import InconclusiveDimError
from conftest import ROOT

SPECS = ROOT / "tests" / "data" / "specs"
UNET_CONSTRAINTS = "constraints:          # two 2x2 poolings, then two 2x upsamplings: the sizes must come back\n" \
                   "  - H % 4 == 0\n  - W % 4 == 0\n"


@pytest.fixture
def unet(tmp_path):
    """The small U-Net of tests/data/specs/unet.yaml (double convolutions, two poolings, two transposed
    convolutions, skip connections concatenated), without its constraints."""
    text = (SPECS / "unet.yaml").read_text()
    assert UNET_CONSTRAINTS in text
    path = tmp_path / "unet.yaml"
    path.write_text(text.replace(UNET_CONSTRAINTS, ""))
    return path


def test_a_unet_is_counted_without_sizes_and_told_which_constraint_proves_it(cli, unet):
    code, out, err = cli("params", str(unet), "--json")
    assert code == 0
    assert json.loads(out)["total"] == 117_041  # as PyTorch counts it (tests/test_language_building_blocks.py)
    assert err == (f"archgraph: note: {unet}:23: node 'skip2': concat(dim=1): cannot decide whether floor(H/2) "
                   "equals 2*floor(floor(H/2)/2); checked at B=2, H=8, W=8 instead; 'constraints: [H % 4 == 0, "
                   "W % 4 == 0]' in the spec would decide it for every size\n")


def test_strict_refuses_an_undecided_check_as_before(cli, unet):
    code, out, err = cli("params", str(unet), "--strict")
    assert (code, out) == (2, "")
    assert err.startswith(f"archgraph: error: {unet}:23: node 'skip2': concat(dim=1): cannot decide whether "
                          "floor(H/2) equals 2*floor(floor(H/2)/2)")
    assert err.endswith("  fix: add 'constraints: [H % 4 == 0, W % 4 == 0]' to the spec, which decides it for every "
                        "size; or give the symbolic sizes concrete values, e.g. --set H=...\n")


def test_the_constraint_the_note_names_proves_it(cli):
    # the same U-Net with those constraints: decided for every size, no note, --strict passes
    code, out, err = cli("params", str(SPECS / "unet.yaml"), "--strict", "--json")
    assert (code, err) == (0, "") and json.loads(out)["total"] == 117_041


HALF = ROOT / "tests" / "data" / "undecided" / "half-routed.yaml"  # not in specs/: it needs sizes to load
# by hand: embedding 100*16; router 16; wide MLP 16*128+128 + 128*16+16; narrow MLP 16*16+16 + 16*16+16; lm_head 16*100
HALF_TOTAL = 1600 + 16 + (2048 + 128 + 2048 + 16) + (256 + 16 + 256 + 16) + 1600
HALF_NOTE = (f"archgraph: note: {HALF}:26: node 'residual': add(): cannot decide whether S equals 2*floor(S/2); "
             "checked at B=2, S=8 instead; 'constraints: [S % 2 == 0]' in the spec would decide it for every size\n")


def test_a_model_routing_half_its_tokens_is_counted_and_shaped_at_example_sizes(cli):
    code, out, err = cli("params", str(HALF), "--json")
    assert code == 0 and json.loads(out)["total"] == HALF_TOTAL == 8000
    assert json.loads(out)["by_category"] == {"embedding": 1600, "linear": 16, "mlp": 4240 + 544, "head": 1600}
    assert err == HALF_NOTE
    code, out, err = cli("shapes", str(HALF), "--json")
    assert code == 0 and json.loads(out)["outputs"] == {"logits": [2, 8, 100]}
    assert err == HALF_NOTE


def test_given_sizes_need_no_note_and_a_size_that_does_not_fit_is_refused(cli):
    code, out, err = cli("shapes", str(HALF), "--set", "S=10")
    assert code == 0 and err == "" and "[B, 10, 100]" in out
    code, out, err = cli("params", str(HALF), "--set", "S=7")
    assert code == 2 and "node 'residual'" in err and "7" in err and "6" in err


def test_load_refuses_unless_told_not_to_be_strict():
    with pytest.raises(InconclusiveDimError, match="cannot decide whether S equals 2\\*floor\\(S/2\\)"):
        archgraph.load(str(HALF))
    model = archgraph.load(str(HALF), strict=False)
    assert model.bindings == {"B": 2, "S": 8} and model.params().total == HALF_TOTAL
    assert model.notes == [HALF_NOTE.removeprefix("archgraph: note: ").rstrip("\n")]


def test_with_the_constraint_the_routed_model_is_decided_for_every_size(cli, tmp_path):
    spec = tmp_path / "half.yaml"
    spec.write_text(HALF.read_text().replace("variables: {V: 100, H: 16}\n",
                                             "variables: {V: 100, H: 16}\nconstraints: [S % 2 == 0]\n"))
    code, out, err = cli("shapes", str(spec), "--strict")
    assert (code, err) == (0, "") and "[B, S, 100]" in out


def test_the_routed_model_runs_in_pytorch_with_the_shapes_checked_at_those_sizes():
    pytest.importorskip("torch")
    from archgraph.torch import check
    result = check(archgraph.load(str(HALF), strict=False))
    assert result.difference is None and result.module_params == result.params == HALF_TOTAL


def test_formulas_and_sweeps_need_no_sizes_either(cli, unet):
    code, out, err = cli("formula", str(unet), "--json")
    assert code == 0 and (json.loads(out)["params"], json.loads(out)["value"]) == ("454·C² + 51·C + 1", 117_041)
    assert err.startswith(f"archgraph: note: {unet}:23: node 'skip2'") and err.count("\n") == 1
    code, out, err = cli("sweep", str(HALF), "--vary", "H=16,32", "--json")
    assert code == 0 and [row["params"] for row in json.loads(out)["rows"]] == [8000, 25_216]
    assert err == HALF_NOTE  # once, though each point is loaded
