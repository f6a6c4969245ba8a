"""moe's options for today's families, each on its own (expert biases, transposed matrices,
interleaved gate/up columns, the clamped Swish gate, router bias, renormalised top-k), and
attention's `sinks`: the tensors they add, the parameters a token leaves idle, what the module
computes (against the computation written out here), and the refusals."""
from __future__ import annotations

import json

import pytest

from archgraph import SpecError
from archgraph.ops import REGISTRY

from conftest import spec_module

MoE, Attention = REGISTRY["moe"], REGISTRY["attention"]
H, I, E = 6, 5, 4


def tensors(op):
    return {t.name: tuple(t.shape) for t in op.params()}


PLAIN = {"gate.weight": (E, H), "experts.gate_up_proj": (E, 2 * I, H), "experts.down_proj": (E, H, I)}


@pytest.mark.parametrize("option, changed", [
    ({}, {}),
    ({"router_bias": True}, {"gate.bias": (E,)}),
    ({"bias": True}, {"experts.gate_up_proj_bias": (E, 2 * I), "experts.down_proj_bias": (E, H)}),
    ({"weight_layout": "in_out"}, {"experts.gate_up_proj": (E, H, 2 * I), "experts.down_proj": (E, I, H)}),
    ({"gate_up": "interleaved"}, {}),
    ({"glu": "clamped"}, {}),
    ({"normalize": False}, {}),
    ({"names": ["router", "experts"]}, {"router.weight": (E, H), "gate.weight": None}),
])
def test_each_option_adds_or_reshapes_only_its_tensors(option, changed):
    want = {**PLAIN, **changed}
    want = {k: v for k, v in want.items() if v is not None}
    assert tensors(MoE(hidden=H, intermediate=I, experts=E, top_k=2, **option)) == want


def test_idle_parameters_are_the_unpicked_experts_with_their_biases():
    assert MoE(hidden=H, intermediate=I, experts=E, top_k=1).idle_params() == 3 * (3 * H * I)
    # the biases of an unpicked expert are idle too; the router's are not
    op = MoE(hidden=H, intermediate=I, experts=E, top_k=1, bias=True, router_bias=True)
    assert op.idle_params() == 3 * (3 * H * I + 2 * I + H)


def test_active_parameters_of_a_model_count_one_expert_in_four(tmp_path, cli):
    path = tmp_path / "moe.yaml"
    path.write_text(f"inputs: {{x: [B, S, {H}]}}\nnodes:\n"
                    f"  - {{name: mlp, op: moe, in: x, hidden: {H}, intermediate: {I}, experts: {E}, top_k: 1,"
                    " bias: true, router_bias: true}\n")
    code, out, _ = cli("params", str(path), "--json")
    data = json.loads(out)
    total = E * H + E + E * (3 * H * I + 2 * I + H)
    assert code == 0 and data["total"] == total
    assert data["active"] == total - 3 * (3 * H * I + 2 * I + H)


@pytest.mark.parametrize("option, words", [
    ({"expert_layout": "separate", "bias": True}, "use expert_layout 'fused' with them"),
    ({"expert_layout": "separate", "weight_layout": "in_out"}, "use expert_layout 'fused' with them"),
    ({"glu": "clamped", "activation": "gelu"}, "activation must be 'silu'; received 'gelu'"),
])
def test_options_that_cannot_combine_are_refused(option, words):
    with pytest.raises(SpecError, match=words.replace("(", r"\(")):
        MoE(hidden=H, intermediate=I, experts=E, **option)


MOE_SPEC = """
inputs: {x: [B, S, 6]}
nodes:
  - {name: mlp, op: moe, in: x, hidden: 6, intermediate: 5, experts: 4, top_k: 2, OPTIONS}
"""


