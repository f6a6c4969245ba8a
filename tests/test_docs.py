"""The documentation runs: module doctests, the README's Python example, the examples/."""
from __future__ import annotations

import doctest
import importlib
import re
import runpy

import pytest

from conftest import ROOT

MODULES = ["archgraph", "archgraph.expr", "archgraph.builder", "archgraph.load",
           "archgraph.passes.params", "archgraph.passes.shapes", "archgraph.passes.stacks", "archgraph.passes.compare",
           "archgraph.passes.resize", "archgraph.passes.diff", "archgraph.passes.kinds", "archgraph.dims",
           "archgraph.hf", "archgraph.checkpoint", "archgraph.install", "archgraph.spec.graphs",
           "archgraph.configcheck", "archgraph.names"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_readme_python_example():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)  # our own documentation, not user input
    model = namespace["model"]
    assert model.params().total == 19210
    assert model.shapes(B=32).outputs == {"fc2": (32, 10)}


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```sh\n(.*?)\n```", readme, re.S)[:2]
    assert commands[0].endswith("archgraph params bert-base-uncased")
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_builder_example_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "builder_api.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "tiny-vit: 5,717,032 parameters" in out
    assert "patch_embed    (8, 192, 14, 14)" in out


def test_yaml_example_counts(cli):
    code, out, _ = cli("params", str(ROOT / "examples" / "parallel-moe.yaml"), "--json")
    import json
    data = json.loads(out)
    # embedding 32000*2048 (frozen, tied to the head) + 24 blocks + final norm
    attn = 2048 * 2048 + 2 * (2048 * 512) + 2048 * 2048
    moe = 8 * 2048 + 8 * (2 * 5376 * 2048) + 8 * (2048 * 5376)
    assert data["total"] == 32000 * 2048 + 24 * (2048 + attn + moe) + 2048
    assert data["non_trainable"] == 32000 * 2048 and data["tied"] == 32000 * 2048
