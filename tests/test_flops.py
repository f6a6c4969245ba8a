"""Forward FLOPs against independent hand formulas: 2 x (non-embedding matmul parameters) x tokens
plus the attention score/value matmuls, plus the few FLOPs per element of norms, activations and adds."""
from __future__ import annotations

import json


import archgraph
from archgraph.dims import subs, symbol
from archgraph.passes.flops import count_flops


def _matmul_params(report) -> int:
    """Non-embedding parameters that multiply activations: weights of linear layers, attention and MLPs
    (no biases, no norm scales), with a tied head counted (its matmul runs)."""
    total = 0
    for path, node, _, rows in report.nodes():
        if node.category in ("embedding", "norm"):
            continue
        total += sum(r.count for r in rows if not r.buffer and r.name.endswith("weight"))
    return total


def test_gpt2_forward_flops_by_hand():
    b, s = 2, 128
    model = archgraph.load("gpt2")
    r = count_flops(model, {"B": b, "S": s})
    V, H, L, t = 50257, 768, 12, b * s
    n_matmul = L * 12 * H * H + V * H  # c_attn 3H², c_proj H², c_fc 4H², c_proj 4H²; tied lm_head V·H
    assert _matmul_params(model.params()) == n_matmul
    non_embedding = 124_439_808 - (V * H + 1024 * H)
    assert n_matmul == non_embedding - L * (13 * H) - 2 * H + V * H  # minus biases and norms, plus the head
    attention = L * 2 * (2 * b * s * s * H)  # q·kᵀ and probs·v per layer, all 12 heads
    elementwise = (t * H  # embedding sum
                   + L * (2 * 5 * t * H + 8 * 4 * H * t + 2 * t * H)  # two layer norms, tanh-gelu, two adds
                   + 5 * t * H)  # ln_f
    assert r.forward == 2 * n_matmul * t + attention + elementwise
    assert r.forward == 64_561_348_608
    assert r.per_token == r.forward // t
    assert r.training == 3 * r.forward
    assert r.by_category["head"] == 2 * t * H * V  # the tied head's FLOPs are kept


def test_llama_2_7b_forward_flops_by_hand():
    b, s = 1, 2048
    model = archgraph.load("llama-2-7b")
    r = count_flops(model, {"B": b, "S": s})
    V, H, L, A, I, t = 32000, 4096, 32, 32, 11008, b * s
    n_matmul = L * (4 * H * H + 3 * H * I) + V * H  # q, k, v, o; gate, up, down; lm_head
    assert _matmul_params(model.params()) == n_matmul
    assert n_matmul == 6_738_415_616 - V * H - (2 * L + 1) * H  # non-embedding minus RMSNorm scales
    attention = L * 2 * (2 * b * A * s * s * (H // A))
    elementwise = L * (2 * 4 * t * H + 2 * t * H) + 4 * t * H  # two RMSNorms and two adds per layer; final norm
    assert r.forward == 2 * n_matmul * t + attention + elementwise


def test_symbolic_sizes_give_a_formula_that_agrees():
    r = count_flops(archgraph.load("gpt2"))
    assert subs(r.forward, {"B": 2, "S": 128}) == 64_561_348_608
    B, S = symbol("B"), symbol("S")
    linear = subs(r.forward, {"S": 1}) * S  # every term holds S at least once
    assert r.forward - linear == 12 * 2 * 2 * 768 * B * (S * S - S)  # the quadratic attention term


def test_per_node_list_expands_repetitions_and_sums_to_the_total(cli):
    code, out, err = cli("flops", "gpt2", "--set", "B=1", "--set", "S=64", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert sum(n["flops"] for n in data["nodes"]) == data["forward_flops"]
    by_path = {n["path"]: n for n in data["nodes"]}
    assert by_path["transformer.h.11.attn.core"] == {"path": "transformer.h.11.attn.core", "op": "sdpa",
                                                     "flops": 2 * 2 * 64 * 64 * 768}
    assert by_path["lm_head"]["flops"] == 2 * 64 * 768 * 50257
    assert data["training_flops"] == 3 * data["forward_flops"]
    assert data["forward_flops_per_token"] * 64 == data["forward_flops"]
    assert len(data["nodes"]) == sum(1 for _ in archgraph.load("gpt2").params().nodes())


def test_cli_table_and_symbolic(cli):
    code, out, _ = cli("flops", "llama-2-7b", "--set", "B=1", "--set", "S=2048")
    assert code == 0
    assert "model.layers.0..31.self_attn.core  × 32" in out and "Training ≈ 3 × forward" in out  # all 32, named so
    code, out, _ = cli("flops", "gpt2", "--json")
    assert json.loads(out)["forward_flops"] == "36864*B*S**2 + 247474176*B*S"


def test_bad_size_is_an_error(cli):
    code, _, err = cli("flops", "gpt2", "--set", "S=2048")
    assert code == 2 and "exceeds the 1024 positions" in err


def _attention_core(tmp_path, options: str, s: int, causal: str = "true"):
    """The score and value matmuls of one attention node (its projections' FLOPs taken out)."""
    spec = tmp_path / "attn.yaml"
    spec.write_text("name: one\ninputs:\n  x: [B, S, 32]\nnodes:\n"
                    f"  - {{name: attn, op: attention, in: x, hidden: 32, heads: 4, causal: {causal}{options}}}\n")
    forward = count_flops(archgraph.load(spec), {"B": 2, "S": s}).forward
    return forward - 4 * 2 * 2 * s * 32 * 32


def test_a_window_or_a_chunk_caps_the_keys_a_query_scores(tmp_path):
    """A sliding window lets a query see its last `window` keys, a window on both sides 2·window - 1, a
    chunk the keys of its chunk: FLOPs count those, not all S (q·kᵀ and probs·v, 2·2·d per pair and head)."""
    per_pair = 2 * 2 * 2 * 32   # both matmuls, batch 2, 4 heads of 8
    assert _attention_core(tmp_path, "", 100) == per_pair * 100 * 100
    assert _attention_core(tmp_path, ", window: 16", 100) == per_pair * 100 * 16
    assert _attention_core(tmp_path, ", window: 16", 10) == per_pair * 10 * 10
    assert _attention_core(tmp_path, ", window: 16, window_side: both", 100, "false") == per_pair * 100 * 31
    assert _attention_core(tmp_path, ", chunk: 8", 100) == per_pair * 100 * 8
    _attention_core(tmp_path, ", window: 16", 100)   # a symbolic length keeps the cap: min(16, S) keys a query
    model = archgraph.load(tmp_path / "attn.yaml")
    for s in (10, 100):
        assert subs(count_flops(model, {"B": 2}).forward, {"S": s}) == count_flops(model, {"B": 2, "S": s}).forward


def test_per_token_flops_of_a_sliding_window_stop_growing_at_the_window(tmp_path):
    spec = tmp_path / "attn.yaml"
    spec.write_text("name: one\ninputs:\n  x: [B, S, 32]\nnodes:\n"
                    "  - {name: attn, op: attention, in: x, hidden: 32, heads: 4, causal: true, window: 16}\n")
    model = archgraph.load(spec)   # a token's: its four projections and its scores over at most 16 keys
    at = {s: count_flops(model, {"B": 1, "S": s}).forward // s for s in (16, 64, 4096)}
    assert at[16] == at[64] == at[4096] == 4 * 2 * 32 * 32 + 2 * 2 * 32 * 16
