"""State-space mixers on their own: `mamba_mixer`'s forward is Mamba's recurrence as its paper
writes it (checked against a loop over tokens, channels and states written from the equations),
its cache is a fixed state per sequence, and the Mamba families' memory and compare reports say so."""
from __future__ import annotations

import json

import pytest
from rich.console import Console

from archgraph import load
from archgraph.load import load_config
from archgraph.ops import REGISTRY
from archgraph.passes.compare import compare
from archgraph.passes.memory import estimate_memory
from archgraph.render.compare import compare_table

MAMBA_130M = {"model_type": "mamba", "architectures": ["MambaForCausalLM"], "hidden_size": 768,
              "num_hidden_layers": 24, "vocab_size": 50280, "state_size": 16, "expand": 2, "conv_kernel": 4,
              "time_step_rank": 48, "intermediate_size": 1536, "tie_word_embeddings": True}


def _load(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return load_config(path)


def test_mamba_130m_counts_its_published_parameters(tmp_path):
    assert _load(tmp_path, MAMBA_130M).params().total == 129_135_360


def test_falcon_mamba_7b_keeps_its_intermediate_size_over_expand(tmp_path):
    # its config says expand 16 and intermediate_size 8192; transformers keeps the latter
    config = {**MAMBA_130M, "model_type": "falcon_mamba", "architectures": ["FalconMambaForCausalLM"],
              "hidden_size": 4096, "num_hidden_layers": 64, "vocab_size": 65024, "expand": 16,
              "intermediate_size": 8192, "time_step_rank": 256, "tie_word_embeddings": False}
    model = _load(tmp_path, config)
    assert model.params().total == 7_272_665_088  # FalconMambaForCausalLM(config), transformers 5.23.0
    assert estimate_memory(model, {"B": 1, "S": 8192}).state_cache_bytes == 64 * 8192 * (4 + 16) * 2


def test_a_mamba_layer_caches_its_conv_and_ssm_states_and_no_keys_or_values(tmp_path):
    m = estimate_memory(_load(tmp_path, MAMBA_130M), {"B": 3, "S": 4096}, dtype="fp32")
    (entry,) = m.kv_cache
    assert (entry.path, entry.layers, entry.rule) == ("backbone.layers.0.mixer", 24, "state space (conv + SSM state)")
    assert entry.state == 1536 * 4 + 1536 * 16 and entry.width == 0
    assert m.state_cache_bytes == 3 * 24 * (1536 * 4 + 1536 * 16) * 4  # the same at any S
    assert m.kv_cache_bytes == 0


def test_time_step_rank_auto_is_a_sixteenth_of_hidden_rounded_up(tmp_path):
    config = {**MAMBA_130M, "hidden_size": 40, "time_step_rank": "auto", "num_hidden_layers": 1}
    del config["intermediate_size"]
    shapes = {name: row.shape for name, row in _load(tmp_path, config).params().tensors()}
    assert shapes["backbone.layers.0.mixer.dt_proj.weight"] == (80, 3)
    assert shapes["backbone.layers.0.mixer.x_proj.weight"] == (3 + 2 * 16, 80)


def _naive_mixer(torch, F, p, x, norm):
    """Mamba's mixer from its equations, one token, channel and state at a time."""
    b, s, _ = x.shape
    i, n = p["A_log"].shape
    r = p["dt_proj.weight"].shape[1]
    xz = x @ p["in_proj.weight"].T
    u, z = xz[..., :i], xz[..., i:]
    k = p["conv1d.weight"].shape[-1]
    conv = torch.zeros(b, s, i)
    for t in range(s):  # causal depthwise convolution: tap j reads token t - (k - 1 - j)
        for j in range(k):
            if t - (k - 1 - j) >= 0:
                conv[:, t] += p["conv1d.weight"][:, 0, j] * u[:, t - (k - 1 - j)]
    u = F.silu(conv + p["conv1d.bias"])
    dt, bb, cc = (u @ p["x_proj.weight"].T).split([r, n, n], dim=-1)
    if norm:
        dt, bb, cc = (norm(t, name) for t, name in ((dt, "dt"), (bb, "b"), (cc, "c")))
    dt = F.softplus(dt @ p["dt_proj.weight"].T + p["dt_proj.bias"])
    a = -torch.exp(p["A_log"])
    y = torch.zeros(b, s, i)
    for batch in range(b):
        for c in range(i):
            h = torch.zeros(n)
            for t in range(s):
                h = torch.exp(dt[batch, t, c] * a[c]) * h + dt[batch, t, c] * bb[batch, t] * u[batch, t, c]
                y[batch, t, c] = (h * cc[batch, t]).sum() + p["D"][c] * u[batch, t, c]
    return (y * F.silu(z)) @ p["out_proj.weight"].T


@pytest.mark.parametrize("bcdt_norm", ["none", "weightless", "weighted"])
def test_mamba_mixer_forward_is_the_selective_scan_of_the_paper(bcdt_norm):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    from archgraph.torch import Run

    op = REGISTRY["mamba_mixer"].build({"hidden": 6, "intermediate": 5, "state_size": 3, "conv_kernel": 3,
                                        "dt_rank": 2, "bcdt_norm": bcdt_norm, "norm_eps": 1e-3})
    torch.manual_seed(0)
    p = {t.name: torch.randn(t.shape) * (0.5 if len(t.shape) == 1 else 0.4) for t in op.params()}
    p.update({t.name: torch.ones(t.shape) for t in op.buffers()})
    x = torch.randn(2, 5, 6)

    def norm(t, name):
        h = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-3)
        return h * p[f"{name}_layernorm.weight"] if bcdt_norm == "weighted" else h

    class Tensors:  # what a module gives an op's forward: its tensors by name
        tensor = staticmethod(p.__getitem__)

    run = Run(torch, F, False, Tensors(), "", None)
    got = op.forward(run, x)
    want = _naive_mixer(torch, F, p, x, norm if bcdt_norm != "none" else None)
    assert got.shape == (2, 5, 6)
    assert (got - want).abs().max().item() < 1e-5


