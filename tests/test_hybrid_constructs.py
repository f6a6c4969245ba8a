"""The constructs the Mamba-2 / attention hybrids added (issue 29), each on its own: gated_mlp's
gate_multiplier (a factor inside the activation, Falcon-H1's mlp_multipliers[0]), mamba2_mixer's
multipliers of in_proj's output (Falcon-H1's mup_vector) and its norm placements (gate then norm,
norm then gate, no norm), against rescaled weights and, slow, transformers' FalconH1Mixer."""
from __future__ import annotations

import json

import pytest
import torch

from test_recurrent_ops import _module, _tensors   # a one-node spec as a module, its tensors by local name


def _run(module, x):
    with torch.no_grad():
        return next(iter(module(x=x).values()))


def test_gate_multiplier_scales_the_gate_inside_the_activation(tmp_path):
    scaled = _module(tmp_path, "{name: f, op: gated_mlp, in: x, hidden: 6, intermediate: 5, gate_multiplier: 2.5}", 6)
    tensors = _tensors(scaled)
    plain = _module(tmp_path, "{name: f, op: gated_mlp, in: x, hidden: 6, intermediate: 5}", 6)
    plain.load_state_dict({f"f.{k}": v * 2.5 if k == "gate_proj.weight" else v for k, v in tensors.items()})
    x = torch.randn(2, 3, 6)
    assert (_run(scaled, x) - _run(plain, x)).abs().max().item() < 1e-5
    assert _run(scaled, x).abs().max().item() > 1e-3   # an output that is not zero: the check above can fail


MIXER = "{name: m, op: mamba2_mixer, in: x, hidden: 6, heads: 4, head_dim: 3, state: 5, groups: 2, conv_kernel: 3"


def test_mixer_multipliers_scale_each_part_of_in_proj(tmp_path):
    """mup_vector's z, x, B, C and dt parts (12, 12, 10, 10, 4 values) are in_proj's rows scaled."""
    factors = [0.5, 2.0, 3.0, 0.25, 1.5]
    with_mup = _module(tmp_path, MIXER + f", multipliers: {factors}}}", 6)
    plain = _module(tmp_path, MIXER + "}", 6)
    assert "m.mup_vector" not in with_mup.state_dict()   # a non-persistent buffer, as transformers registers it
    rows = torch.cat([torch.full((n,), f) for n, f in zip([12, 12, 10, 10, 4], factors)])
    assert torch.equal(dict(with_mup.named_buffers())["m.mup_vector"], rows.view(1, 1, 48))
    tensors = _tensors(with_mup)
    plain.load_state_dict({f"m.{k}": v * rows[:, None] if k == "in_proj.weight" else v for k, v in tensors.items()})
    x = torch.randn(2, 5, 6)
    assert (_run(with_mup, x) - _run(plain, x)).abs().max().item() < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("rms_norm, before_gate, norm", [(False, True, "none"), (True, True, "gate_after"),
                                                          (True, False, "gated")])
def test_mixer_norm_placements_compute_what_falcon_h1_computes(tmp_path, rms_norm, before_gate, norm):
    transformers = pytest.importorskip("transformers")
    from transformers.models.falcon_h1.modeling_falcon_h1 import FalconH1Mixer, compute_mup_vector
    factors = [0.5, 2.0, 3.0, 0.25, 1.5]
    cfg = transformers.FalconH1Config(hidden_size=6, mamba_d_ssm=12, mamba_n_heads=4, mamba_d_state=5,
                                      mamba_n_groups=2, mamba_d_conv=3, mamba_chunk_size=3, num_hidden_layers=1,
                                      num_attention_heads=2, mamba_rms_norm=rms_norm,
                                      mamba_norm_before_gate=before_gate, projectors_bias=True,
                                      ssm_multipliers=factors)
    reference = FalconH1Mixer(cfg, layer_idx=0).eval()
    reference.register_buffer("mup_vector", compute_mup_vector(cfg), persistent=False)
    module = _module(tmp_path, MIXER + f", norm: {norm}, out_bias: true, multipliers: {factors}, eps: 1.0e-5}}", 6)
    reference.load_state_dict(_tensors(module), strict=True)
    x = torch.randn(2, 7, 6)
    with torch.no_grad():
        assert (_run(module, x) - reference(x)).abs().max().item() < 1e-4


