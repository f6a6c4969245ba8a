"""Configs as transformers saves them.  `save_pretrained` writes the floats JSON cannot hold as tags
(PreTrainedConfig._encode_special_floats): Mamba-2's default time_step_limit, and its hybrids' (Bamba,
Granite 4.0-H, Falcon-H1), is saved as `[0.0, {"__float__": "Infinity"}]`, which archgraph reads as
transformers does.  tests/data/saved/NAME/config.json are files transformers 5.23.0 saved, beside the
counts it measured (transformers.json); with transformers installed, configs are saved afresh, and the
model archgraph builds from the file computes what transformers computes, on a padded batch."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from archgraph.errors import ArchgraphError
from archgraph.hf import read_config
from archgraph.load import load_config

SAVED = Path(__file__).parent / "data" / "saved"
NAMES = sorted(p.name for p in SAVED.iterdir() if (p / "config.json").is_file())


@pytest.mark.parametrize("name", NAMES)
def test_a_config_transformers_saved_counts_as_transformers(name):
    text = (SAVED / name / "config.json").read_text()
    assert '"__float__": "Infinity"' in text   # the tag, as transformers writes it
    measured = json.loads((SAVED / name / "transformers.json").read_text())
    report = load_config(SAVED / name / "config.json").params()
    assert {tensor: list(row.shape) for tensor, row in report.tensors()} == measured["param_shapes"]
    assert report.total == measured["expected_params"]


def test_the_tags_read_as_the_floats_transformers_reads(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"a": [0.0, {"__float__": "Infinity"}, {"__float__": "-Infinity"}], "b": {"__float__": "NaN"},'
                    ' "c": {"__float__": "Infinite"}, "d": {"__float__": 1.0}, "e": {"__float__": "NaN", "x": 1}}')
    config = read_config(path)
    assert config["a"] == [0.0, math.inf, -math.inf] and math.isnan(config["b"])
    # as transformers' _decode_special_floats: another value, or another key beside the tag, stays an object
    assert config["c"] == {"__float__": "Infinite"} and config["d"] == {"__float__": 1.0}
    assert config["e"] == {"__float__": "NaN", "x": 1}


def test_an_unknown_tag_is_refused_by_its_key(tmp_path):
    saved = json.loads((SAVED / NAMES[0] / "config.json").read_text())
    saved["time_step_limit"] = [0.0, {"__float__": "Infinite"}]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(saved))
    with pytest.raises(ArchgraphError) as error:
        load_config(path)
    assert error.value.message == ("'time_step_limit[1]' must be a number, true/false, a word or a list of them "
                                   '(lists nest 3 deep); received {"__float__": "Infinite"}')


FAMILIES = ["mamba2-causal", "bamba-causal", "granitemoehybrid-causal", "falcon_h1-causal"]


@pytest.mark.slow
@pytest.mark.parametrize("case", FAMILIES)
def test_a_config_saved_by_transformers_computes_what_transformers_computes(tmp_path, case):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from test_torch_hf import CASES, _hf_model, _inputs, padding_mask

    from archgraph.torch import to_module
    config = {k: v for k, v in CASES[case].items() if k != "time_step_limit"}   # the class's default: to infinity
    saved = transformers.AutoConfig.for_model(**config)
    saved.save_pretrained(tmp_path)
    assert '"__float__": "Infinity"' in (tmp_path / "config.json").read_text()
    assert tuple(transformers.AutoConfig.from_pretrained(tmp_path).time_step_limit) == (0.0, math.inf)
    reference = _hf_model(config)
    module = to_module(load_config(tmp_path / "config.json")).eval()
    module.load_state_dict(reference.state_dict(), strict=True)
    inputs = _inputs(module, config)
    inputs["attention_mask"] = mask = padding_mask(inputs["input_ids"])
    with torch.no_grad():
        want, got = reference(**inputs), module(**inputs)
    for key, value in got.items():
        keep = mask.bool() if tuple(value.shape[:2]) == tuple(mask.shape) else slice(None)
        expected = getattr(want, key)
        scale = max(1.0, expected[keep].abs().max().item())
        assert (value[keep] - expected[keep]).abs().max().item() < 1e-4 * scale, key
