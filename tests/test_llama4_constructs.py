"""Llama 4's constructs, each on its own: chunked attention (attention's `chunk`, a causal mask
of its own, with its decoding cache), the weightless q/k norm after the rotary positions
(`qk_norm: l2`), queries scaled per position (`q_scale`), the `floor` op, and experts that scale
their input by the router weight (moe's `weighting: input`); then llama4_text's layer kinds,
the published checkpoints' totals and active parameters, and their cache per layer kind; the
vision tower (its rotary angles' buffer, the pixel shuffle) and the model with images."""
from __future__ import annotations

import json

import pytest
from conftest import spec_module, write_config

from archgraph import SpecError
from archgraph.errors import ShapeError
from archgraph.load import load_config
from archgraph.ops import REGISTRY

Attention, MoE = REGISTRY["attention"], REGISTRY["moe"]


def _chunked(s, chunk, left):
    """True where query i may not see key j: later keys, and keys of another chunk counted from `left`."""
    import torch
    i, j = torch.arange(s)[:, None], torch.arange(s)[None, :]
    return (j > i) | ((i - left) // chunk != (j - left) // chunk)


def test_chunked_attention_is_the_written_out_softmax_with_chunks_from_the_first_real_key():
    torch = pytest.importorskip("torch")
    from archgraph.ops.attention import attend
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 7, 8), torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 8)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0]])
    got = attend(torch, q, k, v, None, None, True, None, mask=mask, chunk=3)
    kk, vv = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
    for row, left in ((0, 2), (1, 0)):   # row 0's chunks start after its two padding positions
        hidden = _chunked(7, 3, left) | (mask[row] == 0)[None, :]
        scores = (q[row] @ kk[row].transpose(-1, -2) / 8 ** 0.5).masked_fill(hidden, torch.finfo(q.dtype).min)
        want = scores.softmax(-1) @ vv[row]
        keep = mask[row].bool()
        assert (got[row][:, keep] - want[:, keep]).abs().max().item() < 1e-5
    plain = attend(torch, q, k, v, None, None, True, None, mask=mask)
    assert (plain - got)[1].abs().max().item() > 1e-2   # the chunks hide keys a causal mask shows


def test_chunked_layers_cache_at_most_a_chunk():
    op = Attention(hidden=32, heads=4, kv_heads=2, causal=True, chunk=8)
    per_token = 2 * 2 * 8
    long, short = op.cache([(1, 20, 32)], [(1, 20, 32)], True), op.cache([(1, 5, 32)], [(1, 5, 32)], True)
    assert (long.rule, long.per_token, long.tokens) == ("chunk of 8", per_token, 8)
    assert (short.rule, short.tokens) == ("chunk of 8", 5)


@pytest.mark.parametrize("args, words", [
    ({"chunk": 4}, "chunk is a causal mask of its own: give causal: true and no window"),
    ({"chunk": 4, "causal": True, "window": 2}, "chunk is a causal mask of its own"),
    ({"chunk": 0, "causal": True}, "chunk"),
    ({"qk_norm": "l2", "qk_norm_type": "layer"}, "qk_norm 'l2' has no weight"),
])
def test_attention_options_that_cannot_combine_are_refused(args, words):
    with pytest.raises(SpecError, match=words):
        Attention(hidden=32, heads=4, **args)


def test_the_l2_norm_has_no_tensors():
    plain = {t.name for t in Attention(hidden=32, heads=4).params()}
    assert {t.name for t in Attention(hidden=32, heads=4, qk_norm="l2").params()} == plain


L2_SPEC = """
inputs: {x: [B, S, 16], ids: [B, S]}
nodes:
  - {name: rope, op: rotary_embedding, in: ids, head_dim: 4, base: 100.0}
  - {name: scale, op: arange, start: 1, end: S + 1, dtype: float32}
  - {name: attn, op: attention, in: {x: x, rope: "rope:0", rope_sin: "rope:1", q_scale: scale}, hidden: 16,
     heads: 4, kv_heads: 2, causal: true, qkv_bias: false, out_bias: false, rotary: interleaved, qk_norm: l2,
     qk_norm_eps: 1e-5}
"""


def test_l2_norm_follows_the_rotation_and_q_scale_multiplies_each_position(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, L2_SPEC, 0.5)
    w = dict(module.state_dict())
    torch.manual_seed(1)
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        got = module(x=x, ids=torch.zeros(2, 5, dtype=torch.long))["attn"]
    q, k, v = (x @ w[f"attn.{n}_proj.weight"].T for n in "qkv")
    q, k, v = (t.view(2, 5, -1, 4) for t in (q, k, v))   # [B, S, heads, d]
    inv = 1.0 / 100.0 ** (torch.arange(0, 4, 2).float() / 4)
    turn = torch.polar(torch.ones(5, 2), torch.arange(5).float()[:, None] * inv)[None, :, None, :]
    q, k = (torch.view_as_real(torch.view_as_complex(t.reshape(2, 5, -1, 2, 2)) * turn).flatten(3) for t in (q, k))
    q, k = (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5) for t in (q, k))
    q = q * torch.arange(1, 6).float()[None, :, None, None]
    q, k, v = q.transpose(1, 2), k.repeat_interleave(2, dim=2).transpose(1, 2), v.repeat_interleave(2, dim=2).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2) / 2.0).masked_fill(torch.ones(5, 5).triu(1).bool(), float("-inf"))
    want = (scores.softmax(-1) @ v).transpose(1, 2).reshape(2, 5, 16) @ w["attn.o_proj.weight"].T
    assert (got - want).abs().max().item() < 1e-5


