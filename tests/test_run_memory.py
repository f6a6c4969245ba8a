"""`run` and `to_module` refuse, before allocating, a module and inputs past the memory the machine
has available (archgraph.machine); `run --check` allocates nothing at any size; node names PyTorch
refuses as module names (`../../x`, `float`) run as `params` counts them."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

import archgraph  # noqa: E402
from archgraph import machine  # noqa: E402
from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.passes.memory import estimate_memory  # noqa: E402
from archgraph.torch import memory_need, to_module  # noqa: E402

ROOT = Path(archgraph.__file__).resolve().parents[1]
LINEAR_4TB = """archgraph: 1
name: big_linear
inputs:
  x: {shape: [B, 1000000]}
nodes:
  - {name: fc, op: linear, in: x, in_features: 1000000, out_features: 1000000}
"""
FULL_40GB = """archgraph: 1
name: full40
inputs:
  x: {shape: [B, 4]}
nodes:
  - {name: c, op: full, shape: [100000, 100000], value: 1.0}
  - {name: y, op: add, in: [x, x]}
outputs: {y: y, c: c}
"""
FIX = ("  fix: run --check builds it on the meta device, which takes no memory; or run a smaller one with "
       "--set (fewer layers, a smaller batch)\n")
SIXTEEN_GIB = machine.Available(16 * 2 ** 30, "MemAvailable in /proc/meminfo")


def _cli(*args: str, limit: int | None = 2 * 2 ** 30) -> subprocess.CompletedProcess:
    """The CLI in a process of its own, its address space limited to `limit` bytes."""
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "archgraph.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, preexec_fn=limited if limit else None, timeout=600)


@pytest.fixture
def sixteen_gib(monkeypatch):
    monkeypatch.setattr(machine, "available", lambda: SIXTEEN_GIB)


def _spec(tmp_path, text: str) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, need", [
    (LINEAR_4TB, "at B=2 needs 3.64 TiB (parameters 3.64 TiB, inputs 7.63 MiB, activations at most 7.63 MiB)"),
    (FULL_40GB, "at B=2 needs 37.25 GiB (inputs 32 B, activations at most 37.25 GiB)")])
def test_run_refuses_before_allocating(cli, tmp_path, sixteen_gib, text, need):
    spec = _spec(tmp_path, text)
    name = text.split("name: ")[1].split("\n")[0]
    code, out, err = cli("run", spec)
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: the module of {name} with inputs {need}; this machine has 16.00 GiB "
                   f"available (MemAvailable in /proc/meminfo)\n{FIX}")


def test_run_refuses_a_batch_too_big(cli, sixteen_gib):
    code, _, err = cli("run", "gpt2", "--set", "L=1", "--set", "B=1000000000")  # 8e9 tokens: 66,497 values each
    need = memory_need(archgraph.load("gpt2", {"L": 1, "B": 1000000000}), {"S": 8})
    assert need["inputs"] == 1000000000 * 8 * 8  # int64 ids
    assert (code, err.splitlines()[0]) == (2, "archgraph: error: the module of gpt2 with inputs at B=1000000000, "
                                              "S=8 needs 1934.91 TiB (parameters 177.28 MiB, inputs 59.60 GiB, "
                                              "activations at most 1934.85 TiB); this machine has 16.00 GiB "
                                              "available (MemAvailable in /proc/meminfo)")


def test_the_need_is_parameters_buffers_inputs_and_the_memory_pass_activations():
    model = archgraph.load("gpt2", {"L": 1})
    need = memory_need(model, {"B": 2, "S": 8})
    activations = estimate_memory(model, {"B": 2, "S": 8}, dtype="fp32").output_values * 4   # every output at once
    assert need == {"parameters": 46_473_216 * 4, "buffers": 0, "inputs": 2 * 8 * 8,
                    "activations at most": activations}
    assert activations > 2 * 8 * 50257 * 4  # the logits at least
    assert memory_need(model, dtype=__import__("torch").bfloat16) == {"parameters": 46_473_216 * 2, "buffers": 0}


def test_run_as_the_user_meets_it_refuses_with_the_machine_figure(tmp_path):
    done = _cli("run", _spec(tmp_path, LINEAR_4TB))
    assert done.returncode == 2
    first, fix = done.stderr.splitlines()
    assert first.startswith("archgraph: error: the module of big_linear with inputs at B=2 needs 3.64 TiB ")
    assert first.endswith(" available (the address-space limit, ulimit -v)")  # the least of the limits
    assert fix + "\n" == FIX


def test_to_module_refuses_and_says_how_to_override(monkeypatch):
    model = archgraph.load("gpt2", {"L": 1, "V": 100, "H": 48, "A": 4, "P": 32})
    monkeypatch.setattr(machine, "available", lambda: machine.Available(1000, "MemAvailable in /proc/meminfo"))
    with pytest.raises(ArchgraphError) as refused:
        to_module(model)
    assert str(refused.value) == (
        "the module of gpt2 needs 135.56 KiB (parameters 135.56 KiB); this machine has 1000 B available "
        "(MemAvailable in /proc/meminfo)\n  fix: build it on the meta device, which takes no memory "
        "(to_module(model, device='meta')), or pass check_memory=False to build it anyway")
    assert sum(p.numel() for p in to_module(model, check_memory=False).parameters()) == 34_704
    assert sum(p.numel() for p in to_module(model, device="meta").parameters()) == 34_704


def test_available_reads_a_cgroup_limit(tmp_path, monkeypatch):
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.current").write_text("104857600\n")
    (tmp_path / "memory.stat").write_text("anon 1\ninactive_file 4857600\n")
    monkeypatch.setattr(machine, "CGROUP", tmp_path)
    assert machine._cgroup_v2() == machine.Available(2 ** 30 - 100_000_000, f"the cgroup limit in {tmp_path}/memory.max")
    assert machine.available().bytes <= 2 ** 30 - 100_000_000
    (tmp_path / "memory.max").write_text("max\n")
    assert machine._cgroup_v2() is None


def test_check_builds_4_tb_in_two_gib(tmp_path):
    done = _cli("run", "--check", _spec(tmp_path, LINEAR_4TB))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-2:] == ["  shapes       every op node's outputs agree (1 nodes run)", "  agree"]


@pytest.mark.slow
@pytest.mark.parametrize("args, params", [(("gpt3-175b",), "174,604,259,328"),
                                          (("gpt2", "--set", "B=1000000000"), "124,439,808")])
def test_check_allocates_nothing_at_any_size(args, params):
    done = _cli("run", "--check", *args)
    assert (done.returncode, done.stderr) == (0, "")
    assert f"parameters   {params} = archgraph's {params}" in done.stdout


# -- names: what params accepts, run accepts ------------------------------------------------------

ODD_NAMES = """archgraph: 1
name: names
inputs:
  x: {shape: [B, 4]}
