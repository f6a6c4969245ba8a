"""What training keeps for backward, op by op (`Op.saved`, passes/plan_activations.py), against the
closed forms of Korthikanti et al. 2022 and against what torch's autograd keeps when archgraph's
own module runs (`torch.autograd.graph.saved_tensors_hooks`, every storage once)."""
from __future__ import annotations

import pytest

from archgraph import load
from archgraph.ops import REGISTRY
from archgraph.passes.plan_activations import activation_profile

# GPT-3 175B as Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
# Models", arXiv:2205.05198) size it: s = 2048, b = 1, h = 12288, a = 96, 16-bit activations.
S, B, H, A = 2048, 1, 12288, 96
SBH = S * B * H
STATS = 2 * 2 * S * B * 4   # two LayerNorms' mean and 1/std per token in float32, which the paper leaves out


@pytest.fixture(scope="module")
def gpt3():
    model = load("gpt3-175b")
    return {eager: activation_profile(model, {"B": B, "S": S}, eager=eager) for eager in (True, False)}


def layer(profile):
    part, count, stack = profile.layers[-1]
    assert (stack, profile.layer_count) == ("transformer.h", 96)
    return part


def close(got, want, share=0.005):
    assert abs(got - want) <= share * want, (got, want, got / want - 1)


@pytest.mark.parametrize("tp, sp, core, want", [
    (1, False, True, SBH * (34 + 5 * A * S / H)),             # eq. 1: no parallelism
    (8, False, True, SBH * (10 + 24 / 8 + 5 * A * S / (H * 8))),  # eq. 2: tensor parallelism
    (8, True, True, SBH / 8 * (34 + 5 * A * S / H)),           # eq. 3: and sequence parallelism
    (8, False, False, SBH * (10 + 24 / 8)),                    # selective recomputation, tensor parallel
    (8, True, False, SBH * 34 / 8),                            # eq. 4's selective, with sequence parallelism
])
def test_gpt3_layer_korthikanti(gpt3, tp, sp, core, want):
    got = layer(gpt3[True]).kept_bytes("bf16", tp, sp, core)
    close(got, want)
    assert got - want == pytest.approx(STATS / (tp if sp else 1), abs=tp)  # exact but for the statistics


def test_gpt3_full_recomputation_keeps_the_layer_input(gpt3):
    part = layer(gpt3[True])
    assert part.checkpoint_bytes("bf16") == 2 * SBH                  # Korthikanti's 2sbh per layer
    assert part.checkpoint_bytes("bf16", 8, sp=True) == 2 * SBH // 8  # sharded along the sequence


def test_gpt3_flash_attention_keeps_no_score_matrix(gpt3):
    """A fused kernel keeps its output (o_proj's input, which eager attention keeps too) and the
    log-sum-exp of each query's scores in float32 instead of 5as²b: 34sbh + 4abs."""
    got = layer(gpt3[False]).kept_bytes("bf16")
    assert got == 34 * SBH + 4 * A * B * S + STATS


