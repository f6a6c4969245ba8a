"""The fixed-state ops (archgraph/ops/recurrent.py) on their own: causal_conv1d, rg_lru and
mamba2_mixer compute what their definitions say (written out here token by token, and, slow,
what transformers' own RecurrentGemmaRglru and Mamba2Mixer compute with the same tensors)."""
from __future__ import annotations

import json
import math

import pytest
import torch

import archgraph
from archgraph.load import load_config
from archgraph.torch import to_module


def _module(tmp_path, node: str, width: int):
    spec = tmp_path / "op.yaml"
    spec.write_text(f"name: one\ninputs:\n  x: [B, S, {width}]\nnodes:\n  - {node}\n")
    module = to_module(archgraph.load(spec)).eval()
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0, 0.5)
    return module


def _tensors(module) -> dict:
    return {name.split(".", 1)[1]: t for name, t in module.state_dict().items()}


def test_causal_conv1d_sees_only_the_last_k_inputs(tmp_path):
    module = _module(tmp_path, "{name: conv, op: causal_conv1d, in: x, channels: 3, kernel_size: 4}", 3)
    w, b = _tensors(module)["weight"], _tensors(module)["bias"]
    x = torch.randn(2, 6, 3)
    with torch.no_grad():
        got = next(iter(module(x=x).values()))
    want = torch.stack([b + sum(w[:, 0, 3 - j] * x[:, t - j] for j in range(4) if t - j >= 0) for t in range(6)], 1)
    assert (got - want).abs().max().item() < 1e-5


def test_rg_lru_follows_griffins_recurrence(tmp_path):
    module = _module(tmp_path, "{name: lru, op: rg_lru, in: x, width: 6, heads: 2}", 6)
    p = _tensors(module)
    x = torch.randn(2, 5, 6)
    with torch.no_grad():
        got = next(iter(module(x=x).values()))
    h = torch.zeros(2, 6)
    for t in range(5):
        blocks = x[:, t].view(2, 2, 3)
        i = torch.sigmoid(torch.einsum("bhi,hij->bhj", blocks, p["input_gate_weight"]) + p["input_gate_bias"])
        r = torch.sigmoid(torch.einsum("bhi,hij->bhj", blocks, p["recurrent_gate_weight"]) + p["recurrent_gate_bias"])
        a = torch.exp(-8.0 * r.reshape(2, 6) * torch.nn.functional.softplus(p["recurrent_param"]))
        scale = torch.ones_like(a) if t == 0 else torch.sqrt(1 - a ** 2)
        h = (a * h if t else 0) + scale * i.reshape(2, 6) * x[:, t]
        assert (got[:, t] - h).abs().max().item() < 1e-5