nodes:
  - {name: ../../x, op: linear, in: x, in_features: 4, out_features: 4}
  - {name: a.b, op: linear, in_features: 4, out_features: 4}
  - {name: float, op: linear, in_features: 4, out_features: 4}
  - {name: training.to, op: layer_norm, normalized_shape: 4}
"""


def test_run_takes_the_node_names_params_takes(cli, tmp_path):
    spec = _spec(tmp_path, ODD_NAMES)
    code, out, err = cli("run", spec, "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["outputs"]["training.to"]["shape"] == [2, 4]
    code, out, _ = cli("run", "--check", spec)
    assert code == 0 and "parameters   68 = archgraph's 68" in out


def test_names_pytorch_refuses_take_an_underscore_in_the_state_dict(tmp_path):
    model = archgraph.load(_spec(tmp_path, ODD_NAMES))
    module = to_module(model)
    assert list(module.state_dict()) == ["_._./._./x.weight", "_._./._./x.bias", "a.b.weight", "a.b.bias",
                                         "float_.weight", "float_.bias", "training_.to_.weight", "training_.to_.bias"]
    assert module.state_dict_key("../../x.weight") == "_._./._./x.weight"
    assert module.state_dict_key("a.b.bias") == "a.b.bias"
    again = to_module(model)
    again.load_state_dict(module.state_dict(), strict=True)


def test_two_names_that_would_meet_are_refused(cli, tmp_path):
    spec = _spec(tmp_path, ODD_NAMES.replace("a.b", "float_"))
    code, _, err = cli("run", spec)
    assert (code, err) == (2, "archgraph: error: tensors 'float_.weight' and 'float.weight' would both be "
                              "'float_.weight' in the PyTorch module (a name part PyTorch refuses, empty or an "
                              "nn.Module attribute, takes a '_' after it)\n  fix: rename one of the two nodes\n")