# ---- the hybrids' key tables: what transformers builds but cannot run is refused by name (exit 2)
TINY_FALCON_H1 = {"model_type": "falcon_h1", "architectures": ["FalconH1ForCausalLM"], "hidden_size": 16,
                  "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 8,
                  "vocab_size": 20, "mamba_d_ssm": 16, "mamba_n_heads": 4, "mamba_d_state": 4}
TINY_GMH = {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"], "hidden_size": 16,
            "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 20,
            "mamba_n_heads": 4, "mamba_d_state": 4, "layer_types": ["mamba", "attention"],
            "position_embedding_type": "rope"}


@pytest.mark.parametrize("config, family", [(TINY_FALCON_H1, "Falcon-H1"), (TINY_GMH, "GraniteMoeHybrid")])
def test_partial_rotary_with_a_rope_type_is_refused(tmp_path, cli, config, family):
    from conftest import write_config
    rope = {"rope_type": "linear", "factor": 2.0, "rope_theta": 100.0}
    code, _, err = cli("params", write_config(tmp_path, **config, rope_parameters={**rope, "partial_rotary_factor": 0.5}))
    assert code == 2 and f"partial_rotary_factor with a rope_type: transformers' {family} builds a table" in err, err
    # the default rope type ignores the factor (whole heads of 8 rotate: inv_freq and its original copy hold
    # 4 frequencies each), and so does archgraph; Falcon-H1 keeps its mixer's mup_vector too (in_proj: 44 wide)
    code, out, _ = cli("params", write_config(tmp_path, **config, partial_rotary_factor=0.5), "--json")
    assert code == 0 and json.loads(out)["buffers"] == 2 * 4 + (44 if family == "Falcon-H1" else 0), out


TINY_ZAMBA2 = {"model_type": "zamba2", "architectures": ["Zamba2ForCausalLM"], "hidden_size": 16,
               "num_hidden_layers": 4, "num_attention_heads": 2, "vocab_size": 20, "n_mamba_heads": 2,
               "mamba_d_state": 4, "adapter_rank": 2, "num_mem_blocks": 1, "use_mem_rope": True,
               "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"]}


def test_zamba2_hybrid_layer_ids_must_match_the_layer_kinds(tmp_path, cli):
    from conftest import write_config
    # a saved config's own list is read, and agrees
    code, out, _ = cli("params", write_config(tmp_path, **TINY_ZAMBA2, hybrid_layer_ids=[1, 3]), "--json")
    assert code == 0 and json.loads(out)["total"] == json.loads(cli("params", write_config(
        tmp_path, **TINY_ZAMBA2), "--json")[1])["total"]
    # transformers reads hybrid_layer_ids over layers_block_type (and maps adapters through it): refused by name
    code, _, err = cli("params", write_config(tmp_path, **TINY_ZAMBA2, hybrid_layer_ids=[3, 1]))
    assert code == 2 and "hybrid_layer_ids must list the 'hybrid' layers of layers_block_type, in order" in err, err


def test_zamba2_use_long_context_sets_the_rotary_range_to_16384(tmp_path):
    import archgraph
    from conftest import write_config
    # dynamic scaling's threshold is max_position_embeddings, which use_long_context replaces by 16384
    rope = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    config = {**TINY_ZAMBA2, "max_position_embeddings": 64, "rope_parameters": rope}
    ranges = []
    for long_context in (False, True):
        model = archgraph.load(str(write_config(tmp_path, **config, use_long_context=long_context)))
        ranges.append({n.op.max_positions for _, n, _ in model.shapes().nodes() if n.op.op_name == "rotary_embedding"})
    assert ranges == [{64}, {16384}]
