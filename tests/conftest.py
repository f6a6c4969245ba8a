"""Shared fixtures: the reference figures measured with Hugging Face transformers
(`../shared/reference/`, beside the checkout) and a CLI runner."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference"


def reference(name: str) -> dict:
    """The reference record of one checkpoint (config, expected_params, param_shapes, buffers)."""
    return json.loads((REFERENCE / "hf" / f"{name}.json").read_text())


def measured_shapes(name: str) -> dict:
    """Leaf-module output shapes measured in a real forward pass (shapes.json)."""
    return json.loads((REFERENCE / "shapes.json").read_text())[name]


@pytest.fixture
def cli(capsys):
    """Run the archgraph CLI in-process: returns (exit status, stdout, stderr)."""
    from archgraph.cli import main

    def run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run