@pytest.mark.parametrize("options", [
    "normalize: true",
    "normalize: false, router_bias: true",
    "bias: true",
    "weight_layout: in_out",
    "gate_up: interleaved",
    "glu: clamped, glu_alpha: 1.5, glu_limit: 0.7",
    "bias: true, router_bias: true, weight_layout: in_out, gate_up: interleaved, glu: clamped",
])
def test_the_module_computes_what_the_options_say(tmp_path, options):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, MOE_SPEC.replace("OPTIONS", options), 0.7)
    w = dict(module.state_dict())
    x = torch.randn(2, 3, 6)
    with torch.no_grad():
        got = module(x=x)["mlp"]
    opts = dict(part.split(": ") for part in options.split(", "))
    tokens = x.reshape(-1, 6)
    logits = tokens @ w["mlp.gate.weight"].T + w.get("mlp.gate.bias", 0)
    probs = logits.softmax(-1)
    top, picked = probs.topk(2, dim=-1)
    if opts.get("normalize", "true") == "true":
        top = top / top.sum(-1, keepdim=True)
    alpha, limit = float(opts.get("glu_alpha", 1.702)), float(opts.get("glu_limit", 7.0))
    out = torch.zeros_like(tokens)
    for t in range(tokens.shape[0]):
        for slot in range(2):
            e = picked[t, slot]
            gu, down = w["mlp.experts.gate_up_proj"][e], w["mlp.experts.down_proj"][e]
            if opts.get("weight_layout") != "in_out":
                gu, down = gu.T, down.T
            h = tokens[t] @ gu + (w["mlp.experts.gate_up_proj_bias"][e] if "bias" in opts else 0)
            gate, up = (h[0::2], h[1::2]) if opts.get("gate_up") == "interleaved" else (h[:5], h[5:])
            if opts.get("glu") == "clamped":
                gate, up = gate.clamp(max=limit), up.clamp(-limit, limit)
                h = gate * torch.sigmoid(alpha * gate) * (up + 1)
            else:
                h = torch.nn.functional.silu(gate) * up
            h = h @ down + (w["mlp.experts.down_proj_bias"][e] if "bias" in opts else 0)
            out[t] += top[t, slot] * h
    assert (got - out.reshape(2, 3, 6)).abs().max().item() < 1e-5


def test_sinks_add_one_logit_per_head():
    op = Attention(hidden=32, heads=4, kv_heads=2, sinks=True)
    assert tensors(op)["sinks"] == (4,)
    plain = Attention(hidden=32, heads=4, kv_heads=2)
    assert sum(t.count for t in op.params()) == sum(t.count for t in plain.params()) + 4


ATTN_SPEC = """
inputs: {x: [B, S, 16]}
nodes:
  - {name: attn, op: attention, in: x, hidden: 16, heads: 4, kv_heads: 2, causal: true, window: WINDOW,
     qkv_bias: false, out_bias: false, sinks: true}
"""


def _heads(q, k, v):
    """[2, 5, 16] queries and [2, 5, 8] keys and values as ATTN_SPEC's and CLIP_SPEC's 4 heads of 4,
    each key/value head repeated for its 2 query heads: [2, 4, 5, 4] each."""
    q, k, v = q.view(2, 5, 4, 4).transpose(1, 2), k.view(2, 5, 2, 4).transpose(1, 2), v.view(2, 5, 2, 4).transpose(1, 2)
    return q, k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)


@pytest.mark.parametrize("window", ["null", "2"])
def test_sinks_take_a_share_of_each_softmax_and_read_no_value(tmp_path, window):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, ATTN_SPEC.replace("WINDOW", window), 0.5)
    w = dict(module.state_dict())
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        got = module(x=x)["attn"]
    q, k, v = (x @ w[f"attn.{n}_proj.weight"].T for n in "qkv")
    q, k, v = _heads(q, k, v)
    scores = (q @ k.transpose(-1, -2)) / 2.0
    i, j = torch.arange(5)[:, None], torch.arange(5)[None, :]
    hidden = (j > i) | ((i - j >= int(window)) if window != "null" else False)
    scores = scores.masked_fill(hidden, float("-inf"))
    weights = torch.exp(scores) / (torch.exp(scores).sum(-1, keepdim=True) + torch.exp(w["attn.sinks"]).view(1, 4, 1, 1))
    out = (weights @ v).transpose(1, 2).reshape(2, 5, 16) @ w["attn.o_proj.weight"].T
    assert (got - out).abs().max().item() < 1e-5


