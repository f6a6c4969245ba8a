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
