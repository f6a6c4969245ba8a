"""`tie: .name.weight`: a tensor of the same block instance (the same repetition), as a Python
relative import names its own package."""
from __future__ import annotations

import re

import pytest

import archgraph
from archgraph.load import load_text

PAIR = """\
name: pair
inputs:
  x: {shape: [B, 4]}
blocks:
  layer:
    nodes:
      - {name: a, op: linear, in_features: 4, out_features: 4}
      - {name: b, op: linear, in_features: 4, out_features: 4, bias: false, tie: .a.weight}
      - {name: c, op: linear, in_features: 4, out_features: 4, bias: false, tie: .b.weight}
nodes:
  - {name: layers, block: layer, repeat: 3}
"""
NAMES = [f"layers.{i}.{t}" for i in range(3) for t in ("a.weight", "a.bias", "b.weight", "c.weight")]


def test_a_relative_tie_counts_the_tensor_once_per_repetition():
    report = load_text(PAIR, "pair.yaml").params()
    assert (report.total, report.totals.tied) == (3 * (16 + 4), 3 * 2 * 16)
    assert [name for name, _ in report.state_dict()] == NAMES
    ties = {path: rows[0].tied_to for path, _, _, rows in report.nodes() if rows[0].tied_to}
    assert ties == {f"layers.{i}.{n}": f"layers.{i}.a.weight" for i in range(3) for n in "bc"}  # a chain: c -> b -> a


def test_a_relative_tie_shares_the_parameter_within_a_repetition_only():
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    module = to_module(load_text(PAIR, "pair.yaml"))
    assert list(module.state_dict()) == NAMES
    layers = module.layers
    assert layers[1].b.weight is layers[1].a.weight and layers[1].c.weight is layers[1].a.weight
    assert layers[0].a.weight is not layers[1].a.weight
    assert sum(p.numel() for p in module.parameters()) == 60
    state = {k: torch.full_like(v, float(i)) for i, (k, v) in enumerate(module.state_dict().items())}
    state = {k: state[re.sub(r"\.[bc]\.weight$", ".a.weight", k)] for k in state}  # tied names agree
    module.load_state_dict(state)
    assert [float(layers[i].c.weight.detach()[0, 0]) for i in range(3)] == [0.0, 4.0, 8.0]


def test_a_used_spec_may_tie_relative_to_itself(tmp_path):
    (tmp_path / "pair.yaml").write_text(PAIR)
    (tmp_path / "top.yaml").write_text("""\
name: top
inputs:
  x: {shape: [B, 4]}
blocks:
  pair: {spec: pair.yaml}
nodes:
  - {name: towers, block: pair, repeat: 2}
""")
    report = archgraph.load(str(tmp_path / "top.yaml")).params()
    assert report.total == 2 * 60
    assert [n for n, _ in report.state_dict()][:4] == ["towers.0.layers.0." + t for t in
                                                       ("a.weight", "a.bias", "b.weight", "c.weight")]


@pytest.mark.parametrize("tie, message", [
    ("..a.weight", "tie: '..a.weight': a relative tie is one '.' and a tensor of the enclosing block instance"),
    (".d.weight", "tie: '.d.weight' (relative to the enclosing block): no node owns the tensor 'd.weight'"),
    (".a.wieght", "tie: '.a.wieght' (relative to the enclosing block): node 'a' (linear) has no tensor 'wieght'"),
    (".a.bias", "tie: 'weight' has shape [4, 4] but '.a.bias' has shape [4]"),
    (".b.weight", "tie: '.b.weight' is this node's own tensor"),
])
def test_relative_tie_errors(tie, message):
    text = PAIR.replace("tie: .a.weight", f"tie: {tie}")
    with pytest.raises(archgraph.SpecError) as info:
        load_text(text, "pair.yaml").params()
    assert message in info.value.message
    assert info.value.loc is not None and info.value.loc.line == 8


def test_relative_ties_in_a_cycle_are_an_error():
    text = PAIR.replace("bias: false, tie: .a.weight}", "bias: false, tie: .c.weight}")
    with pytest.raises(archgraph.SpecError, match=re.escape(
            "tie: the ties form a cycle (c.weight -> b.weight -> c.weight)")):
        load_text(text, "pair.yaml")
