"""Configs with unusual sizes and switches, one file each in tests/data/hf (recorded
from Hugging Face transformers by tools/record_hf.py): archgraph must give the
exact total and every tensor's name and shape from the config alone."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from archgraph.load import load_config

DATA = Path(__file__).parent / "data" / "hf"
FILES = sorted(p.stem for p in DATA.glob("*.json"))


@pytest.mark.parametrize("name", FILES)
def test_config_matches_transformers(tmp_path, name):
    fixture = json.loads((DATA / f"{name}.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fixture["config"]))
    report = load_config(path).params()
    mine = {tensor: list(row.shape) for tensor, row in report.tensors()}
    assert sorted(set(fixture["param_shapes"]) - set(mine)) == [], "missing tensors"
    assert sorted(set(mine) - set(fixture["param_shapes"])) == [], "extra tensors"
    assert mine == fixture["param_shapes"]
    assert report.total == fixture["expected_params"]


# every template declares each buffer transformers registers (name, shape, persistent)
@pytest.mark.parametrize("name", FILES)
def test_buffers_match_transformers(tmp_path, name):
    fixture = json.loads((DATA / f"{name}.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fixture["config"]))
    mine = {}
    for node_path, _, _, rows in load_config(path).params().nodes():
        for row in rows:
            if row.buffer:
                mine[f"{node_path}.{row.name}" if row.name else node_path] = \
                    {"shape": list(row.shape), "persistent": row.persistent}
    assert mine == fixture["buffers"]
