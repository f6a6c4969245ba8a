"""An input dimension a spec names by a variable (`pixel_values: [B, C, IH, IW]`) is the spec's default
size: the module takes another by re-deriving the spec at it (archgraph.passes.resize), once per
size, as long as its tensors keep their shapes; otherwise it refuses by name."""
from __future__ import annotations

import pytest

from archgraph.load import load_text
from archgraph.passes.resize import SizeError, at_sizes, sized_by_variables

torch = pytest.importorskip("torch")
from archgraph.torch import to_module  # noqa: E402

MAPS = """\
name: maps
variables:
  IH: 8
  IW: IH
  C: 4
inputs:
  x: {shape: [B, C, IH, IW]}
nodes:
  - {name: seq, op: flatten, in: x, start_dim: 2}          # [B, C, IH*IW]
  - {name: scaled, op: scale, factor: 2}
  - {name: map, op: reshape, shape: [0, C, IH, IW]}        # a size from the variables, as a template's
  - {name: table, op: parameter, shape: [1, C, 1, TABLE], tensor: ''}
  - {name: out, op: add, in: [map, table]}
"""


def _module(table: str = "1"):
    return to_module(load_text(MAPS.replace("TABLE", table), "maps.yaml"))


def test_another_size_runs_without_rebuilding_the_module():
    module = _module()
    x = torch.randn(2, 4, 5, 7)
    out = module(x=x)["out"]
    assert out.shape == (2, 4, 5, 7)
    assert torch.equal(out, 2 * x + module.table)
    assert list(module._resized) == [(("IH", 5), ("IW", 7))]
    module(x=torch.randn(1, 4, 5, 7))
    assert len(module._resized) == 1   # one spec per size
    assert module(x=torch.randn(1, 4, 8, 8))["out"].shape == (1, 4, 8, 8)
    assert len(module._resized) == 1   # the built size needs none


def test_a_tensor_that_depends_on_the_size_refuses_it():
    module = _module("IW")
    with pytest.raises(SizeError, match=r"maps: the model takes IW=8 only \(the inputs have IW=7\): its tensor "
                                        r"'table' is \[1, 4, 1, 8\], and at IW=7 it would be \[1, 4, 1, 7\]"):
        module(x=torch.randn(2, 4, 8, 7))


def test_one_variable_for_two_dimensions_must_agree():
    model = load_text(MAPS.replace("TABLE", "1").replace("[B, C, IH, IW]", "[B, C, IH, IH]"), "maps.yaml")
    assert sized_by_variables(model, {"x": (2, 4, 6, 6)}) == {"IH": 6}
    with pytest.raises(SizeError, match="maps: input 'x' has 6 and 5 for two dimensions the spec names 'IH'"):
        sized_by_variables(model, {"x": (2, 4, 6, 5)})


def test_a_size_at_which_the_spec_does_not_hold_is_refused():
    model = load_text(MAPS.replace("TABLE", "1") + "constraints:\n  - IH % 2 == 0\n", "maps.yaml")
    with pytest.raises(SizeError, match="maps: the inputs have IH=5, at which the spec does not hold: "):
        at_sizes(model, {"IH": 5})


def test_the_module_keeps_the_specs_of_the_last_sizes_only():
    from archgraph.torch import RESIZED_KEPT
    module = _module()
    for side in range(2, RESIZED_KEPT + 3):
        module(x=torch.randn(1, 4, side, 3))
    assert len(module._resized) == RESIZED_KEPT
    assert next(iter(module._resized)) == (("IH", 3), ("IW", 3))   # IH=2 went first
