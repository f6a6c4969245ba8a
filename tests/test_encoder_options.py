"""Ops' options the text-encoder families added, each on its own: relative_position_bias's
`bucket_space` (MPNet)."""
from __future__ import annotations

import pytest

from archgraph import SpecError, load
from archgraph.ops import REGISTRY

RelativePositionBias = REGISTRY["relative_position_bias"]


def _module(tmp_path, text):
    pytest.importorskip("torch")
    from archgraph.torch import to_module
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return to_module(load(str(path))).eval()


def test_bucket_space_sorts_distances_into_other_buckets_than_the_table_has(tmp_path):
    torch = pytest.importorskip("torch")
    op = RelativePositionBias(num_buckets=40, heads=3, bucket_space=32)
    assert {t.name: tuple(t.shape) for t in op.params()} == {"weight": (40, 3)}
    module = _module(tmp_path, """
inputs: {x: [B, S, 8]}
nodes:
  - {name: bias, op: relative_position_bias, in: x, num_buckets: 40, heads: 1, bucket_space: 32}
""")
    with torch.no_grad():
        module.state_dict()["bias.weight"].copy_(torch.arange(40.0)[:, None])
        got = module(x=torch.zeros(1, 7, 8))["bias"][0, 0]
    # 32 buckets, both directions: 16 each; keys after the query from 16 on, exact below 8
    rel = torch.arange(7)[None, :] - torch.arange(7)[:, None]
    assert torch.equal(got, torch.where(rel > 0, 16 + rel, rel.abs()).float())
    # without bucket_space the table's 40: keys after the query from 20 on
    plain = _module(tmp_path, """
inputs: {x: [B, S, 8]}
nodes:
  - {name: bias, op: relative_position_bias, in: x, num_buckets: 40, heads: 1}
""")
    with torch.no_grad():
        plain.state_dict()["bias.weight"].copy_(torch.arange(40.0)[:, None])
        assert torch.equal(plain(x=torch.zeros(1, 7, 8))["bias"][0, 0], torch.where(rel > 0, 20 + rel, rel.abs()).float())


def test_bucket_space_must_be_positive():
    with pytest.raises(SpecError, match="bucket_space=0"):
        RelativePositionBias(num_buckets=32, heads=2, bucket_space=0)
