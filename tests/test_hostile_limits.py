"""The limits of issue 36 (part 2 of the hostile corpus): work and memory that grew with a hostile
input past the per-item limits (nested comprehensions, an expression made again at every
repetition, a product of symbolic sizes, the tensors `run` makes in forward) is refused by
name, in a subprocess capped as tests/test_hostile.py caps it, so that a regression fails
instead of hanging CI or the machine.  Every input is written by the test."""
from __future__ import annotations

from pathlib import Path

import pytest

from test_hostile import capped_cli, refused

LONG = "a list in an expression holds one value per layer or stage: check the count it is repeated by"


def variable_spec(tmp_path: Path, value: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(f"archgraph: 1\nname: s\nvariables:\n  H: {value}\ninputs: {{x: [B, 4]}}\nnodes:\n"
                    "  - {name: fc, op: linear, in_features: 4, out_features: 4}\n")
    return str(path)


# -- expressions: one budget of items and steps per spec -----------------------------------

@pytest.mark.parametrize("value", ["len([range(99999) for j in range(99999)])",          # was a MemoryError
                                   "len([[i for i in range(99999)] for j in range(99999)])",  # still ran at 60 s
                                   "len([[0 for i in range(99999) if i < 0] for j in range(99999)])",
                                   "len([[0] * 99999 for j in range(99999)])"])
def test_nested_comprehensions_are_refused_by_the_items_they_make_in_all(tmp_path, value):
    path = variable_spec(tmp_path, value)
    refused(capped_cli("params", path, seconds=30),
            f"{path}:4: variable 'H': the expression makes more than 300,000 list items and comprehension steps "
            f"in all (in '{value}')", LONG)


def test_a_list_of_the_largest_size_still_builds(cli, tmp_path):
    path = variable_spec(tmp_path, "sum([x % 2 for x in range(100000)])")
    code, out, err = cli("params", path, "--json")
    assert (code, err) == (0, "")


REPEATED = """archgraph: 1
name: s
inputs: {x: [B, 4]}
blocks:
  layer:
    args: {w: 4}
    nodes:
      - {name: fc, op: linear, in_features: 4, out_features: 4}
nodes:
  - {name: layers, block: layer, repeat: 100000, w: "4 + len([0 for j in range(99999) if i < 0])"}
"""


def test_an_expression_made_again_at_every_repetition_is_refused_by_the_spec_budget(tmp_path):
    """100,000 repetitions each stepping 100,000 times: 10**10 steps, each evaluation within its limit."""
    path = tmp_path / "s.yaml"
    path.write_text(REPEATED)
    refused(capped_cli("params", str(path), seconds=30),
            f"{path}:10: node 'layers': argument 'w': the spec's expressions make more than 300,000 list items and "
            f"comprehension steps in all, this one the last (in '4 + len([0 for j in range(99999) if i < 0])')",
            "an expression a repeated block call evaluates at every repetition makes its lists again each time: "
            "make the list once, under 'variables:'")


def test_a_power_of_a_sum_of_sizes_is_refused_before_it_expands(tmp_path):
    """(B + S + ... + Z) ** 64 has C(71, 7) = 1.2 billion terms; ** 16 alone took 24 s."""
    path = tmp_path / "s.yaml"
    path.write_text("archgraph: 1\nname: s\ninputs: {x: [B, S, T, U, V, W, Y, Z]}\nnodes:\n"
                    "  - {name: r, op: reshape, shape: ['(B+S+T+U+V+W+Y+Z)**64']}\n")
    refused(capped_cli("shapes", str(path), seconds=30),
            f"{path}:5: node 'r': reshape.shape: the product of symbolic sizes of 1,716 and 8 terms is too large to "
            f"expand (at most 10,000 terms) (in '(B+S+T+U+V+W+Y+Z)**64')", "give the sizes values with --set")


# -- run: what ops make inside them, priced on the meta device before anything is allocated --

WIDE_MLP = """archgraph: 1
name: wide_mlp
variables: {H: 64, I: 400000}
inputs: {x: [B, S, H]}
nodes:
  - {name: mlp, op: mlp, hidden: H, intermediate: I}
"""
# the only output a constant: the module reads no input, so no tensor says where to make it
FULL_ONLY = """archgraph: 1
name: big_constant
inputs: {x: [B, 4]}
nodes:
  - {name: c, op: full, shape: [100000, 100000], value: 1.0}
"""
RUN_FIX = ("run --check builds it on the meta device, which takes no memory; or run a smaller one with --set "
           "(fewer layers, a smaller batch)")


def model_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return str(path)


def test_run_prices_the_largest_tensor_an_op_makes_inside_it(cli, tmp_path, monkeypatch):
    """The MLP's output is [2, 4000, 64]; its hidden activation, 400,000 wide, is what would not fit."""
    pytest.importorskip("torch")
    from archgraph import machine
    monkeypatch.setattr(machine, "available", lambda: machine.Available(8 * 2 ** 30, "MemAvailable in /proc/meminfo"))
    code, out, err = cli("run", model_file(tmp_path, WIDE_MLP), "--set", "S=4000")
    assert (code, out) == (2, "")
    assert err == ("archgraph: error: the module of wide_mlp with inputs at S=4000, B=2 needs 12.12 GiB (parameters "
                   "196.84 MiB, inputs 1.95 MiB, activations at most 1.95 MiB, node 'mlp' makes [8000, 400000] "
                   "float32 11.92 GiB); this machine has 8.00 GiB available (MemAvailable in /proc/meminfo)\n"
                   f"  fix: {RUN_FIX}\n")


def test_run_of_an_mlp_too_wide_is_refused_as_the_user_meets_it(tmp_path):
    """It died in the allocator ('you tried to allocate 12800000000 bytes') under a 2 GiB cap."""
    pytest.importorskip("torch")
    code, out, err = capped_cli("run", model_file(tmp_path, WIDE_MLP), "--set", "S=4000", seconds=300)
    assert (code, out) == (2, ""), err[-3000:]
    first, fix = err.splitlines()
    assert first.startswith("archgraph: error: the module of wide_mlp with inputs at S=4000, B=2 needs 12.12 GiB "
                            "(parameters 196.84 MiB, inputs 1.95 MiB, activations at most 1.95 MiB, node 'mlp' "
                            "makes [8000, 400000] float32 11.92 GiB); this machine has ")
    assert first.endswith(" available (the address-space limit, ulimit -v)") and fix == f"  fix: {RUN_FIX}"


def test_run_check_makes_a_constant_of_40_gb_on_the_meta_device(tmp_path):
    """With no input read, forward made its constants on the CPU: 40,000,000,000 bytes in the allocator."""
    pytest.importorskip("torch")
    code, out, err = capped_cli("run", "--check", model_file(tmp_path, FULL_ONLY), seconds=300)
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == ["  shapes       every op node's outputs agree (1 nodes run)", "  agree"]


def test_torch_price_doctest_runs():
    pytest.importorskip("torch")
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module("archgraph.torch_price"))
    assert result.attempted > 0 and result.failed == 0