V2_SPEC = """
inputs: {x: [B, S, 6]}
nodes:
  - {name: mlp, op: moe, in: x, hidden: 6, intermediate: 5, experts: 8, top_k: TOPK, groups: 4, top_groups: 1,
     group_score: "'max'", normalize: false, scaling: 3.0}
"""


def _routes_as(tmp_path, spec: str, route) -> None:
    """The spec's `mlp` against a token-by-token sum over `route(token, weights)`'s (weight, expert)
    picks, each expert a SiLU-gated MLP."""
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, spec, 0.7)
    w = dict(module.state_dict())
    x = torch.randn(2, 5, 6)
    with torch.no_grad():
        got = module(x=x)["mlp"]
    tokens = x.reshape(-1, 6)
    out = torch.zeros_like(tokens)
    for t in range(tokens.shape[0]):
        for weight, e in route(tokens[t], w):
            gate, up = (w["mlp.experts.gate_up_proj"][e] @ tokens[t]).chunk(2)
            out[t] += weight * (w["mlp.experts.down_proj"][e] @ (torch.nn.functional.silu(gate) * up))
    assert (got - out.reshape(2, 5, 6)).abs().max().item() < 1e-5


@pytest.mark.parametrize("top_k", [2, 3])   # 3: more than the chosen group holds; the third pick weighs 0
def test_group_score_max_routes_as_deepseek_v2s_group_limited_greedy(tmp_path, top_k):
    torch = pytest.importorskip("torch")

    def route(token, w):
        scores = (token @ w["mlp.gate.weight"].T).softmax(-1)
        best = int(scores.view(4, 2).max(-1).values.argmax())     # the group whose best expert is best
        kept = torch.zeros(8)
        kept[2 * best:2 * best + 2] = scores[2 * best:2 * best + 2]   # the others zeroed
        weights, picked = kept.topk(top_k)
        return [(3.0 * weight, e) for weight, e in zip(weights, picked)]   # scaling: 3.0

    _routes_as(tmp_path, V2_SPEC.replace("TOPK", str(top_k)), route)


def test_group_score_is_one_of_two(tmp_path, cli):
    path = tmp_path / "moe.yaml"
    path.write_text(V2_SPEC.replace("TOPK", "2").replace("'max'", "'sum'"))
    code, _, err = cli("params", str(path))
    assert code == 2 and "moe.group_score must be one of top2_sum, max; received 'sum'" in err


MIXER_SPEC = """
inputs: {x: [B, S, 6]}
blocks:
  moe: {spec: lib.moe_sparsemixer, category: mlp}
nodes:
  - {name: mlp, block: moe, in: x, hidden: 6, intermediate: 5, experts: 4, mixer_eps: EPS}
"""


@pytest.mark.parametrize("eps", [0.01, 0.4])   # 0.4: several logits stay in each softmax
def test_sparsemixer_picks_two_experts_each_weighted_by_a_softmax_near_it(tmp_path, eps):
    def route(token, w):
        logits = token @ w["mlp.router.weight"].T
        first = int(logits.argmax())
        second = max((e for e in range(4) if e != first), key=lambda e: logits[e])
        picks = []
        for e, left_out in ((first, ()), (second, (first,))):
            near = [j for j in range(4) if j not in left_out
                    and (logits[e] - logits[j]) / max(abs(logits[j]), logits[e]) <= 2 * eps]
            picks.append((logits[e].exp() / sum(logits[j].exp() for j in near), e))
        return picks

    _routes_as(tmp_path, MIXER_SPEC.replace("EPS", str(eps)), route)


