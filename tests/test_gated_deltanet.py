"""Gated DeltaNet on its own: the gated_delta_rule op computes the recurrence its definition states
(written out here token by token) and, slow, exactly what transformers' torch fallbacks compute
(torch_chunk_gated_delta_rule bit for bit, torch_recurrent_gated_delta_rule up to rounding); the
attention op's output gate; and the Qwen3-Next template that composes them: its real checkpoint's
total and active parameters, its layer schedule and the cache `memory` keeps per layer kind."""
from __future__ import annotations

import json

import pytest
from conftest import spec_module, write_config

from archgraph.errors import ArchgraphError
from archgraph.load import load_config

torch = pytest.importorskip("torch")

RULE = """name: rule
inputs:
  q: [B, S, {qk}]
  k: [B, S, {qk}]
  v: [B, S, {vw}]
  g: [B, S, {h}]
  beta: [B, S, {h}]
nodes:
  - {{name: core, op: gated_delta_rule, in: {{q: q, k: k, v: v, g: g, beta: beta}}, heads: {h}, key_heads: {kh},
     key_dim: {dk}, value_dim: {dv}}}
"""


def _rule(tmp_path, h=4, kh=2, dk=3, dv=5):
    module = spec_module(tmp_path, RULE.format(qk=kh * dk, vw=h * dv, h=h, kh=kh, dk=dk, dv=dv))
    return module, (h, kh, dk, dv)


def _inputs(b, s, h, kh, dk, dv):
    torch.manual_seed(3)
    return {"q": torch.randn(b, s, kh * dk), "k": torch.randn(b, s, kh * dk), "v": torch.randn(b, s, h * dv),
            "g": -torch.rand(b, s, h) * 2, "beta": torch.rand(b, s, h)}


def test_gated_delta_rule_follows_its_definition_token_by_token(tmp_path):
    module, (h, kh, dk, dv) = _rule(tmp_path)
    x = _inputs(2, 9, h, kh, dk, dv)
    with torch.no_grad():
        got = module(**x)["core"]
    assert got.shape == (2, 9, h, dv)
    for row in range(2):
        for head in range(h):
            key_head = head // (h // kh)  # key head 0 serves value heads 0 and 1
            state = torch.zeros(dk, dv)
            for t in range(9):
                q = x["q"][row, t, key_head * dk:(key_head + 1) * dk]
                k = x["k"][row, t, key_head * dk:(key_head + 1) * dk]
                q, k = q / (q.square().sum() + 1e-6).sqrt() / dk ** 0.5, k / (k.square().sum() + 1e-6).sqrt()
                v = x["v"][row, t, head * dv:(head + 1) * dv]
                state = state * x["g"][row, t, head].exp()
                state = state + torch.outer(k, x["beta"][row, t, head] * (v - state.T @ k))  # the delta rule
                assert (got[row, t, head] - state.T @ q).abs().max().item() < 1e-5


@pytest.mark.slow
def test_gated_delta_rule_is_transformers_chunked_rule_bit_for_bit():
    from transformers.models.qwen3_next.modeling_qwen3_next import (
        torch_chunk_gated_delta_rule,
        torch_recurrent_gated_delta_rule,
    )

    from archgraph.ops.recurrent import GatedDeltaRule, gated_delta_rule
    b, s, h, kh, dk, dv = 2, 70, 8, 4, 16, 12   # 70 tokens: two chunks of 64, the second padded
    x = _inputs(b, s, h, kh, dk, dv)
    got = gated_delta_rule(torch, x["q"], x["k"], x["v"], x["g"], x["beta"],
                           GatedDeltaRule(heads=h, key_heads=kh, key_dim=dk, value_dim=dv))
    q, k, v = x["q"].view(b, s, kh, dk), x["k"].view(b, s, kh, dk), x["v"].view(b, s, h, dv)
    chunked, _ = torch_chunk_gated_delta_rule(q, k, v, g=x["g"], beta=x["beta"], use_qk_l2norm_in_kernel=True)
    recurrent, _ = torch_recurrent_gated_delta_rule(q, k, v, g=x["g"], beta=x["beta"], use_qk_l2norm_in_kernel=True)
    assert torch.equal(got, chunked)
    assert (got - recurrent).abs().max().item() < 1e-5


