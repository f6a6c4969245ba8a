"""Configs with unusual sizes and switches, one file each in tests/data/hf (recorded
from Hugging Face transformers by tools/record_hf.py): archgraph must give the
exact total and every tensor's name and shape from the config alone."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from archgraph.dtypes import ELEMENT_BYTES
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


# every template declares each buffer transformers registers (name, shape, persistent, dtype: int64
# positions, bool masks, complex64 tables, bfloat16 scalars, as transformers 5.23 keeps them)
@pytest.mark.parametrize("name", FILES)
def test_buffers_match_transformers(tmp_path, name):
    fixture = json.loads((DATA / f"{name}.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fixture["config"]))
    mine = {}
    report = load_config(path).params()
    for node_path, _, _, rows in report.nodes():
        for row in rows:
            if row.buffer:
                mine[f"{node_path}.{row.name}" if row.name else node_path] = \
                    {"shape": list(row.shape), "persistent": row.persistent, "dtype": row.dtype}
    assert mine == fixture["buffers"]
    # and `memory` prices them at their dtypes: what the buffers of transformers' model take
    assert report.totals.buffer_bytes == sum(math.prod(b["shape"]) * ELEMENT_BYTES[b["dtype"]]
                                             for b in fixture["buffers"].values())