def test_mamba2_mixer_follows_its_recurrence(tmp_path):
    hd, nh, g, n, k = 3, 4, 2, 5, 3
    module = _module(tmp_path, f"{{name: m, op: mamba2_mixer, in: x, hidden: 6, heads: {nh}, head_dim: {hd}, "
                               f"state: {n}, groups: {g}, conv_kernel: {k}, eps: 1.0e-5}}", 6)
    p = _tensors(module)
    x = torch.randn(1, 4, 6)
    with torch.no_grad():
        got = next(iter(module(x=x).values()))
    i = nh * hd
    z, xbc, dt = (x @ p["in_proj.weight"].T).split([i, i + 2 * g * n, nh], -1)
    conv = torch.stack([p["conv1d.bias"] + sum(p["conv1d.weight"][:, 0, k - 1 - j] * xbc[:, t - j]
                                               for j in range(k) if t - j >= 0) for t in range(4)], 1)
    xs, bs, cs = torch.nn.functional.silu(conv).split([i, g * n, g * n], -1)
    dt = torch.nn.functional.softplus(dt + p["dt_bias"])
    h = torch.zeros(nh, hd, n)
    for t in range(4):
        y = torch.zeros(nh, hd)
        for head in range(nh):
            grp = head // (nh // g)
            b_, c_ = bs[0, t, grp * n:(grp + 1) * n], cs[0, t, grp * n:(grp + 1) * n]
            xh = xs[0, t, head * hd:(head + 1) * hd]
            h[head] = math.exp(dt[0, t, head] * -math.exp(p["A_log"][head])) * h[head] + \
                dt[0, t, head] * torch.outer(xh, b_)
            y[head] = h[head] @ c_ + p["D"][head] * xh
        gated = (y.reshape(i) * torch.nn.functional.silu(z[0, t])).view(g, i // g)
        normed = (gated * torch.rsqrt(gated.pow(2).mean(-1, keepdim=True) + 1e-5)).reshape(i) * p["norm.weight"]
        assert (got[0, t] - normed @ p["out_proj.weight"].T).abs().max().item() < 1e-4


@pytest.mark.slow
def test_rg_lru_and_mamba2_mixer_compute_what_transformers_computes(tmp_path):
    transformers = pytest.importorskip("transformers")
    from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer
    from transformers.models.recurrent_gemma.modeling_recurrent_gemma import (
        RecurrentGemmaRglru,
    )
    cfg = transformers.RecurrentGemmaConfig(hidden_size=8, lru_width=12, num_attention_heads=3)
    reference = RecurrentGemmaRglru(cfg)
    module = _module(tmp_path, "{name: lru, op: rg_lru, in: x, width: 12, heads: 3}", 12)
    reference.load_state_dict(_tensors(module))
    x = torch.randn(2, 7, 12)
    with torch.no_grad():
        assert (next(iter(module(x=x).values())) - reference(x, torch.arange(7)[None])).abs().max() < 1e-5
    cfg = transformers.Mamba2Config(hidden_size=8, num_heads=4, head_dim=4, state_size=3, n_groups=2, chunk_size=3,
                                    num_hidden_layers=1)
    reference = Mamba2Mixer(cfg, layer_idx=0).eval()
    module = _module(tmp_path, "{name: m, op: mamba2_mixer, in: x, hidden: 8, heads: 4, head_dim: 4, state: 3, "
                               "groups: 2, eps: 1.0e-5}", 8)
    reference.load_state_dict(_tensors(module))
    x = torch.randn(2, 7, 8)
    with torch.no_grad():
        assert (next(iter(module(x=x).values())) - reference(x)).abs().max() < 1e-4


def test_memory_reports_mamba2_layers_fixed_state(tmp_path, cli):
    config = tmp_path / "mamba2.json"
    config.write_text(json.dumps({"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], "vocab_size": 97,
                                  "hidden_size": 32, "num_hidden_layers": 3, "num_heads": 8, "head_dim": 8,
                                  "state_size": 16, "n_groups": 2}))
    _, out, _ = cli("memory", str(config), "--json", "--dtype", "fp32", "--set", "B=2", "--set", "S=1000")
    doc = json.loads(out)
    # per layer: the conv over 64 + 2·2·16 = 128 channels keeps its last 4 inputs; the state 8 heads x 8 x 16
    assert [(e["rule"], e["state_values"], e["bytes"]) for e in doc["kv_cache"]] == \
        [("state-space (Mamba-2)", 128 * 4 + 64 * 16, 2 * 3 * 1536 * 4)]
    assert doc["state_cache_bytes"] == 2 * 3 * 1536 * 4 and doc["kv_cache_bytes"] == 0


def test_memory_reports_griffins_recurrent_states_and_local_attention_windows(tmp_path, cli):
    config = tmp_path / "griffin.json"
    config.write_text(json.dumps({"model_type": "recurrent_gemma", "architectures": ["RecurrentGemmaModel"],
                                  "vocab_size": 97, "hidden_size": 32, "num_hidden_layers": 3, "lru_width": 24,
                                  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 40,
                                  "attention_window_size": 16}))
    for s, window in ((1000, 16), (10, 10)):  # local attention keeps min(S, window) tokens
        _, out, _ = cli("memory", str(config), "--json", "--dtype", "fp32", "--set", "B=1", "--set", f"S={s}")
        rows = [(e["path"], e["rule"], e["state_values"], e["values_per_token"], e["context"])
                for e in json.loads(out)["kv_cache"]]
        assert rows == [("layers.0.temporal_block.conv_1d", "convolution window of 3", 24 * 3, 0, 0),
                        ("layers.0.temporal_block.rg_lru", "recurrent state (RG-LRU)", 24, 0, 0),
                        ("layers.2.temporal_block", "sliding window of 16", 0, 2 * 2 * 8, window)]


def test_the_embedding_scale_is_sqrt_hidden_in_a_bfloat16_scalar_buffer(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "recurrent_gemma", "architectures": ["RecurrentGemmaModel"],
                                "vocab_size": 11, "hidden_size": 32, "num_hidden_layers": 1, "block_types": ["recurrent"],
                                "num_attention_heads": 4, "intermediate_size": 4}))
    model = load_config(path)
    assert [(path, row.shape, row.persistent) for path, _, _, rows in model.params().nodes() for row in rows
            if row.buffer and "rotary" not in path] == [("normalizer", (), False)]
    module = to_module(model).eval()
    assert "normalizer" not in module.state_dict()  # persistent: false, as transformers registers it
    with torch.no_grad():
        module(input_ids=torch.tensor([[1, 2]]))
    assert module.tensor("normalizer").item() == 5.65625  # sqrt(32) = 5.65685... held in bfloat16


