"""Every checkpoint in tests/data/reference/hf, imported from its config.json alone:
the exact total, and where the reference lists them, every tensor's name and shape
(`named_parameters(remove_duplicate=False)` of the class in architectures[0])."""
from __future__ import annotations

import json

import pytest

from archgraph.load import load_config
from conftest import REFERENCE

FILES = sorted(p.stem for p in (REFERENCE / "hf").glob("*.json"))


def _config(tmp_path, name: str):
    ref = json.loads((REFERENCE / "hf" / f"{name}.json").read_text())
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(ref["config"]))
    return folder / "config.json", ref


def test_all_25_reference_checkpoints_are_here():
    assert len(FILES) == 25


@pytest.mark.parametrize("name", FILES)
def test_params_of_the_config_equal_the_reference(tmp_path, cli, name):
    path, ref = _config(tmp_path, name)
    code, out, err = cli("params", str(path), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["total"] == ref["expected_params"]


@pytest.mark.parametrize("name", FILES)
def test_every_tensor_name_and_shape(tmp_path, name):
    path, ref = _config(tmp_path, name)
    if "param_shapes" not in ref:
        pytest.skip("the reference lists only the total for this checkpoint")
    model = load_config(path)
    assert model.name == name
    mine = {tensor: list(row.shape) for tensor, row in model.params().tensors()}
    assert sorted(set(ref["param_shapes"]) - set(mine)) == []
    assert sorted(set(mine) - set(ref["param_shapes"])) == []
    assert mine == ref["param_shapes"]