def test_falcon_mamba_registers_the_unused_norm_weights_as_transformers_does(tmp_path):
    config = {"model_type": "falcon_mamba", "architectures": ["FalconMambaModel"], "hidden_size": 24,
              "num_hidden_layers": 1, "vocab_size": 61, "state_size": 9, "expand": 3}
    report = _load(tmp_path, config).params()
    assert report.totals.buffers == 72 + 9 + 9  # dt's of width intermediate (3 x 24), B's and C's
    names = {name for name, _ in report.tensors()}
    assert "layers.0.mixer.dt_layernorm.weight" not in names  # not parameters


JAMBA_V01 = {"model_type": "jamba", "architectures": ["JambaForCausalLM"], "hidden_size": 4096,
             "num_hidden_layers": 32, "vocab_size": 65536, "num_attention_heads": 32, "num_key_value_heads": 8,
             "intermediate_size": 14336, "num_experts": 16, "num_experts_per_tok": 2, "attn_layer_period": 8,
             "attn_layer_offset": 4, "expert_layer_period": 2, "expert_layer_offset": 1, "mamba_d_state": 16,
             "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256, "tie_word_embeddings": False}


def test_jamba_v01_counts_what_transformers_builds_and_the_parameters_a_token_uses(tmp_path):
    report = _load(tmp_path, JAMBA_V01).params()
    assert report.total == 51_570_323_328  # JambaForCausalLM(config) on the meta device, transformers 5.23.0
    # 16 MoE layers, each with 14 of its 16 experts idle for a token: 3 matrices of 4096 x 14336 per expert
    assert report.totals.active == 51_570_323_328 - 16 * 14 * 3 * 4096 * 14336 == 12_110_311_296


def test_jamba_caches_keys_and_values_in_its_attention_layers_and_a_state_in_its_mamba_layers(tmp_path):
    m = estimate_memory(_load(tmp_path, JAMBA_V01), {"B": 1, "S": 262144}, dtype="bf16")
    rules = {e.path.split(".")[2]: e.rule for e in m.kv_cache}
    assert [int(i) for i, rule in rules.items() if rule == "full attention"] == [4, 12, 20, 28]
    assert sum(rule == "state space (conv + SSM state)" for rule in rules.values()) == 28
    assert m.kv_cache_bytes == 4 * 2 * 8 * 128 * 262144 * 2 == 4 * 2 ** 30  # 4 GiB at 256K tokens
    assert m.state_cache_bytes == 28 * 8192 * (4 + 16) * 2


def test_compare_counts_the_layers_of_a_schedule_and_shows_the_state_caches(tmp_path):
    paths = []
    for name, config in (("mamba", MAMBA_130M), ("jamba", JAMBA_V01)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
        paths.append(str(tmp_path / name / "config.json"))
    mamba, jamba = compare(paths, {"S": 4096}, load=load)
    assert [(s.path, s.layers, s.does) for s in mamba.stacks] == [("backbone.layers", 24, ("state-space",))]
    # Jamba's schedule: attention at 4, 12, 20, 28; experts at every odd layer; Mamba elsewhere
    assert [(s.path, s.layers, s.does) for s in jamba.stacks] == [
        ("model.layers.0,2,6,…,30", 12, ("state-space",)),
        ("model.layers.1,3..31", 16, ("state-space", "MoE 16 experts top 2")),
        ("model.layers.4,12..28", 4, ("causal",))]
    assert (mamba.memory.kv_cache_bytes, mamba.memory.state_cache_bytes) == (0, 24 * 1536 * (4 + 16) * 2)
    assert (jamba.memory.kv_cache_bytes, jamba.memory.state_cache_bytes) == \
        (4 * 2 * 8 * 128 * 4096 * 2, 28 * 8192 * 20 * 2)
    console = Console(width=200, record=True)
    console.print(compare_table([mamba, jamba]))
    text = console.export_text()
    assert "state cache" in text and "1.41 MiB" in text
