"""The README's record of what a Hugging Face config may be refused for is current: it is what
tools/refusals.py makes of the key tables and the templates, and each refusal is filed by what its
message says (transformers cannot run the config either, or a gap)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("refusals_tool", ROOT / "tools" / "refusals.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_holds_the_current_record(tool):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert tool.section() in readme, "README.md's refusals are stale: run .venv/bin/python tools/refusals.py --write"


def test_every_refusal_is_listed_once_with_its_message(tool):
    rows = tool.refusals()
    assert len(rows) == len(set(rows))
    # a key table's refusal and a template's constraint, each with the message a user reads
    assert ("wav2vec2", "`adapter_attn_dim` set", "adapter_attn_dim adds an attention adapter to each layer (MMS), "
            "which the template does not build") in rows
    assert ("internvl", "unless `VFL != 0`", "vision_feature_layer 0 (the embeddings) is refused: transformers "
            "passes it on as output_hidden_states=0, gets no hidden states and fails (-(num_hidden_layers + 1) "
            "names them and runs)") in rows


@pytest.mark.parametrize("message, cannot", [
    ("transformers 5.23.0 cannot make the sliding layers' mask without a sliding_window", True),   # a version's dots
    ("DBRX has no tied lm_head (transformers' DbrxConfig refuses it)", True),
    ("mamba_n_heads x mamba_d_head must equal mamba_expand x hidden_size (BambaConfig refuses it)", True),
    ("a word such as 'LLLG' fails with TypeError in transformers 5.23.0", True),
    ("attention without the causal mask is not in the template", False),
    ("transformers' PhiMoE router (sparsemixer) always picks two experts", False),
    ("transformers reads it as a count. A list fails here", False),   # another sentence
])
def test_a_refusal_is_filed_by_what_its_message_says(tool, message, cannot):
    assert tool.cannot_run(message) is cannot