def test_gated_delta_rule_refuses_key_heads_that_do_not_divide_heads(tmp_path):
    with pytest.raises(ArchgraphError, match="heads=6 is not a multiple of key_heads=4"):
        _rule(tmp_path, h=6, kh=4)


def test_gated_delta_rule_names_the_input_of_the_wrong_width(tmp_path):
    text = RULE.format(qk=6, vw=20, h=4, kh=2, dk=3, dv=5).replace("beta: [B, S, 4]", "beta: [B, S, 3]")
    spec = tmp_path / "rule.yaml"
    spec.write_text(text)
    import archgraph
    with pytest.raises(ArchgraphError, match=r"beta \(heads\)"):
        archgraph.load(spec)


GATED = """name: gated
inputs:
  x: [B, S, 16]
nodes:
  - {name: attn, op: attention, in: x, hidden: 16, heads: 2, kv_heads: 1, head_dim: 4, causal: true,
     qkv_bias: false, out_bias: false, output_gate: true}
"""


def test_attention_output_gate_doubles_q_proj_and_gates_each_head(tmp_path):
    module = spec_module(tmp_path, GATED, std=0.3)
    p = {k.split(".", 1)[1]: v for k, v in module.state_dict().items()}
    assert p["q_proj.weight"].shape == (2 * 2 * 4, 16)   # each head's [query | gate]
    x = torch.randn(1, 3, 16)
    with torch.no_grad():
        got = module(x=x)["attn"]
    q, gate = (x @ p["q_proj.weight"].T).view(1, 3, 2, 8).split(4, dim=-1)
    k, v = (x @ p["k_proj.weight"].T).view(1, 3, 1, 4), (x @ p["v_proj.weight"].T).view(1, 3, 1, 4)
    scores = torch.einsum("bshd,btd->bhst", q, k[:, :, 0]) / 2.0
    scores = scores.masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), float("-inf"))
    heads = torch.einsum("bhst,btd->bshd", scores.softmax(-1), v[:, :, 0]) * torch.sigmoid(gate)
    assert (got - heads.reshape(1, 3, 8) @ p["o_proj.weight"].T).abs().max().item() < 1e-5


QWEN3_NEXT_80B = json.loads((__import__("pathlib").Path(__file__).parent / "data" / "hf" /
                             "qwen3_next-80b-a3b-instruct.json").read_text())["config"]


