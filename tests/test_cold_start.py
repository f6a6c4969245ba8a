"""What a command imports: counting must not pay for plotting, algebra, torch, diagrams or
tables it does not print (benchmarks/cold_start.py measures the time; this keeps the gain)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

HEAVY = ("matplotlib", "sympy", "torch", "transformers", "networkx", "graphviz", "PIL")
CONFIG = ROOT / "tests" / "data" / "reference" / "hf" / "llama-2-70b.json"

CHILD = """
import contextlib, io, json, sys
from archgraph.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules), "out": out.getvalue()}))
"""


def imported(*argv: str) -> tuple[int, set[str], str]:
    """Exit status, top-level packages imported, and output of `archgraph ARGV` in a fresh Python."""
    code, modules, out = imported_modules(*argv)
    return code, {m.split(".")[0] for m in modules}, out


def imported_modules(*argv: str) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    return result["code"], result["modules"], result["out"]


@pytest.fixture(scope="module")
def config_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf") / "config.json"
    path.write_text(json.dumps(json.loads(CONFIG.read_text())["config"]))
    return path


@pytest.mark.parametrize("argv", [
    ("params", "llama-2-7b", "--json"),
    ("shapes", "gpt2", "--json"),
    ("memory", "llama-2-7b", "--json"),
    ("flops", "bert-base-uncased", "--json"),
])
def test_a_counting_command_imports_no_heavy_library(argv):
    code, modules, _ = imported(*argv)
    assert code == 0
    assert sorted(modules & set(HEAVY)) == []
    assert "rich" not in modules  # --json prints no table


def test_a_config_json_is_counted_without_heavy_imports(config_json):
    code, modules, out = imported("params", str(config_json), "--json")
    assert code == 0 and out.startswith('{"model":')
    assert sorted(modules & {*HEAVY, "rich"}) == []


def test_a_table_imports_rich_and_still_no_heavy_library():
    code, modules, out = imported("params", "gpt2")
    assert code == 0 and "124,439,808" in out
    assert "rich" in modules and sorted(modules & set(HEAVY)) == []


def test_only_the_command_being_run_is_imported():
    code, modules, _ = imported_modules("memory", "gpt2", "--json")
    assert code == 0
    assert sorted(m for m in modules if m.startswith("archgraph.commands.")) == [
        "archgraph.commands.common", "archgraph.commands.memory"]
