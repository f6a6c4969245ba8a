"""Memory: weights per dtype against seed 004's rule and accelerate's published figures, training
state per optimizer, the KV cache (grouped-query aware), per-node dtype overrides."""
from __future__ import annotations

import json

import pytest

import archgraph
from archgraph.errors import SpecError
from archgraph.passes.memory import estimate_memory
from archgraph.render.memory import binary, decimal
from conftest import reference


@pytest.mark.parametrize("spec, params", [("bloom-1b4-zh", 1_303_111_680), ("gpt3-175b", 174_604_259_328)])
def test_weights_follow_seed_004_rule_on_the_exact_count(spec, params):
    # seed 004: fp32 4 GB, fp16 2 GB, int8 1 GB, int4 0.5 GB per billion parameters (GB = 10^9 bytes)
    m = estimate_memory(archgraph.load(spec))
    assert m.params == params
    assert m.weights_bytes == {"fp32": 4 * params, "bf16": 2 * params, "fp16": 2 * params,
                               "int8": params, "int4": params // 2}
    for dtype, per_billion in (("fp32", 4), ("fp16", 2), ("int8", 1), ("int4", 0.5)):
        assert m.weights_bytes[dtype] / 1e9 == pytest.approx(per_billion * params / 1e9, rel=1e-15)


def test_seed_004_figures_print_in_decimal_gigabytes():
    m = estimate_memory(archgraph.load("gpt3-175b"))
    assert [decimal(m.weights_bytes[d]) for d in ("fp32", "fp16", "int8", "int4")] == \
        ["698.42 GB", "349.21 GB", "174.60 GB", "87.30 GB"]


def test_bert_base_cased_matches_accelerate():
    # accelerate estimate-memory bert-base-cased: 413.18 MB at fp32, 1.61 GB with Adam (MB = 2^20 bytes)
    model = archgraph.load("bert-base-uncased", {"V": 28996})
    m = estimate_memory(model)
    assert m.params == 108_310_272
    assert m.weights_bytes["fp32"] == 433_241_088
    assert binary(m.weights_bytes["fp32"]) == "413.17 MiB"  # parameters only
    # accelerate sizes the module with its buffers: BertModel's int64 position_ids and token_type_ids
    buffers = reference("bert-base-uncased")["buffers"]
    buffer_bytes = sum(8 * shape[0] * shape[1] for shape in buffers.values())
    assert buffer_bytes == 8192
    assert binary(m.weights_bytes["fp32"] + buffer_bytes) == "413.18 MiB"
    assert m.training_bytes == 16 * 108_310_272 == 1_732_964_352
    assert m.training == {"weights": 2 * 108_310_272, "gradients": 2 * 108_310_272,
                          "master_weights": 4 * 108_310_272, "optimizer_states": 8 * 108_310_272}
    assert binary(m.training_bytes) == "1.61 GiB"


def test_optimizers_and_precision():
    model = archgraph.load("gpt2")
    n = 124_439_808
    assert estimate_memory(model, optimizer="sgd").training_bytes == 12 * n
    assert estimate_memory(model, optimizer="sgd-nomomentum").training_bytes == 8 * n
    assert estimate_memory(model, optimizer="adamw", precision="fp32").training == {
        "weights": 4 * n, "gradients": 4 * n, "master_weights": 0, "optimizer_states": 8 * n}
    with pytest.raises(SpecError, match="unknown optimizer 'lion'"):
        estimate_memory(model, optimizer="lion")


def test_frozen_parameters_hold_weights_only(tmp_path):
    spec = tmp_path / "frozen.yaml"
    spec.write_text("name: f\ninputs: {x: [B, 8]}\nnodes:\n"
                    "  - {name: a, op: linear, in_features: 8, out_features: 8, bias: false, trainable: false}\n"
                    "  - {name: b, op: linear, in_features: 8, out_features: 8, bias: false}\n")
    m = estimate_memory(archgraph.load(spec))
    assert m.training == {"weights": 2 * 128, "gradients": 2 * 64, "master_weights": 4 * 64,
                          "optimizer_states": 8 * 64}


def test_llama_3_8b_kv_cache_is_one_gib():
    model = archgraph.load("llama-3-8b")
    m = estimate_memory(model, {"B": 1, "S": 8192})
    assert m.kv_cache_bytes == 2 * 32 * 8192 * 8 * 128 * 2 == 2 ** 30
    (entry,) = m.kv_cache
    assert (entry.path, entry.layers, entry.context, entry.width, entry.rule) == \
        ("model.layers.0.self_attn.core", 32, 8192, 2 * 8 * 128, "full attention")   # lib.attention's sdpa
    # without grouped-query attention the cache is 4 times larger
    mha = estimate_memory(archgraph.load("llama-3-8b", {"KV": 32}), {"B": 1, "S": 8192})
    assert mha.kv_cache_bytes == 4 * 2 ** 30
    assert estimate_memory(model, {"B": 4, "S": 8192}, dtype="fp32").kv_cache_bytes == 8 * 2 ** 30


def test_kv_cache_of_gpt2_sdpa_t5_cross_attention_and_none_for_bert():
    gpt2 = estimate_memory(archgraph.load("gpt2"), {"B": 2, "S": 1024})
    assert gpt2.kv_cache_bytes == 2 * 12 * 2 * 1024 * 768 * 2
    t5 = estimate_memory(archgraph.load("t5-small"), {"B": 1, "S": 300, "T": 100})
    by_kind = {}
    for e in t5.kv_cache:
        by_kind[e.rule] = by_kind.get(e.rule, 0) + e.bytes
    assert by_kind == {"full attention": 2 * 6 * 100 * 8 * 64 * 2,
                       "cross-attention (encoder output)": 2 * 6 * 300 * 8 * 64 * 2}
    assert estimate_memory(archgraph.load("bert-base-uncased")).kv_cache == []


def test_activations_are_what_autograd_keeps_each_tensor_once():
    m = estimate_memory(archgraph.load("gpt2", {"L": 1}), {"B": 1, "S": 4})
    h, s = 768, 4
    act = (h * s + h * s + 3 * h * s + h * s  # ln_1's input, c_attn's (ln_1's output), q, k, v, the core's output
           + h * s + h * s + 4 * h * s + 4 * h * s  # ln_2's input, c_fc's, gelu's, c_proj's (c_proj of attn and
           + h * s + h * s)   # residual adds keep nothing), ln_f's input, lm_head's (the logits are kept by none)
    probs = 12 * s * s   # eager attention's probabilities (gpt2's attention has no dropout of them)
    masks = 3 * h * s    # three dropouts' masks, a byte each
    stats = 3 * 2 * s    # each layer norm's mean and 1/std per row, float32
    ids = s + s          # the ids wte reads and wpe's positions, int64
    assert m.attention_probs_bytes == 2 * probs
    assert m.activation_bytes == 2 * (act + probs) + masks + 4 * stats + 8 * ids == 120352


def test_per_node_dtype_overrides(tmp_path):
    spec = tmp_path / "q.yaml"
    spec.write_text("name: q\ninputs: {x: [B, 16]}\nnodes:\n"
                    "  - {name: a, op: linear, in_features: 16, out_features: 16, bias: false, dtype: int4}\n"
                    "  - {name: b, op: linear, in_features: 16, out_features: 16, bias: false, dtype: int8}\n"
                    "  - {name: c, op: linear, in_features: 16, out_features: 16, bias: false}\n")
    m = estimate_memory(archgraph.load(spec), dtype="bf16")
    assert m.weights_params_by_dtype == {"int4": 256, "int8": 256, "bf16": 256}
    assert m.weights_with_overrides == 128 + 256 + 512
    assert estimate_memory(archgraph.load(spec), dtype="fp32").weights_with_overrides == 128 + 256 + 1024


def test_dtype_override_errors(tmp_path, cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: q\ninputs: {x: [B, 16]}\nnodes:\n"
                   "  - {name: a, op: linear, in_features: 16, out_features: 16, dtype: int3}\n")
    code, out, err = cli("memory", str(bad))
    assert code == 2
    assert err.startswith(f"archgraph: error: {bad}:4: node 'a': 'dtype': unknown dtype 'int3'")
    assert "fix: did you mean 'int8'?" in err
    block = tmp_path / "block.yaml"
    block.write_text("name: q\ninputs: {x: [B, 16]}\nblocks:\n  b:\n    nodes:\n"
                     "      - {name: a, op: linear, in_features: 16, out_features: 16}\n"
                     "nodes:\n  - {name: l, block: b, dtype: int8}\n")
    code, _, err = cli("memory", str(block))
    assert code == 2 and "unknown key 'dtype' in a call of block 'b'" in err


def test_cli_json(cli):
    code, out, err = cli("memory", "llama-3-8b", "--set", "S=8192", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["weights_bytes"] == {"fp32": 32_121_044_992, "bf16": 16_060_522_496, "fp16": 16_060_522_496,
                                     "int8": 8_030_261_248, "int4": 4_015_130_624}
    assert data["training_bytes"] == 16 * 8_030_261_248
    assert data["kv_cache_bytes"] == 2 ** 30
    assert data["bindings"] == {"B": 1, "S": 8192}
    assert set(data["assumptions"]) == {"weights", "training", "activations", "kv_cache"}
    code, out, _ = cli("memory", "bert-base-uncased", "--json", "--optimizer", "sgd")
    data = json.loads(out)
    assert data["kv_cache_bytes"] == data["state_cache_bytes"] == 0  # an encoder keeps no cache: 0 bytes, not null
    assert "kv_cache" not in data and data["training_bytes"] == 12 * 109_482_240
    assert data["note"] == "defaults B=1, S=512 (set with --set)"


def test_cli_table_states_conventions(cli):
    code, out, _ = cli("memory", "bert-base-uncased", "--set", "V=28996")
    assert code == 0
    assert "413.17 MiB" in out and "1.61 GiB" in out and "16 bytes/param" in out
    assert "fp32 master weights 4" in out


@pytest.mark.parametrize("model_type, positions", [("clip", 77), ("siglip", 64)])
def test_the_default_length_stays_within_a_bound_the_spec_states(tmp_path, cli, model_type, positions):
    """`S <= TP` in CLIP's and SigLIP's templates: `memory` takes S = 77 (64) rather than 512, which
    the text tower's position table cannot embed (activations were 'not computed'); --set beyond is refused."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type}))
    code, out, err = cli("memory", str(path), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["bindings"] == {"B": 1, "S": positions}
    assert data["note"] == f"defaults B=1, S={positions} (set with --set)"
    assert data["kv_cache_bytes"] == 0  # CLIP's text tower is causal but never decodes: no cache
    code, out, err = cli("memory", str(path), "--set", f"S={positions + 1}")
    assert code == 2 and f"the constraint 'S <= TP' does not hold (S={positions + 1}, TP={positions})" in err


# What transformers 5.23.0 / torch 2.13.0 keep, measured by tools/measure_activations.py: a 3-layer
# LlamaForCausalLM (hidden 64, 4 heads, 2 key/value heads of 16, intermediate 160, vocabulary 96),
# float32, one training forward of B=2 x S=32 ids under torch.autograd.graph.saved_tensors_hooks, the
# bytes of every storage autograd keeps, each once, parameters and buffers left out.
LLAMA_SIZES = {"H": 64, "A": 4, "KV": 2, "L": 3, "V": 96, "I": 160}
LLAMA_SAVED = {"eager": 1_136_896, "sdpa": 992_512}
# and serving: one forward under torch.no_grad(), sdpa; while the first layer runs, after each aten op, the
# bytes of the storages made inside the layer still alive (weak references: freed with their last
# reference), at most; and the layer's inputs (hidden states [2, 32, 64], cos and sin [1, 32, 16])
LLAMA_LAYER = {"made inside, at most": 155_648, "inputs": 16_384 + 2 * 2_048}


def test_training_activations_are_what_torch_keeps_for_a_small_llama():
    m = estimate_memory(archgraph.load("llama-2-7b", LLAMA_SIZES), {"B": 2, "S": 32}, dtype="fp32")
    b, s, h, layers, heads, kv, d = 2, 32, 64, 3, 4, 2, 16
    lse = layers * b * heads * s * 4   # sdpa's kernel keeps a float32 log-sum-exp per query, not the probabilities
    # what transformers' code keeps besides (tests/test_plan_saved_tensors.py names the same for archgraph's
    # own module): its RMSNorm in float32 ops keeps the normalised input of every norm (2 a layer and the
    # final one), the rotary cos and sin tables [1, S, d] once, and eager attention keeps the keys and
    # values repeated to every query head
    norms, tables = (2 * layers + 1) * b * s * h * 4, 2 * s * d * 4
    repeated = layers * 2 * b * s * (heads - kv) * d * 4
    assert m.activation_bytes == 968_960
    assert m.activation_bytes + norms + tables + repeated == LLAMA_SAVED["eager"]
    assert m.activation_bytes - m.attention_probs_bytes + lse + norms + tables == LLAMA_SAVED["sdpa"]
    assert 0.85 < m.activation_bytes / LLAMA_SAVED["eager"] < 0.86   # the figure: 14.8 % under torch's eager


def test_serving_holds_what_torch_holds_at_once_in_a_small_llama_layer():
    from archgraph.passes.live import layer_peak
    b, s, h, inner = 2, 32, 64, 160
    peak = layer_peak(archgraph.load("llama-2-7b", LLAMA_SIZES), {"B": 2, "S": 32})
    # at the MLP's product: the layer's input, the residual sum after attention, its norm, and act(gate(x)),
    # up(x) and their product; archgraph's rotary tables [2, 32, 8] hold as many values as transformers'
    # [1, 32, 16]
    assert peak == b * s * (h + h + h + 3 * inner) + 2 * b * s * 8
    assert 4 * peak == sum(LLAMA_LAYER.values()) == 176_128   # float32: torch's, to the byte


@pytest.mark.slow
def test_the_measured_llama_is_what_torch_keeps_today():
    pytest.importorskip("transformers")
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "tools" / "measure_activations.py"
    spec = importlib.util.spec_from_file_location("measure_activations", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.SIZES["llama"] == LLAMA_SIZES
    assert {k: tool.saved_bytes("llama", k) for k in LLAMA_SAVED} == LLAMA_SAVED
    peak, inputs = tool.layer_peak("llama", "sdpa")
    assert (peak, sum(n for shape, n in inputs if shape != (1, 32))) == tuple(LLAMA_LAYER.values())   # not the
    #                                                                 position ids, which archgraph's layer never reads


def test_a_complex_parameter_is_priced_as_two_values(tmp_path):
    # the Fourier Neural Operator's spectral weights (torch.cfloat): complex64 is two float32 values, so
    # at every dtype a complex element takes two values' bytes, and its gradients and optimizer states too
    spec = tmp_path / "spectral.yaml"
    spec.write_text("name: spectral\ninputs:\n  x: {shape: [B, 4]}\nnodes:\n"
                    "  - {name: weights, op: parameter, shape: [3, 3, 2, 2], tensor: '', complex: true}\n"
                    "  - {name: proj, op: linear, in: x, in_features: 4, out_features: 4}\n")
    m = estimate_memory(archgraph.load(str(spec)))
    complex_, real = 3 * 3 * 2 * 2, 4 * 4 + 4
    assert m.params == complex_ + real == 56   # the count is torch's numel
    assert m.weights_bytes["fp32"] == 8 * complex_ + 4 * real == 368
    assert m.training == {"weights": 2 * 92, "gradients": 2 * 92, "master_weights": 4 * 92, "optimizer_states": 8 * 92}
