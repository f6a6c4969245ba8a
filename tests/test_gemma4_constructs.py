"""The constructs Gemma 4 brought, each on its own and computed by hand: keys and values one
attention gives (`kv_out`) and another reads instead of projecting its own (`shared_kv`), the
weightless value norm (`v_norm`) and values taken from the key projection (`k_eq_v`); the
`proportional` rotary table; a mixture of experts whose routing is given by nodes (the `experts`
primitive, each picked expert's weight times its learned scale); the key tables' `by_layer` rule (transformers' per_layer_config); and
what `memory` keeps for Gemma 4's layers (shared layers: no cache of their own); and Gemma 3n's
sparse gates (gated_mlp's `sparsity`)."""
from __future__ import annotations

import pytest
from conftest import spec_module, write_config

from archgraph import ArchgraphError, SpecError
from archgraph.load import load_config
from archgraph.ops import REGISTRY

torch = pytest.importorskip("torch")

Attention, RotaryEmbedding, MoE = REGISTRY["attention"], REGISTRY["rotary_embedding"], REGISTRY["moe"]


def test_a_layer_reading_shared_keys_and_values_has_no_key_or_value_tensors():
    own = Attention(hidden=16, heads=2, kv_heads=1, qkv_bias=False, out_bias=False, qk_norm="head", kv_out=True)
    shared = Attention(hidden=16, heads=2, kv_heads=1, qkv_bias=False, out_bias=False, qk_norm="head",
                       shared_kv=True)
    assert [t.name for t in own.params()] == ["q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight",
                                              "q_norm.weight", "k_norm.weight"]
    assert [t.name for t in shared.params()] == ["q_proj.weight", "o_proj.weight", "q_norm.weight"]
    assert own.infer_shape((2, 5, 16)) == [(2, 5, 16), (2, 1, 5, 8), (2, 1, 5, 8)]
    assert shared.infer_shape((2, 5, 16), shared_k=(2, 1, 5, 8), shared_v=(2, 1, 5, 8)) == (2, 5, 16)


def test_values_from_the_key_projection_have_no_v_proj():
    op = Attention(hidden=16, heads=2, kv_heads=1, qkv_bias=True, out_bias=False, k_eq_v=True, v_norm=True)
    assert [t.name for t in op.params()] == ["q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
                                             "o_proj.weight"]


@pytest.mark.parametrize("options, words", [
    ({"qkv": "fused", "k_eq_v": True}, "need separate q, k and v projections"),
    ({"shared_kv": True, "kv_out": True}, "belong to the layer that computes them"),
])
def test_sharing_options_that_do_not_fit_are_refused(options, words):
    with pytest.raises(SpecError, match=words):
        Attention(hidden=16, heads=2, **options)


SHARED = """
inputs: {x: [B, S, 16]}
nodes:
  - {name: a, op: attention, in: x, hidden: 16, heads: 2, kv_heads: 1, causal: true, qkv_bias: false,
     out_bias: false, scale: 1.0, qk_norm: head, v_norm: true, k_eq_v: KEQV, kv_out: true}
  - {name: b, op: attention, in: {x: a, shared_k: "a:1", shared_v: "a:2"}, hidden: 16, heads: 2, kv_heads: 1,
     causal: true, qkv_bias: false, out_bias: false, scale: 1.0, qk_norm: head, shared_kv: true}
outputs: {a: a, b: b}
"""


def _rms(t, w=None):
    h = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6)
    return h if w is None else h * w


@pytest.mark.parametrize("k_eq_v", [False, True])
def test_the_second_layer_attends_to_the_first_ones_keys_and_values(tmp_path, k_eq_v):
    module = spec_module(tmp_path, SHARED.replace("KEQV", str(k_eq_v).lower()), 0.5)
    state = dict(module.state_dict())
    assert not any(name.startswith(("b.k_", "b.v_")) for name in state)
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        got = module(x=x)

    def heads(t, n):
        return t.view(2, 5, n, 8).transpose(1, 2)

    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    k_raw = x @ state["a.k_proj.weight"].T
    k = _rms(heads(k_raw, 1), state["a.k_norm.weight"])
    v = _rms(heads(k_raw if k_eq_v else x @ state["a.v_proj.weight"].T, 1))   # v_norm: no weight

    def attend(name, inp):
        q = _rms(heads(inp @ state[f"{name}.q_proj.weight"].T, 2), state[f"{name}.q_norm.weight"])
        p = (q @ k.transpose(-1, -2)).masked_fill(mask, float("-inf")).softmax(-1)   # scale 1
        return (p @ v).transpose(1, 2).reshape(2, 5, 16) @ state[f"{name}.o_proj.weight"].T

    a = attend("a", x)
    assert (got["a"] - a).abs().max().item() < 1e-5
    assert (got["b"] - attend("b", a)).abs().max().item() < 1e-5


