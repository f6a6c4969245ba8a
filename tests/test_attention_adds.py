"""attention's q_add, k_add, v_add (other nodes' outputs added to the projections, as Zamba2's
per-use LoRA adapters) and out_hidden (o_proj's width: Zamba2's shared attention reads 2H, gives H),
each on its own: an added x @ A is the projection by W + A."""
from __future__ import annotations

import pytest

from archgraph.errors import ArchgraphError
from archgraph.load import load_text

ATTN = "op: attention, hidden: 8, heads: 2, causal: true, qkv_bias: false, out_bias: false"
ADDS = """\
name: adds
inputs:
  x: {shape: [B, S, 8]}
nodes:
  - {name: qa, op: linear, in: x, in_features: 8, out_features: 8, bias: false}
  - {name: ka, op: linear, in: x, in_features: 8, out_features: 8, bias: false}
  - {name: va, op: linear, in: x, in_features: 8, out_features: 8, bias: false}
  - {name: attn, in: {x: x, q_add: qa, k_add: ka, v_add: va}, out_hidden: 5, ATTN}
""".replace("ATTN", ATTN)
PLAIN = f"name: plain\ninputs:\n  x: {{shape: [B, S, 8]}}\nnodes:\n  - {{name: attn, in: x, out_hidden: 5, {ATTN}}}\n"


def test_out_hidden_is_o_proj_width():
    report = load_text(PLAIN, "plain.yaml").params()
    assert tuple(dict(report.state_dict())["attn.o_proj.weight"].shape) == (5, 8)
    assert report.total == 3 * 64 + 5 * 8
    assert load_text(PLAIN, "plain.yaml").shapes(B=2, S=3).shape_of("attn") == [(2, 3, 5)]


def test_added_projections_are_the_projection_by_the_summed_weights():
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    adds, plain = to_module(load_text(ADDS, "adds.yaml")).eval(), to_module(load_text(PLAIN, "plain.yaml")).eval()
    torch.manual_seed(0)
    state = {k: torch.randn_like(v) for k, v in adds.state_dict().items()}
    adds.load_state_dict(state)
    plain.load_state_dict({f"attn.{p}_proj.weight": state[f"attn.{p}_proj.weight"] + state[f"{p}a.weight"]
                           for p in "qkv"} | {"attn.o_proj.weight": state["attn.o_proj.weight"]})
    x = torch.randn(2, 4, 8)
    with torch.no_grad():
        got, want = adds(x=x)["attn"], plain(x=x)["attn"]
    assert got.shape == (2, 4, 5)
    assert (got - want).abs().max().item() < 1e-5 and want.abs().max().item() > 1e-2


def test_an_add_of_the_wrong_width_or_to_a_fused_projection_is_refused():
    with pytest.raises(ArchgraphError, match=r"last dimension of k_add \(heads · head_dim\)"):
        load_text(ADDS.replace("{name: ka, op: linear, in: x, in_features: 8, out_features: 8",
                               "{name: ka, op: linear, in: x, in_features: 8, out_features: 6"), "a.yaml").shapes(B=2, S=3)
    with pytest.raises(ArchgraphError, match="q_add is added to a projection of x .separate q, k, v."):
        load_text(ADDS.replace("causal: true", "causal: true, qkv: fused"), "a.yaml").shapes(B=2, S=3)