def test_qwen3_next_80b_total_and_active_parameters(tmp_path, cli):
    code, out, _ = cli("params", write_config(tmp_path, **QWEN3_NEXT_80B), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == 79_674_391_296   # Qwen3NextForCausalLM on the meta device
    # a token leaves 502 of 512 experts idle in each of the 48 layers: gate_up and down, 3 x 2048 x 512
    assert data["active"] == 79_674_391_296 - 48 * 502 * 3 * 2048 * 512 == 3_874_929_408


SMALL = {"model_type": "qwen3_next", "architectures": ["Qwen3NextModel"], "vocab_size": 50, "hidden_size": 16,
         "num_hidden_layers": 6, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
         "intermediate_size": 12, "moe_intermediate_size": 4, "shared_expert_intermediate_size": 6, "num_experts": 3,
         "num_experts_per_tok": 2, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 4,
         "linear_value_head_dim": 3, "linear_conv_kernel_dim": 3}


def _mixers(path) -> list[str]:
    """Each layer's token mixer (self_attn or linear_attn), in order."""
    out = {}
    for node_path, *_ in load_config(path).params().nodes():
        parts = node_path.split(".")
        if len(parts) > 2 and parts[0] == "layers" and parts[2] in ("self_attn", "linear_attn"):
            out[int(parts[1])] = parts[2]
    return [out[i] for i in sorted(out)]


def test_qwen3_next_layers_attend_every_interval_unless_layer_types_say(tmp_path):
    assert _mixers(write_config(tmp_path, **SMALL)) == ["linear_attn"] * 3 + ["self_attn"] + ["linear_attn"] * 2
    assert _mixers(write_config(tmp_path, **SMALL, full_attention_interval=2)) == \
        ["linear_attn", "self_attn"] * 3
    kinds = ["full_attention", "linear_attention", "full_attention", "full_attention", "linear_attention",
             "linear_attention"]
    assert _mixers(write_config(tmp_path, **SMALL, layer_types=kinds)) == \
        ["self_attn", "linear_attn", "self_attn", "self_attn", "linear_attn", "linear_attn"]


def test_memory_keeps_keys_and_values_for_attention_and_states_for_deltanet_layers(tmp_path, cli):
    _, out, _ = cli("memory", write_config(tmp_path, **SMALL), "--json", "--dtype", "fp32", "--set", "B=2",
                    "--set", "S=1000")
    doc = json.loads(out)
    rows = {(e["path"].split(".", 2)[-1], e["rule"], e["state_values"], e["values_per_token"], e["context"])
            for e in doc["kv_cache"]}
    # DeltaNet layers: the convolution over q, k and v (2 * 2 * 4 + 4 * 3 = 28 channels) keeps its last 3
    # inputs (kernel_size, as transformers' LinearAttentionLayer); the state is 4 value heads x 4 x 3.
    # Attention layer 3: 1 key/value head of 8, all 1000 tokens
    assert rows == {("linear_attn.conv1d", "convolution window of 3", 28 * 3, 0, 0),
                    ("linear_attn.core", "recurrent state (gated delta rule)", 4 * 4 * 3, 0, 0),
                    ("self_attn", "full attention", 0, 2 * 8, 1000)}
    assert doc["kv_cache_bytes"] == 2 * 1000 * 16 * 4
    assert doc["state_cache_bytes"] == 5 * 2 * (28 * 3 + 48) * 4


def _fixture(name: str) -> dict:
    return json.loads((__import__("pathlib").Path(__file__).parent / "data" / "hf" / f"{name}.json").read_text())["config"]


@pytest.mark.parametrize("name, total, idle", [
    # Qwen3.5-35B-A3B: 248 of 256 experts idle in each of 40 layers, 3 x 2048 x 512 each
    ("qwen3_5_moe_text-35b-a3b", 34_660_610_688, 40 * 248 * 3 * 2048 * 512),
    # Qwen3.5-397B-A17B: 502 of 512 idle in each of 60 layers, 3 x 4096 x 1024 each
    ("qwen3_5_moe_text-397b-a17b", 396_346_350_336, 60 * 502 * 3 * 4096 * 1024),
    ("qwen3_5_text-9b", 8_953_803_264, 0)])
def test_qwen3_5_totals_and_active_parameters(tmp_path, cli, name, total, idle):
    code, out, _ = cli("params", write_config(tmp_path, **_fixture(name)), "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == total   # transformers 5.23.0 on the meta device
    assert data["active"] == total - idle


def test_qwen3_5_deltanet_projects_q_k_v_z_b_and_a_apart(tmp_path):
    config = {**SMALL, "model_type": "qwen3_5_text", "architectures": ["Qwen3_5TextModel"]}
    names = {name.split(".", 3)[-1]: shape for name, shape in
             ((n, list(r.shape)) for n, r in load_config(write_config(tmp_path, **config)).params().tensors())
             if name.startswith("layers.0.linear_attn.")}
    # keys and queries 2 heads x 4, values and z 4 heads x 3, one b and one a per value head
    assert names == {"in_proj_qkv.weight": [2 * 8 + 12, 16], "in_proj_z.weight": [12, 16],
                     "in_proj_b.weight": [4, 16], "in_proj_a.weight": [4, 16], "conv1d.weight": [28, 1, 3],
                     "A_log": [4], "dt_bias": [4], "norm.weight": [3], "out_proj.weight": [16, 12]}


def test_qwen3_next_stacks_name_the_linear_attention_layers(tmp_path):
    from archgraph.passes.stacks import find_stacks
    stacks = [(s.path, s.layers, s.does) for s in find_stacks(load_config(write_config(tmp_path, **SMALL)))]
    # layers 0-2, 4, 5: Gated DeltaNet (its short convolution too) and experts; layer 3 attends
    assert stacks == [("layers.0,1,2,…,5", 5, ("linear attention", "convolution", "MoE 3 experts top 2")),
                      ("layers.3", 1, ("causal", "MoE 3 experts top 2"))]


@pytest.mark.parametrize("kinds, words", [
    (["linear_attention", "sliding_attention"] * 3, "layer_types may list only linear_attention and full_attention"),
    (["linear_attention"] * 5, "layer_types must list one kind per layer")])
def test_qwen3_next_refuses_layer_types_it_cannot_build(tmp_path, cli, kinds, words):
    code, _, err = cli("params", write_config(tmp_path, **SMALL, layer_types=kinds))
    assert code == 2 and words in err and "Traceback" not in err