def test_proportional_rope_turns_a_share_of_each_head_over_its_whole_width():
    op = RotaryEmbedding(head_dim=16, rotary_dim=4, base=100.0, scaling="proportional", factor=2.0)
    got = op.inv_freq(torch).tolist()
    want = [1 / 100.0 ** (0 / 16) / 2, 1 / 100.0 ** (2 / 16) / 2] + [0.0] * 6   # base^(-2k/head_dim), then zeros
    assert got == pytest.approx(want)
    assert op.infer_shape((1, 7, 16)) == [(1, 7, 16), (1, 7, 16)]   # the tables span head_dim
    assert [(t.name, t.shape) for t in op.buffers()] == [("inv_freq", (8,))]


def test_proportional_rope_is_transformers_proportional_rope():
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    config = transformers.Gemma4TextConfig(num_hidden_layers=6, global_head_dim=64, rope_parameters={
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "rope_theta": 5000.0, "partial_rotary_factor": 0.25,
                           "factor": 3.0}})
    want, _ = ROPE_INIT_FUNCTIONS["proportional"](config, layer_type="full_attention")
    op = RotaryEmbedding(head_dim=64, rotary_dim=16, base=5000.0, scaling="proportional", factor=3.0)
    assert torch.equal(op.inv_freq(torch), want)


ROUTED = """
inputs: {x: [B, S, 8]}
nodes:
  - {name: proj, op: linear, in: x, in_features: 8, out_features: 4, bias: false}
  - {name: probs, op: softmax, dim: -1}
  - {name: top, op: topk, k: 2}
  - {name: scale, op: parameter, shape: [4], tensor: ""}
  - {name: picked_scale, op: index, in: [scale, "top:1"], dims: [0]}
  - {name: scaled, op: mul, in: ["top:0", picked_scale]}
  - {name: experts, op: experts, in: {x: x, weights: scaled, picked: "top:1"}, hidden: 8, intermediate: 3, experts: 4,
     top_k: 2, activation: silu}
"""


def test_given_routing_weights_each_picked_expert_by_its_weight_and_scale(tmp_path):
    module = spec_module(tmp_path, ROUTED, 0.5)
    state = dict(module.state_dict())
    assert sorted(state) == ["experts.down_proj", "experts.gate_up_proj", "proj.weight", "scale"]
    x = torch.randn(2, 3, 8)
    with torch.no_grad():
        got = module(x=x)["experts"]
    weights, picked = (x @ state["proj.weight"].T).softmax(-1).topk(2, dim=-1)
    want = torch.zeros_like(x)
    for b in range(2):
        for s in range(3):
            for w, e in zip(weights[b, s], picked[b, s]):
                gate, up = (state["experts.gate_up_proj"][e] @ x[b, s]).chunk(2)
                h = state["experts.down_proj"][e] @ (torch.nn.functional.silu(gate) * up)
                want[b, s] += w * state["scale"][e] * h
    assert (got - want).abs().max().item() < 1e-5


def test_given_routing_refuses_the_options_of_its_own_router():
    with pytest.raises(SpecError, match="routing 'given' takes the weights and experts as inputs"):
        MoE(hidden=8, intermediate=3, experts=4, routing="given", scoring="sigmoid")
    op = MoE(hidden=8, intermediate=3, experts=4, routing="given")
    assert [t.name for t in op.params()] == ["experts.gate_up_proj", "experts.down_proj"]   # no router tensor


