"""A block call's `tied_to:`: the instance's tensors are another instance's, named by a path the call
computes (transformers' module-prefix ties: Zamba2's shared blocks, used round-robin)."""
from __future__ import annotations

import pytest

from archgraph.errors import SpecError
from archgraph.load import load_text

ROUND_ROBIN = """\
name: round-robin
variables: {H: 8, L: 5, M: 2}
inputs:
  x: {shape: [B, H]}
blocks:
  lora:
    nodes:
      - {name: p, op: linear, in_features: H, out_features: H, bias: false}
  inner:
    nodes:
      - {name: a, op: linear, in_features: H, out_features: H}
      - {name: lst, block: lora, repeat: 3}
  layer:
    args: [k]
    nodes:
      - {name: own, op: linear, in_features: H, out_features: H, bias: false}
      - {name: shared_part, block: inner, in: own, TIE}
      - {name: out, op: add, in: [shared_part, x]}
nodes:
  - {name: layers, block: layer, repeat: L, k: i}
"""
TIE = "tied_to: \"None if k < M else ['layers', k % M, 'shared_part']\""
INNER = ["a.weight", "a.bias", "lst.0.p.weight", "lst.1.p.weight", "lst.2.p.weight"]


def spec(tie: str = TIE):
    return load_text(ROUND_ROBIN.replace("TIE", tie), "round-robin.yaml")


def test_a_tied_call_counts_its_tensors_once_and_names_them_under_every_instance():
    report = spec().params()
    inner = 72 + 3 * 64
    assert (report.total, report.totals.tied) == (5 * 64 + 2 * inner, 3 * inner)
    assert [n for n, _ in report.state_dict()] == [
        f"layers.{i}.{t}" for i in range(5) for t in ["own.weight"] + [f"shared_part.{x}" for x in INNER]]
    ties = {path: rows[0].tied_to for path, _, _, rows in report.nodes() if rows and rows[0].tied_to}
    assert ties["layers.4.shared_part.lst.2.p"] == "layers.0.shared_part.lst.2.p.weight"
    assert ties["layers.3.shared_part.a"] == "layers.1.shared_part.a.weight"
    assert not any(p.startswith(("layers.0.", "layers.1.")) for p in ties)


def test_a_tied_call_shares_the_parameters_in_torch():
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    module = to_module(spec())
    assert sum(p.numel() for p in module.parameters()) == 5 * 64 + 2 * (72 + 3 * 64)
    state = module.state_dict()
    same = lambda a, b: state[a].data_ptr() == state[b].data_ptr()  # noqa: E731
    assert same("layers.4.shared_part.lst.2.p.weight", "layers.0.shared_part.lst.2.p.weight")
    assert same("layers.3.shared_part.a.bias", "layers.1.shared_part.a.bias")
    assert not same("layers.3.shared_part.a.bias", "layers.0.shared_part.a.bias")
    assert not same("layers.2.own.weight", "layers.0.own.weight")
    out = module(torch.randn(2, 8))
    assert tuple(next(iter(out.values())).shape) == (2, 8)


def test_a_dotted_word_ties_too():
    report = spec("tied_to: \"None if k == 0 else 'layers.0.shared_part'\"").params()
    assert report.totals.tied == 4 * (72 + 3 * 64)


def test_a_tie_to_a_missing_instance_or_a_relative_path_is_refused():
    with pytest.raises(SpecError, match="layers.7.shared_part"):
        spec("tied_to: \"None if k == 0 else 'layers.7.shared_part'\"").params()
    with pytest.raises(SpecError, match="by its absolute path .a word or a list of segments.; received '.own'"):
        spec("tied_to: \"'.own'\"").params()


def test_a_schedules_layers_holding_repeated_blocks_are_one_stack_each_kind():
    """compare's stacks: the layers that own the shared part and those that tie to it, never the
    repeated block inside each layer (Zamba2's adapter slots)."""
    from archgraph.passes.stacks import find_stacks
    assert [(s.path, s.layers, s.per_layer) for s in find_stacks(spec())] == [
        ("layers.0..1", 2, 64 + 72 + 3 * 64), ("layers.2..4", 3, 64)]