ROWS_SPEC = """
inputs: {x: [B, S, 6]}
nodes:
  - {name: mlp, op: moe, in: x, hidden: 6, intermediate: 5, experts: 4, top_k: 2, expert_layout: "'rows'",
     names: [router.layer, experts.mlp, w1, v1, w2]}
"""


def test_rows_layout_stores_every_experts_rows_in_three_matrices(tmp_path):
    op = MoE(hidden=H, intermediate=I, experts=E, expert_layout="rows", names=("router.layer", "experts.mlp", "w1",
                                                                               "v1", "w2"))
    assert tensors(op) == {"router.layer.weight": (E, H), "experts.mlp.w1": (E * I, H),
                           "experts.mlp.v1": (E * I, H), "experts.mlp.w2": (E * I, H)}
    assert op.idle_params() == (E - 2) * 3 * H * I
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, ROWS_SPEC, 0.7)
    w = dict(module.state_dict())
    x = torch.randn(2, 3, 6)
    with torch.no_grad():
        got = module(x=x)["mlp"]
    tokens = x.reshape(-1, 6)
    top, picked = (tokens @ w["mlp.router.layer.weight"].T).softmax(-1).topk(2, dim=-1)
    top = top / top.sum(-1, keepdim=True)
    out = torch.zeros_like(tokens)
    for t in range(tokens.shape[0]):
        for slot in range(2):
            rows = slice(5 * picked[t, slot], 5 * picked[t, slot] + 5)   # expert e's rows of each matrix
            gate = tokens[t] @ w["mlp.experts.mlp.w1"][rows].T
            up = tokens[t] @ w["mlp.experts.mlp.v1"][rows].T
            out[t] += top[t, slot] * ((torch.nn.functional.silu(gate) * up) @ w["mlp.experts.mlp.w2"][rows])
    assert (got - out.reshape(2, 3, 6)).abs().max().item() < 1e-5


def test_rows_layout_has_no_fused_options():
    with pytest.raises(SpecError, match="use expert_layout 'fused' with them"):
        MoE(hidden=H, intermediate=I, experts=E, expert_layout="rows", bias=True)


CLIP_SPEC = """
inputs: {x: [B, S, 16]}
nodes:
  - {name: attn, op: attention, in: x, hidden: 16, heads: 4, kv_heads: 2, causal: true, qkv_bias: false,
     out_bias: false, clip_qkv: 0.4, QKV}
"""


@pytest.mark.parametrize("qkv", ["qkv: \"'fused'\"", "qkv: \"'separate'\""])
def test_clip_qkv_clamps_the_projections_before_the_heads_are_split(tmp_path, qkv):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, CLIP_SPEC.replace("QKV", qkv), 0.5)
    w = dict(module.state_dict())
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        got = module(x=x)["attn"]
    if "fused" in qkv:
        q, k, v = (x @ w["attn.qkv_proj.weight"].T).clamp(-0.4, 0.4).split([16, 8, 8], dim=-1)
    else:
        q, k, v = ((x @ w[f"attn.{n}_proj.weight"].T).clamp(-0.4, 0.4) for n in "qkv")
    q, k, v = _heads(q, k, v)
    scores = ((q @ k.transpose(-1, -2)) / 2.0).masked_fill(torch.ones(5, 5).triu(1).bool(), float("-inf"))
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(2, 5, 16) @ w["attn.o_proj.weight"].T
    assert (got - out).abs().max().item() < 1e-5
    assert (x @ w[f"attn.{'qkv' if 'fused' in qkv else 'q'}_proj.weight"].T).abs().max() > 0.4   # the clamp bites


def test_clip_qkv_must_be_positive():
    with pytest.raises(SpecError, match="clip_qkv must be positive"):
        Attention(hidden=16, heads=4, clip_qkv=0.0)