GEMMA4 = {"model_type": "gemma4_text", "architectures": ["Gemma4ForCausalLM"], "vocab_size": 100,
          "hidden_size": 32, "intermediate_size": 40, "num_hidden_layers": 6, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 8, "global_head_dim": 16, "sliding_window": 4,
          "hidden_size_per_layer_input": 4, "vocab_size_per_layer_input": 100,
          "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2}


def test_per_layer_config_sets_the_head_sizes_it_names(tmp_path):
    config = {**GEMMA4, "per_layer_config": {"2": {"head_dim": 24}, "05": {"head_dim": 24}}}
    tensors = dict(load_config(write_config(tmp_path, **config)).params().tensors())
    assert tensors["model.layers.2.self_attn.q_proj.weight"].shape == (4 * 24, 32)
    assert tensors["model.layers.5.self_attn.k_norm.weight"].shape == (24,)
    assert tensors["model.layers.1.self_attn.q_proj.weight"].shape == (4 * 8, 32)


def test_per_layer_config_of_a_field_the_template_does_not_build_is_refused_by_name(tmp_path):
    config = {**GEMMA4, "per_layer_config": {"2": {"head_dim": 24, "intermediate_size": 7}}}
    with pytest.raises(ArchgraphError, match="'per_layer_config.2' overrides 'intermediate_size'"):
        load_config(write_config(tmp_path, **config))


def test_bidirectional_attention_over_all_tokens_is_refused_by_its_value(tmp_path):
    with pytest.raises(ArchgraphError, match="'use_bidirectional_attention' is \"all\""):
        load_config(write_config(tmp_path, **GEMMA4, use_bidirectional_attention="all"))


def test_shared_layers_keep_no_cache_and_each_kind_keeps_its_own(tmp_path):
    from archgraph.passes.memory import estimate_memory
    config = {**GEMMA4, "num_kv_shared_layers": 3}   # layers 3, 4, 5 read those of layers 1 and 2
    report = estimate_memory(load_config(write_config(tmp_path, **config)), {"B": 1, "S": 10})
    layers = {}
    for e in report.kv_cache:   # one entry per run of layers (each Gemma 4 layer is its own run)
        layers[(e.rule, e.context, e.width)] = layers.get((e.rule, e.context, e.width), 0) + e.layers
    # keys and values of kv_heads x head_dim: 2 x 2 x 8 on the sliding layers, 2 x 2 x 16 on the full one
    assert layers == {("sliding window of 4", 4, 32): 2, ("full attention", 10, 64): 1}


SPARSE = """
inputs: {x: [B, S, 8]}
nodes:
  - {name: mlp, op: gated_mlp, in: x, hidden: 8, intermediate: 16, activation: gelu_tanh, sparsity: 0.9}
"""


def test_a_sparse_gate_keeps_what_exceeds_mean_plus_quantile_std(tmp_path):
    module = spec_module(tmp_path, SPARSE, 0.5)
    state = dict(module.state_dict())
    x = torch.randn(2, 3, 8)
    with torch.no_grad():
        got = module(x=x)["mlp"]
    gate = x @ state["mlp.gate_proj.weight"].T
    cutoff = gate.mean(-1, keepdim=True) + gate.std(-1, keepdim=True, unbiased=False) * 1.2815515   # Φ⁻¹(0.9)
    kept = torch.relu(gate - cutoff)
    assert 0 < (kept > 0).float().mean().item() < 0.3   # about a tenth of each gate survives
    h = torch.nn.functional.gelu(kept, approximate="tanh") * (x @ state["mlp.up_proj.weight"].T)
    assert (got - h @ state["mlp.down_proj.weight"].T).abs().max().item() < 1e-5


def test_a_sparse_gate_is_transformers_gaussian_topk():
    transformers = pytest.importorskip("transformers")
    from transformers.models.gemma3n.modeling_gemma3n import Gemma3nTextMLP

    config = transformers.Gemma3nTextConfig(num_hidden_layers=1, activation_sparsity_pattern=[0.95])
    reference = Gemma3nTextMLP(config, 0)
    gate = torch.randn(4, 5, 64)
    op = REGISTRY["gated_mlp"](hidden=8, intermediate=64, sparsity=0.95)
    assert torch.equal(op._sparse(torch, gate), reference._gaussian_topk(gate))


@pytest.mark.parametrize("sparsity", [-0.1, 1.0])
def test_a_sparsity_outside_0_1_is_refused(sparsity):
    with pytest.raises(SpecError, match="0 <= sparsity < 1"):
        REGISTRY["gated_mlp"](hidden=8, intermediate=16, sparsity=sparsity)