def test_recurrent_gemma_refuses_a_rope_type_transformers_cannot_build_by_its_key(tmp_path, cli):
    config = {"model_type": "recurrent_gemma", "vocab_size": 11, "hidden_size": 32, "num_hidden_layers": 3,
              "num_attention_heads": 4, "intermediate_size": 4}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "rope_parameters": {"rope_type": "default", "rope_theta": 500.0}}))
    assert cli("params", str(path))[0] == 0
    path.write_text(json.dumps({**config, "rope_parameters": {"rope_type": "linear", "factor": 2.0}}))
    code, _, err = cli("params", str(path))
    assert code == 2 and "'rope_parameters.rope_type' is \"linear\", which archgraph does not know for " \
                         "model_type 'recurrent_gemma'" in err


def test_a_convolution_cache_keeps_at_least_what_the_next_output_needs(tmp_path):
    from archgraph.passes.memory import estimate_memory
    spec = tmp_path / "conv.yaml"
    for window, kept in (("", 3), (", cache_window: 4", 4), (", cache_window: 6", 6)):
        spec.write_text("name: one\ninputs:\n  x: [B, S, 5]\nnodes:\n"
                        f"  - {{name: conv, op: causal_conv1d, in: x, channels: 5, kernel_size: 4{window}}}\n")
        [entry] = estimate_memory(archgraph.load(spec), {"B": 1, "S": 9}).kv_cache
        assert (entry.rule, entry.state) == (f"convolution window of {kept}", 5 * kept)
    spec.write_text("name: one\ninputs:\n  x: [B, S, 5]\nnodes:\n"
                    "  - {name: conv, op: causal_conv1d, in: x, channels: 5, kernel_size: 4, cache_window: 2}\n")
    with pytest.raises(archgraph.SpecError, match=r"cache_window=2 keeps fewer inputs than the next output needs "
                                                  r"\(kernel_size - 1 = 3\)"):
        archgraph.load(spec)


@pytest.mark.slow
@pytest.mark.parametrize("name, kept", [("lfm2-causal", 3), ("qwen3_next-causal", 3), ("recurrent_gemma-causal", 3)])
def test_memory_keeps_the_convolution_inputs_transformers_cache_keeps(tmp_path, name, kept):
    """After a prefill transformers' LinearAttentionLayer holds the last kernel_size inputs of each channel
    (LFM2's conv_L_cache 3, the Qwen3-Next case's linear_conv_kernel_dim 3: `cache_window: K`),
    RecurrentGemma's conv1d_state kernel_size - 1 (conv1d_width 4): `memory` counts what each keeps."""
    import test_torch_hf as cases

    from archgraph.passes.memory import estimate_memory
    config = cases.CASES[name]
    reference = cases._hf_model(config)
    with torch.no_grad():
        out = reference(input_ids=torch.randint(0, 97, (1, 7)), use_cache=True)
    cache = getattr(out, "past_key_values", None)
    states = [s for layer in getattr(cache, "layers", []) for s in (getattr(layer, "conv_states", None) or {}).values()
              if s is not None] + [m.conv1d_state for m in reference.modules() if getattr(m, "conv1d_state", None) is not None]
    assert {s.shape[-1] for s in states} == {kept}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    report = estimate_memory(load_config(path), {"B": 1, "S": 7})
    windows = [e for e in report.kv_cache if e.rule.startswith("convolution window")]
    assert {e.rule for e in windows} == {f"convolution window of {kept}"}
    assert sum(e.layers for e in windows) == len(states)
    assert sum(e.state * e.layers for e in windows) == sum(s.shape[1] * s.shape[2] for s in states)