def test_a_query_scale_of_another_length_is_refused(tmp_path):
    from archgraph import load
    path = tmp_path / "spec.yaml"
    path.write_text(L2_SPEC.replace("end: S + 1", "end: S + 2"))
    with pytest.raises(ShapeError, match=r"length of the query scale \(that of the queries\) is S \+ 1, expected S"):
        load(str(path)).shapes()


def test_floor_rounds_down(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, "inputs: {x: [4]}\nnodes:\n  - {name: f, op: floor, in: x}\n")
    assert module(x=torch.tensor([-1.5, -0.0, 2.0, 2.9]))["f"].tolist() == [-2.0, -0.0, 2.0, 2.0]


MOE_SPEC = """
inputs: {x: [B, S, 6]}
nodes:
  - {name: mlp, op: moe, in: x, hidden: 6, intermediate: 5, experts: 4, top_k: TOPK, scoring: sigmoid,
     normalize: false, weighting: input, weight_layout: in_out, names: [router, experts]}
"""


@pytest.mark.parametrize("top_k", [1, 2])
def test_input_weighting_scales_each_token_before_its_expert(tmp_path, top_k):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, MOE_SPEC.replace("TOPK", str(top_k)), 0.7)
    w = dict(module.state_dict())
    torch.manual_seed(2)
    x = torch.randn(2, 3, 6)
    with torch.no_grad():
        got = module(x=x)["mlp"]
    tokens = x.reshape(-1, 6)
    top, picked = (tokens @ w["mlp.router.weight"].T).topk(top_k, dim=-1)
    out = torch.zeros_like(tokens)
    for t in range(tokens.shape[0]):
        for slot in range(top_k):
            e = picked[t, slot]
            h = (tokens[t] * torch.sigmoid(top[t, slot])) @ w["mlp.experts.gate_up_proj"][e]
            out[t] += (torch.nn.functional.silu(h[:5]) * h[5:]) @ w["mlp.experts.down_proj"][e]
    assert (got - out.reshape(2, 3, 6)).abs().max().item() < 1e-5
    output_weighted = spec_module(tmp_path, MOE_SPEC.replace("TOPK", str(top_k)).replace("weighting: input", "weighting: output"), 0.7)
    with torch.no_grad():
        assert (output_weighted(x=x)["mlp"] - got).abs().max().item() > 1e-3


# meta-llama/Llama-4-Scout-17B-16E's text_config (sizes and switches of the published checkpoint)
SCOUT = json.loads((__import__("pathlib").Path(__file__).parent / "data" / "hf" /
                    "llama4_text-scout-17b-16e.json").read_text())["config"]
MAVERICK = json.loads((__import__("pathlib").Path(__file__).parent / "data" / "hf" /
                       "llama4_text-maverick-17b-128e.json").read_text())["config"]


@pytest.mark.parametrize("config, total, active", [
    # transformers 5.23.0 on the meta device; a token leaves E - 1 experts of 3 x 5120 x 8192 idle per MoE layer
    (SCOUT, 107_769_861_120, 107_769_861_120 - 48 * 15 * 3 * 5120 * 8192),
    (MAVERICK, 400_711_848_960, 400_711_848_960 - 24 * 127 * 3 * 5120 * 8192),
])
def test_published_totals_and_active_parameters(tmp_path, cli, config, total, active):
    code, out, _ = cli("params", write_config(tmp_path, **config), "--json")
    data = json.loads(out)
    assert code == 0 and (data["total"], data["active"]) == (total, active)
    assert active in (17_172_894_720, 17_184_691_200)   # the "17B" of both names


def _layers(path) -> list[tuple]:
    """Each layer's (chunk, qk_norm, feed-forward op)."""
    model = load_config(path)
    out = {}
    for node_path, node, *_ in model.params().nodes():
        parts = node_path.split(".")
        if parts[-1] == "self_attn":
            out.setdefault(int(parts[2]), {}).update(chunk=node.op.chunk, qk=node.op.qk_norm)
        if parts[-1] == "feed_forward" and len(parts) == 4:
            out.setdefault(int(parts[2]), {})["ff"] = node.op.op_name
    return [(v["chunk"], v["qk"], v["ff"]) for _, v in sorted(out.items())]