def test_attention_scores_are_what_selective_recomputation_repeats(gpt3):
    part = layer(gpt3[True])
    assert part.core_flops == 2 * B * A * S * S * (H // A) * 2   # the scores and the weighted values


def test_llama2_layer_closed_form():
    """Llama 2's layer, counted as Korthikanti count GPT-3's: the two RMSNorms' inputs (2sbh each),
    the q/k/v projections' input and the MLP's (2sbh each), q, k and v after the rotary positions
    (2sbh each, k and v at kv_heads), o_proj's input (2sbh), the gate, up, SiLU and product of the
    SwiGLU (2sbI each) and the probabilities (2as²b; no dropout), plus each norm's 1/rms."""
    s, b = 4096, 1
    for name, h, a, kv, inner in (("llama-2-7b", 4096, 32, 32, 11008), ("llama-2-70b", 8192, 64, 8, 28672)):
        profile = activation_profile(load(name), {"B": b, "S": s}, eager=True)
        part = profile.layers[-1][0]
        sbh = s * b * h
        want = 2 * sbh * (4 + 2 + 2 * kv / a) + 8 * s * b * inner + 2 * a * s * s * b + 2 * 4 * s * b
        assert part.kept_bytes("bf16") == want
        assert part.kept_bytes("bf16", core=False) == want - 2 * a * s * s * b


def test_ops_declare_what_they_keep():
    """One small declaration per op: a norm keeps its input and float32 statistics, dropout a bool
    mask, relu and softmax their output, a view and a sum nothing."""
    x = (2, 8, 16)
    assert [(s.input, s.width, s.values) for s in REGISTRY["layer_norm"](normalized_shape=16).saved([x], [x], False)] \
        == [(0, "act", 0), (None, "fp32", 32)]
    assert [(s.width, s.values) for s in REGISTRY["dropout"](p=0.1).saved([x], [x], False)] == [("mask", 256)]
    assert REGISTRY["dropout"](p=0.0).saved([x], [x], False) == []
    assert [s.output for s in REGISTRY["relu"]().saved([x], [x], False)] == [0]
    assert [s.output for s in REGISTRY["softmax"]().saved([x], [x], False)] == [0]
    assert REGISTRY["reshape"](shape=(2, 128)).saved([x], [(2, 128)], False) == []
    assert REGISTRY["add"]().saved([x, x], [x], False) == []
    assert [s.input for s in REGISTRY["linear"](in_features=16, out_features=4).saved([x], [(2, 8, 4)], False)] == [0]


def test_a_product_keeps_each_factor_for_the_others_gradient(tmp_path):
    """x · mask where the mask carries no gradient keeps the mask, not x (torch's mul)."""
    spec = tmp_path / "gate.yaml"
    spec.write_text("""archgraph: 1
name: gate
inputs: {x: [2, 4]}
nodes:
  - {name: w, op: linear, in: x, in_features: 4, out_features: 4}
  - {name: mask, op: gt, in: x, constant: 0.0}
  - {name: gated, op: mul, in: [w, mask]}
  - {name: out, op: linear, in_features: 4, out_features: 4}
outputs: {y: out}
""")
    profile = activation_profile(load(str(spec)), {}, eager=False)
    kept = profile.total().kept
    # x (w's input) and the mask, replicated; gated (out's input) after a column-parallel linear: split
    assert dict(+kept) == {("act", "seq", False): 8 + 8, ("act", "heads", False): 8}


PARALLEL = """archgraph: 1
name: parallel
inputs: {x: [2, 5, 8]}
blocks:
  attn:                       # a block called once: its projections read its input x
    inputs: [x]
    nodes:
      - {name: q, op: linear, in: x, in_features: 8, out_features: 8}
      - {name: o, op: linear, in_features: 8, out_features: 8}
nodes:
  - {name: norm, op: rms_norm, in: x, dim: 8}
  - {name: attn, block: attn, in: norm, repeat: REPEAT}
  - {name: fc, op: linear, in: norm, in_features: 8, out_features: 8}
  - {name: proj, op: linear, in_features: 8, out_features: 8}
  - {name: both, op: add, in: [attn, proj]}
outputs: {y: both}
"""


@pytest.mark.parametrize("repeat, reduced", [(1, 1), (2, 3)])
def test_one_backward_all_reduce_per_tensor_across_a_block_call(tmp_path, repeat, reduced):
    """A parallel residual (StableLM's, Falcon-H1's) on lib.attention: the norm's output is read by
    the block's q projection and by fc, both column-parallel; its gradient is all-reduced once, as
    when the attention was one op. A repeated block's repetitions each read their own input: one
    all-reduce each, and fc's."""
    spec = tmp_path / "parallel.yaml"
    spec.write_text(PARALLEL.replace("REPEAT", str(repeat)))
    comm = activation_profile(load(str(spec)), {}, eager=False).total().comm
    assert comm["backward"] == reduced * 2 * 5 * 8
    assert comm["forward"] == (repeat + 1) * 2 * 5 * 8   # o and proj: row-parallel outputs


MERGED = """archgraph: 1
name: merged
inputs:
  ids: {shape: [2, 5], dtype: int64}
  feats: {shape: [2, 3, 4]}
nodes:
  - {name: embed, op: embedding, in: ids, num_embeddings: 16, embedding_dim: 8}
  - {name: proj, op: linear, in: feats, in_features: 4, out_features: 8}     # a lone projection: split
  - {name: is_image, op: eq, in: ids, constant: 1}
  - {name: image_mask, op: unsqueeze, dim: -1}
  - {name: merged, op: masked_scatter, in: [embed, image_mask, proj]}
  - {name: fc, op: linear, in_features: 8, out_features: 8}
  - {name: out, op: linear, in_features: 8, out_features: 8}
outputs: {y: out}
"""


def test_a_split_source_merged_into_the_embeddings_is_gathered(tmp_path):
    """masked_scatter writes image features into the text embeddings: its output is placed as the
    embeddings (replicated), so the text model after it is column- then row-parallel as alone (fc
    column, out row: one forward all-reduce of its 2 x 5 x 8 outputs); the lone projection's split
    output (2 x 3 x 8) is all-gathered into it. It was placed 'heads' (split), and fc read as
    row-parallel: Idefics3's text model had no all-reduce at all when its attention was one op, and
    its q/k/v projections' outputs all-reduced when lib.attention wrote them."""
    spec = tmp_path / "merged.yaml"
    spec.write_text(MERGED)
    comm = activation_profile(load(str(spec)), {}, eager=False).total().comm
    assert (comm["gather"], comm["forward"]) == (2 * 3 * 8, 2 * 5 * 8)


def test_idefics3_keeps_per_layer_what_its_text_model_alone_keeps(tmp_path):
    """At tp 2 a layer of Idefics3 8B's text model keeps what a layer of its Llama 3.1 8B alone keeps
    (the first layer's input, the merged embeddings, is the merge's output, kept before it)."""
    import json
    from conftest import ROOT, write_config
    config = json.loads((ROOT / "tests/data/hf/idefics3-8b-llama3.json").read_text())["config"]
    whole = activation_profile(load(write_config(tmp_path, **config)), {"B": 1, "S": 2048}, eager=False)
    text = activation_profile(load(write_config(tmp_path, **config["text_config"])), {"B": 1, "S": 2048},
                              eager=False)
    kept = [p.kept_bytes("bf16", tp=2) for p, _, stack in whole.layers if "text_model" in stack]
    assert kept[1] == text.layers[1][0].kept_bytes("bf16", tp=2) == 205_668_352   # was 172,105,728
    assert kept[0] == text.layers[0][0].kept_bytes("bf16", tp=2) - 2048 * 4096 * 2   # its input is the merge's