# -- sweep: the grid, its table and its builds, refused before any point is answered ---------

def numbers(start: int, count: int, step: int = 1) -> str:
    return ",".join(str(start + step * i) for i in range(count))


def test_a_grid_past_the_limit_is_refused_before_any_point(cli):
    refused(cli("sweep", "llama-2-7b", "--vary", f"L={numbers(2, 400)}", "--vary", f"V={numbers(1000, 251)}",
                "--csv"), "the grid has 100,400 configurations; at most 100,000", "give fewer values")


def test_a_table_of_more_rows_than_a_terminal_table_shows_is_refused_and_csv_answers(cli):
    vary = ("--vary", f"L={numbers(2, 11)}", "--vary", f"V={numbers(1000, 100)}")
    refused(cli("sweep", "llama-2-7b", *vary), "a table of 1,100 rows takes minutes to lay out; a sweep's table "
            "shows at most 1,000", "print the 1,100 points with --csv or --json, or give fewer values")
    code, out, err = cli("sweep", "llama-2-7b", *vary, "--csv")
    assert (code, err, out.count("\n")) == (0, "", 1_101)


@pytest.mark.parametrize("args, why", [
    (("--vary", f"L={numbers(1, 1001)}", "--check"), "--check builds every point"),
    (("--vary", f"H={numbers(1, 1001, 2)}"),  # no odd width has 32 heads
     "their values leave the conditions the formula holds under (a width its heads divide, ...)")])
def test_more_points_to_build_than_a_sweep_builds_are_refused_before_the_first(cli, args, why):
    refused(cli("sweep", "llama-2-7b", *args, "--csv"),
            f"1,001 of the grid's 1,001 points would each be built: {why}; a sweep builds at most 1,000",
            "give fewer values")
