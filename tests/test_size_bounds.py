"""A least size in `constraints:` (`S >= 3`, `S > 2`) is a fact the shape rules use, as `S <= 64`
is: `x[:, :-2]` of an S-long sequence is S - 2 long only when S is at least 2."""
from __future__ import annotations

import pytest

from archgraph.dims import fmt_shape
from archgraph.errors import ArchgraphError, InconclusiveDimError
from archgraph.load import load_text

SPEC = """archgraph: 1
name: bounded
inputs:
  x: {shape: [B, S, 4]}
nodes:
  - {name: head, op: slice, in: x, dim: 1, end: -2}
outputs:
  y: head
"""


def test_without_a_least_size_a_negative_end_is_undecided():
    with pytest.raises(InconclusiveDimError, match=r"cannot decide whether 0 or S - 2 is smaller"):
        load_text(SPEC)


@pytest.mark.parametrize("fact", ["S >= 3", "S > 2", "S >= 2"])
def test_a_least_size_decides_it(fact):
    model = load_text(SPEC + f"constraints:\n  - {fact}\n")
    assert fmt_shape(model.shapes().outputs["y"]) == "[B, S - 2, 4]"
    assert list(model.shapes(B=1, S=7).outputs["y"]) == [1, 5, 4]


def test_a_size_below_the_least_is_refused_by_the_constraint():
    model = load_text(SPEC + "constraints:\n  - S >= 3\n")
    with pytest.raises(ArchgraphError, match=r"the constraint 'S >= 3' does not hold \(S=2\)"):
        model.shapes(B=1, S=2)
