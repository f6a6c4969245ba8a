"""Shared fixtures: the reference figures measured with Hugging Face transformers
(`tests/data/reference/`, a copy of the team's shared/reference; ARCHGRAPH_REFERENCE points
elsewhere) and a CLI runner."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

# The torch tests run small models, whose ops are too short to gain from OpenMP's threads; on a
# busy two-core machine the threads' waits made tests/test_torch_hf.py three times slower. Set
# before anything imports torch; a caller's own setting wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = Path(os.environ.get("ARCHGRAPH_REFERENCE", ROOT / "tests" / "data" / "reference"))


def needs(program: str, package: str):
    """Skip a test when `program` is missing on a developer machine; under CI (whose .ci/run
    installs it and sets CI) the test runs and fails instead."""
    missing = shutil.which(program) is None and not os.environ.get("CI")
    return pytest.mark.skipif(missing, reason=f"'{program}' is not installed (apt-get install {package}); "
                                              "CI runs this test")


NEEDS_DOT = needs("dot", "graphviz")


def _read(relative: str) -> dict:
    path = REFERENCE / relative
    if not path.is_file():  # never skip: without the oracle these tests would prove nothing
        pytest.fail(f"reference data missing: {path} (tests/data/reference is part of the repository; "
                    "ARCHGRAPH_REFERENCE, when set, must name a folder like it)")
    return json.loads(path.read_text())


def reference(name: str) -> dict:
    """The reference record of one checkpoint (config, expected_params, param_shapes, buffers)."""
    return _read(f"hf/{name}.json")


def write_config(tmp_path, **config) -> str:
    """A config.json holding `config`, in tmp_path."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def spec_module(tmp_path, text: str, std: float | None = None):
    """The PyTorch module of a spec given as text, in eval mode; with `std`, every parameter (norms
    and biases too, so they matter) drawn from N(0, std) after torch.manual_seed(0)."""
    torch = pytest.importorskip("torch")
    from archgraph import load
    from archgraph.torch import to_module
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    module = to_module(load(str(path))).eval()
    if std is not None:
        torch.manual_seed(0)
        with torch.no_grad():
            for p in module.parameters():
                p.normal_(0, std)
    return module


def measured_shapes(name: str) -> dict:
    """Leaf-module output shapes measured in a real forward pass (shapes.json)."""
    return _read("shapes.json")[name]


@pytest.fixture
def cli(capsys):
    """Run the archgraph CLI in-process: returns (exit status, stdout, stderr)."""
    from archgraph.cli import main

    def run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run