def test_layer_kinds_follow_no_rope_layers_layer_types_and_moe_layers(tmp_path):
    small = {"model_type": "llama4_text", "architectures": ["Llama4ForCausalLM"], "vocab_size": 50,
             "hidden_size": 16, "num_hidden_layers": 5, "num_attention_heads": 2, "num_key_value_heads": 1,
             "head_dim": 8, "intermediate_size": 4, "intermediate_size_mlp": 12, "num_local_experts": 3,
             "attention_chunk_size": 32}
    assert _layers(write_config(tmp_path, **small, interleave_moe_layer_step=2)) == [
        (32, "l2", "gated_mlp"), (32, "l2", "moe"), (32, "l2", "gated_mlp"), (None, "none", "moe"),
        (32, "l2", "gated_mlp")]   # every 4th layer has no positions, and attends to every token
    assert _layers(write_config(tmp_path, **small, no_rope_layers=[0, 1, 1, 1, 0], moe_layers=[4],
                                use_qk_norm=False, layer_types=["chunked_attention"] * 2 + ["full_attention"] * 3)) == [
        (32, "none", "gated_mlp"), (32, "none", "gated_mlp"), (None, "none", "gated_mlp"),
        (None, "none", "gated_mlp"), (None, "none", "moe")]


def test_router_noise_is_refused_by_key(tmp_path, cli):
    code, _, err = cli("params", write_config(tmp_path, **{**SCOUT, "router_jitter_noise": 0.1}))
    assert code == 2 and "router_jitter_noise" in err and "noise" in err


def test_scout_caches_a_chunk_on_chunked_layers_and_every_token_on_the_others(tmp_path):
    from archgraph.passes.memory import estimate_memory
    report = estimate_memory(load_config(write_config(tmp_path, **SCOUT)), {"B": 1, "S": 100_000})
    layers, tokens = {}, {}
    for e in report.kv_cache:
        layers[e.rule] = layers.get(e.rule, 0) + e.layers
        tokens.setdefault(e.rule, set()).add(e.context)
    assert layers == {"chunk of 8192": 36, "full attention": 12}
    assert tokens == {"chunk of 8192": {8192}, "full attention": {100_000}}
    assert report.kv_cache_bytes == 2 * 2 * 8 * 128 * (36 * 8192 + 12 * 100_000)   # bf16 keys and values


def _fixture(name: str) -> dict:
    return json.loads((__import__("pathlib").Path(__file__).parent / "data" / "hf" / f"{name}.json").read_text())["config"]


@pytest.mark.parametrize("name, total, active", [
    # transformers 5.23.0 on the meta device: the text model's, the vision tower (850,960,896) and the projector
    ("llama4-scout-17b-16e", 108_641_793_536, 108_641_793_536 - 48 * 15 * 3 * 5120 * 8192),
    ("llama4-maverick-17b-128e", 401_583_781_376, 401_583_781_376 - 24 * 127 * 3 * 5120 * 8192),
    ("llama4_vision_model-scout-17b-16e", 850_960_896, 850_960_896),
])
def test_published_models_with_images(tmp_path, cli, name, total, active):
    code, out, _ = cli("params", write_config(tmp_path, **_fixture(name)), "--json")
    data = json.loads(out)
    assert code == 0 and (data["total"], data["active"]) == (total, active)


def test_the_vision_tower_keeps_its_rotary_angles_as_a_buffer_and_gives_shuffled_tokens(tmp_path):
    model = load_config(write_config(tmp_path, **_fixture("llama4_vision_model-scout-17b-16e")))
    buffers = {(path, row.name, tuple(row.shape), row.persistent)
               for path, _, _, rows in model.params().nodes() for row in rows if row.buffer}
    assert buffers == {("rotary_embedding", "freqs_ci", (577, 1, 44), False)}   # 24 x 24 patches and the class token
    shapes = model.shapes()
    assert [str(d) for d in shapes.outputs["last_hidden_state"]] == ["B", "144", "4096"]   # 12 x 12 tokens after the shuffle


@pytest.mark.parametrize("change, words", [
    ({"intermediate_size": 5000}, "intermediate_size is hidden_size / pixel_shuffle_ratio²"),
    ({"pixel_shuffle_ratio": 0.3}, "pixel_shuffle_ratio must cut the patch grid into whole blocks"),
    ({"hidden_size": 1400}, "must be a multiple of 4"),
])
def test_vision_configs_transformers_cannot_run_are_refused(tmp_path, cli, change, words):
    code, _, err = cli("params", write_config(tmp_path, **{**_fixture("llama4_vision_model-scout-17b-16e"), **change}))
    assert code == 2 and words in " ".join(err.split())


def test_the_text_config_ties_the_head_and_the_top_level_does_not(tmp_path, cli):
    config = _fixture("llama4-odd-tied-text-quarter-shuffle")   # text_config ties: 1,000 x 96 fewer
    untied = {**config, "text_config": {**config["text_config"], "tie_word_embeddings": False},
              "tie_word_embeddings": True}
    totals = [json.loads(cli("params", write_config(tmp_path, **c), "--json")[1])["total"] for c in (config, untied)]
    assert totals == [723_136, 723_136 + 1000 * 96]
