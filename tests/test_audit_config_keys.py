"""tools/audit_config_keys.py finds a config key the key table drops, and finds none today."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import audit_config_keys as audit  # noqa: E402
import test_torch_hf  # noqa: E402
from archgraph import hf  # noqa: E402

pytestmark = pytest.mark.slow


def _patch(monkeypatch, model_type: str, entry: dict) -> None:
    """The key table of `model_type` replaced by `entry` for import_config."""
    family = hf.family
    monkeypatch.setattr(hf, "family", lambda name: entry if name == model_type else family(name))


def test_a_key_the_table_drops_is_found(monkeypatch):
    vit = hf.family("vit")
    vit = {**vit, "variables": {k: v for k, v in vit["variables"].items() if k != "pooler_act"}}
    _patch(monkeypatch, "vit", vit)
    rows = audit.audit("vit-base-pooler-gelu", test_torch_hf.CASES["vit-base-pooler-gelu"], log=lambda _: None)
    assert [(r["key"], r["verdict"]) for r in rows if r["verdict"]] == [("pooler_act", "outputs")]


def test_a_key_read_under_one_name_only_is_found(monkeypatch):
    swin = hf.family("swin")
    _patch(monkeypatch, "swin", {**swin, "variables": {**swin["variables"], "num_heads": "num_heads?"}})
    rows = audit.dropped_aliases("swin-base", test_torch_hf.CASES["swin-base"], log=lambda _: None)
    assert [(r["key"], r["by"]) for r in rows] == [("num_attention_heads", "num_heads")]


@pytest.mark.parametrize("name", ["gpt2-lm", "t5-cond-gen", "vit-base", "recurrent_gemma-causal", "swin-masked-im",
                                  "deepseek_v3-causal"])
def test_the_families_it_found_drop_nothing_now(name):
    config = test_torch_hf.CASES[name]
    rows = audit.audit(name, config, log=lambda _: None) + audit.dropped_aliases(name, config, log=lambda _: None)
    assert [(r["key"], r["verdict"]) for r in rows if r["verdict"] and not r["owned"]] == []
