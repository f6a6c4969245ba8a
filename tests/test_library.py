"""The standard library of blocks (specs/lib/, issue 40): a spec names one as `lib.NAME`, and
lib.attention, written in primitives, is the `attention` op's computation: the same tensors, FLOPs,
cache, what training keeps and outputs, for a grid of settings; its q/k-norm variant and the MLPs
are their ops' but for the FLOPs of the parts the ops leave out (norms, activations, products); lib.moe
is the moe op's tensors, count and outputs, and counts its scoring parts (softmax, topk, renormalisation)."""
from __future__ import annotations

import itertools
import re
from collections import Counter

import pytest

import archgraph
from archgraph import SpecError
from archgraph.ops import REGISTRY
from archgraph.passes.flops import count_flops
from archgraph.passes.live import layer_peak
from archgraph.passes.memory import estimate_memory
from archgraph.passes.plan_activations import activation_profile
from archgraph.spec.sources import library_blocks

HEAD = """
name: NAME
variables: {H: 48, A: 6, KV: KVH, D: HEAD_DIM}
inputs:
  x: {shape: [B, S, H]}
  mask: {shape: [B, S], dtype: int64, default: ones}
"""

OP = HEAD + """
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 8}
  - name: self_attn
    op: attention
    in: {x: x, rope: "rot:0", rope_sin: "rot:1", mask: mask}
    hidden: H
    heads: A
    kv_heads: KV
    head_dim: D
    qkv_bias: QKV_BIAS
    out_bias: OUT_BIAS
    causal: CAUSAL
    window: WINDOW
    rotary: ROTARY
    qk_norm: QK_NORM
    qk_norm_type: QK_TYPE
    qkv: FUSION
"""

LIB = HEAD + """
blocks:
  attention: {spec: LIBRARY, category: attention}
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 8}
  - name: self_attn
    block: attention
    in: {x: x, rope: "rot:0", rope_sin: "rot:1", mask: mask}
    hidden: H
    heads: A
    kv_heads: KV
    head_dim: D
    qkv_bias: QKV_BIAS
    out_bias: OUT_BIAS
    causal: CAUSAL
    window: WINDOW
    rotary: "'ROTARY'"
"""

GRID = [dict(zip(("KVH", "QKV_BIAS", "OUT_BIAS", "CAUSAL", "ROTARY"), values)) for values in itertools.product(
    ("6", "2", "1", "null"), ("false", "true"), ("false", "true"), ("true", "false"), ("half", "interleaved"))]
WINDOWED = [{**s, "WINDOW": "3"} for s in GRID if s["CAUSAL"] == "true"]   # a sliding window of 3 of S=7 keys
SIZES = {"B": 2, "S": 7}
PLAIN = {"WINDOW": "null", "QK_NORM": "none", "QK_TYPE": "rms", "LIBRARY": "lib.attention", "HEAD_DIM": "8", "FUSION": "separate"}
# Phi-3's one qkv_proj: the op with qkv: fused and lib.attention_fused_qkv
FUSED = [{**s, "FUSION": "fused", "LIBRARY": "lib.attention_fused_qkv"} for s in (GRID[0], GRID[5], GRID[18], GRID[27])] + \
    [{**WINDOWED[3], "FUSION": "fused", "LIBRARY": "lib.attention_fused_qkv"}]


def _pair(tmp_path, settings: dict) -> tuple:
    """The model with the attention op and with lib.attention, at `settings`."""
    out = []
    for name, text in (("op", OP), ("lib", LIB)):
        for key, value in {**PLAIN, **settings}.items():
            text = text.replace(key, value)
        path = tmp_path / f"{name}.yaml"
        path.write_text(text.replace("NAME", name))
        out.append(archgraph.load(str(path)))
    return tuple(out)


def _tensors(model) -> dict:
    return {path: tuple(row.shape) for path, row in model.params().tensors()}


@pytest.mark.parametrize("settings", GRID + WINDOWED + [{**GRID[16], "HEAD_DIM": "null"}] + FUSED,
                         ids=lambda s: "-".join(s.values()))
def test_lib_attention_counts_what_the_op_counts(tmp_path, settings):
    op, lib = _pair(tmp_path, settings)
    assert _tensors(lib) == _tensors(op)
    assert lib.params().total == op.params().total
    assert lib.params().totals.by_category == op.params().totals.by_category
    flops = [count_flops(m, SIZES) for m in (op, lib)]
    assert flops[1].forward == flops[0].forward and flops[1].by_category == flops[0].by_category
    mem_op, mem_lib = estimate_memory(op, SIZES), estimate_memory(lib, SIZES)
    assert [(e.rule, e.layers, e.context, e.width, e.bytes) for e in mem_lib.kv_cache] == \
        [(e.rule, e.layers, e.context, e.width, e.bytes) for e in mem_op.kv_cache]
    assert mem_lib.attention_probs_bytes == mem_op.attention_probs_bytes
    assert mem_lib.activation_bytes == mem_op.activation_bytes   # what autograd keeps, each tensor once
    for tp in (1, 2):   # what serving holds at once (passes/live.py): the op's held() is its parts'
        assert layer_peak(lib, SIZES, tp) == layer_peak(op, SIZES, tp)
    for eager in (False, True):   # what training keeps, with a fused kernel and eager attention
        kept = [activation_profile(m, SIZES, eager).total() for m in (op, lib)]
        assert kept[1].kept == kept[0].kept and kept[1].flops == kept[0].flops and kept[1].comm == kept[0].comm
        assert kept[1].core_flops == kept[0].core_flops


@pytest.mark.parametrize("settings", [GRID[0], GRID[9], GRID[21], GRID[30], GRID[42], GRID[47], GRID[50], WINDOWED[5],
                                      WINDOWED[18], {**GRID[16], "HEAD_DIM": "null"}, FUSED[1], FUSED[2], FUSED[4]],
                         ids=lambda s: "-".join(s.values()))
def test_lib_attention_computes_what_the_op_computes(tmp_path, settings):
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    op, lib = _pair(tmp_path, settings)
    torch.manual_seed(0)
    m_op = to_module(op)
    m_lib = to_module(lib)
    state = m_op.state_dict()
    assert list(m_lib.state_dict()) == list(state)
    m_lib.load_state_dict(state)
    x = torch.randn(2, 7, 48)
    mask = torch.tensor([[1] * 7, [0, 0, 1, 1, 1, 1, 1]])
    with torch.no_grad():
        want, got = m_op(x=x, mask=mask)["self_attn"], m_lib(x=x, mask=mask)["self_attn"]
    assert torch.equal(got, want)


def test_a_library_block_is_named_lib_dot_its_file():
    assert "lib.attention" in library_blocks()
    assert library_blocks()["lib.attention"].name == "attention.yaml"


def test_an_unknown_library_block_is_refused_with_the_closest_name(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(LIB.replace("LIBRARY", "lib.atention").replace("NAME", "m").replace("WINDOW", "null")
                    .replace("HEAD_DIM", "8").replace("KVH", "6")
                    .replace("QKV_BIAS", "false").replace("OUT_BIAS", "false").replace("CAUSAL", "true")
                    .replace("ROTARY", "half"))
    with pytest.raises(SpecError) as error:
        archgraph.load(str(path))
    assert "the standard library has no block 'lib.atention'" in error.value.message
    assert error.value.hint == "did you mean 'lib.attention'?"


def test_the_wheel_ships_the_library():
    import tomllib
    from pathlib import Path
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    included = project["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert included["specs"] == "archgraph/_specs"   # specs/lib/ goes with it, as archgraph/_specs/lib


def test_render_draws_lib_attention_as_its_parts_or_one_box(tmp_path):
    from archgraph.render.diagram import DiagramOptions, diagram_dot
    _, lib = _pair(tmp_path, GRID[16])
    whole = diagram_dot(lib, DiagramOptions(depth=0))
    assert "\tself_attn [label=<" in whole and "self_attn.core" not in whole
    parts = diagram_dot(lib, DiagramOptions(depth=1))
    assert "subgraph cluster_self_attn {" in parts
    for node, line in (("q_proj", "in_features=48, out_features=48"), ("core", "heads=6, kv_heads=2, causal=True"),
                       ("q_rope", "apply_rotary")):
        assert re.search(rf'"self_attn\.{node}" \[label=<.*{line}', parts)
    assert '"self_attn.core" -> "self_attn.heads_out" [label=" [B, 6, S, 8] "]' in parts


QK = {"KVH": "2", "QKV_BIAS": "false", "OUT_BIAS": "false", "CAUSAL": "true", "ROTARY": "half", "QK_NORM": "head",
      "LIBRARY": "lib.attention_qk_norm"}


def test_lib_attention_qk_norm_is_the_op_with_qk_norm_head(tmp_path):
    # Qwen3's attention: the base and two rms_norm nodes; the op counted no FLOPs for its norms, the
    # rms_norm nodes count theirs (4 a value, over the queries' 2·7·6·8 and the keys' 2·7·2·8 values)
    op, lib = _pair(tmp_path, QK)
    assert _tensors(lib) == _tensors(op) == {
        "self_attn.q_proj.weight": (48, 48), "self_attn.k_proj.weight": (16, 48), "self_attn.v_proj.weight": (16, 48),
        "self_attn.o_proj.weight": (48, 48), "self_attn.q_norm.weight": (8,), "self_attn.k_norm.weight": (8,)}
    assert count_flops(lib, SIZES).forward - count_flops(op, SIZES).forward == 4 * (2 * 7 * 6 * 8 + 2 * 7 * 2 * 8)
    for eager in (False, True):
        kept = [activation_profile(m, SIZES, eager).total() for m in (op, lib)]
        assert kept[1].kept == kept[0].kept
    assert layer_peak(lib, SIZES) == layer_peak(op, SIZES)


def test_lib_attention_qk_norm_computes_what_the_op_computes(tmp_path):
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    op, lib = _pair(tmp_path, QK)
    m_op, m_lib = to_module(op), to_module(lib)
    with torch.no_grad():
        for name, value in m_op.state_dict().items():   # norms' weights away from their first 1s
            value.add_(torch.randn_like(value) * 0.1 if name.endswith("norm.weight") else 0)
    m_lib.load_state_dict(m_op.state_dict())
    x = torch.randn(2, 7, 48)
    with torch.no_grad():
        assert torch.equal(m_lib(x=x)["self_attn"], m_op(x=x)["self_attn"])


QK_FULL = {**QK, "QK_NORM": "full", "LIBRARY": "lib.attention_qk_norm_full"}   # OLMo 2's
QK_EACH = {**QK, "QK_NORM": "each_head", "QK_TYPE": "layer", "ROTARY": "interleaved",
           "LIBRARY": "lib.attention_qk_layer_norm_each_head"}   # Cohere's (use_qk_norm)


def test_lib_attention_qk_norm_full_is_the_op_with_qk_norm_full(tmp_path):
    # OLMo 2's attention: an RMSNorm over the whole query projection [B, S, heads·d] and one over the
    # keys', before the heads split; 4 FLOPs a value, and one float32 statistic a token each,
    # what the op keeps as its parts do
    op, lib = _pair(tmp_path, QK_FULL)
    assert _tensors(lib) == _tensors(op) == {
        "self_attn.q_proj.weight": (48, 48), "self_attn.k_proj.weight": (16, 48), "self_attn.v_proj.weight": (16, 48),
        "self_attn.o_proj.weight": (48, 48), "self_attn.q_norm.weight": (48,), "self_attn.k_norm.weight": (16,)}
    assert count_flops(lib, SIZES).forward - count_flops(op, SIZES).forward == 4 * (2 * 7 * 6 * 8 + 2 * 7 * 2 * 8)
    for eager in (False, True):
        kept = [activation_profile(m, SIZES, eager).total().kept for m in (op, lib)]
        assert kept[0] == kept[1]
    assert estimate_memory(lib, SIZES).activation_bytes == estimate_memory(op, SIZES).activation_bytes
    assert layer_peak(lib, SIZES) == layer_peak(op, SIZES)


def test_lib_attention_qk_layer_norm_each_head_is_the_op_with_qk_norm_each_head(tmp_path):
    # Cohere's: a LayerNorm without weights over each head's dims, times a parameter [heads, d]; the
    # norm's 5 FLOPs a value and the product's 1
    op, lib = _pair(tmp_path, QK_EACH)
    assert _tensors(lib) == _tensors(op) == {
        "self_attn.q_proj.weight": (48, 48), "self_attn.k_proj.weight": (16, 48), "self_attn.v_proj.weight": (16, 48),
        "self_attn.o_proj.weight": (48, 48), "self_attn.q_norm.weight": (6, 8), "self_attn.k_norm.weight": (2, 8)}
    assert count_flops(lib, SIZES).forward - count_flops(op, SIZES).forward == 6 * (2 * 7 * 6 * 8 + 2 * 7 * 2 * 8)


@pytest.mark.parametrize("settings", [QK_FULL, QK_EACH], ids=["full", "each_head"])
def test_lib_attention_qk_norm_variants_compute_what_the_op_computes(tmp_path, settings):
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    op, lib = _pair(tmp_path, settings)
    m_op, m_lib = to_module(op), to_module(lib)
    assert all(torch.equal(v, torch.ones_like(v)) for k, v in m_lib.state_dict().items() if k.endswith("norm.weight"))
    with torch.no_grad():
        for name, value in m_op.state_dict().items():   # norms' weights away from their first 1s
            value.add_(torch.randn_like(value) * 0.1 if name.endswith("norm.weight") else 0)
    m_lib.load_state_dict(m_op.state_dict())
    x = torch.randn(2, 7, 48)
    with torch.no_grad():
        torch.testing.assert_close(m_lib(x=x)["self_attn"], m_op(x=x)["self_attn"], rtol=1e-6, atol=1e-6)


def test_sdpa_takes_a_window_only_causal_and_with_a_padding_mask():
    from archgraph.ops import REGISTRY
    sdpa = REGISTRY["sdpa"]
    with pytest.raises(SpecError, match="window is a causal sliding window: give causal: true with it"):
        sdpa(heads=2, window=4)
    op = sdpa(heads=2, causal=True, window=4)
    assert op.flops([(1, 2, 9, 8), (1, 2, 9, 8), (1, 2, 9, 8)], [(1, 2, 9, 8)]) == 2 * 2 * (2 * 9 * 8) * 4
    assert op.cache([(1, 2, 9, 8), (1, 2, 9, 8), (1, 2, 9, 8)], [(1, 2, 9, 8)], True).tokens == 4
    from archgraph.errors import ShapeError
    with pytest.raises(ShapeError, match="sdpa takes a window with a padding mask"):
        op.infer_shape((1, 2, 9, 8), (1, 2, 9, 8), (1, 2, 9, 8), (1, 1, 9, 9))


MLP_OP = """
name: NAME
inputs:
  x: {shape: [B, S, 48]}
nodes:
  - {name: mlp, op: OPNAME, hidden: 48, intermediate: 80, bias: BIAS, activation: ACT}
"""

MLP_LIB = """
name: NAME
inputs:
  x: {shape: [B, S, 48]}
blocks:
  feed_forward: {spec: LIBRARY, category: mlp}
nodes:
  - {name: mlp, block: feed_forward, hidden: 48, intermediate: 80, bias: BIAS, activation: "'ACT'"}
"""

MLPS = [("gated_mlp", bias, act) for bias in ("false", "true") for act in ("silu", "gelu_tanh", "relu")] + \
       [("mlp", bias, act) for bias in ("true", "false") for act in ("gelu", "quick_gelu", "relu")]


def _mlp_pair(tmp_path, op: str, bias: str, act: str) -> tuple:
    out = []
    for name, text in (("op", MLP_OP), ("lib", MLP_LIB)):
        text = text.replace("OPNAME", op).replace("LIBRARY", f"lib.{op}").replace("BIAS", bias).replace("ACT", act)
        path = tmp_path / f"{name}.yaml"
        path.write_text(text.replace("NAME", name))
        out.append(archgraph.load(str(path)))
    return tuple(out)


@pytest.mark.parametrize("op, bias, act", MLPS)
def test_lib_mlps_count_what_the_ops_count(tmp_path, op, bias, act):
    ops, lib = _mlp_pair(tmp_path, op, bias, act)
    assert _tensors(lib) == _tensors(ops)
    assert lib.params().totals.by_category == ops.params().totals.by_category
    # what training keeps: the op's and its parts' (gated_mlp with relu keeps act(gate(x)) once, which the
    # product and relu's backward both read)
    for eager in (False, True):
        kept = [activation_profile(m, SIZES, eager).total() for m in (ops, lib)]
        assert kept[1].kept == kept[0].kept and kept[1].comm == kept[0].comm
    assert estimate_memory(lib, SIZES).activation_bytes == estimate_memory(ops, SIZES).activation_bytes
    assert layer_peak(lib, SIZES) == layer_peak(ops, SIZES) == 2 * 7 * (48 + (3 if op == "gated_mlp" else 2) * 80)
    # the op counts its three (two) products of matrices; the parts count the activation, and the product
    n = 2 * 7 * 80
    cost = n * REGISTRY["activation"](fn=act).cost + (n if op == "gated_mlp" else 0)
    assert count_flops(lib, SIZES).forward - count_flops(ops, SIZES).forward == cost


@pytest.mark.parametrize("op, bias, act", [MLPS[0], MLPS[4], MLPS[6], MLPS[10]])
def test_lib_mlps_compute_what_the_ops_compute(tmp_path, op, bias, act):
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    ops, lib = _mlp_pair(tmp_path, op, bias, act)
    m_op, m_lib = to_module(ops), to_module(lib)
    assert list(m_lib.state_dict()) == list(m_op.state_dict())
    m_lib.load_state_dict(m_op.state_dict())
    x = torch.randn(2, 7, 48)
    with torch.no_grad():
        assert torch.equal(m_lib(x=x)["mlp"], m_op(x=x)["mlp"])


def test_a_decoder_of_lib_attention_decodes_as_the_ops(tmp_path):
    # compare and plan --serve split the FLOPs into prefill and one generated token along the length
    # the cached layer's queries run over: sdpa's [B, heads, S, head_dim] as attention's [B, S, hidden]
    from archgraph.passes.compare import summarize
    for settings in (GRID[16], WINDOWED[5]):
        op, lib = _pair(tmp_path, settings)
        split = [summarize(m.name, {"B": 2, "S": 7}, load=lambda *_a, m=m, **_k: m, probe=m).flops for m in (op, lib)]
        assert split[1].per_token == split[0].per_token is not None and split[1].prefill == split[0].prefill
    # WINDOWED[5]: 6 key/value heads; one token's four projections, and its scores and values over the 3 keys
    # of its window
    assert split[0].per_token == 2 * 4 * 48 * 48 + 2 * 2 * 6 * 8 * 3


def test_plan_divides_lib_attention_by_its_query_and_key_value_heads(tmp_path):
    # plan refuses a tensor-parallel degree that does not divide the heads: sdpa's kv_heads count, as
    # the attention op's (6 query heads, 2 key/value heads: tp 2 divides them, 3 does not)
    from archgraph.commands.plan import _heads
    op, lib = _pair(tmp_path, GRID[16])
    assert _heads(lib.graph) == _heads(op.graph) == 2


def test_a_stack_of_lib_attention_says_its_window(tmp_path):
    # compare, diff and the page say what limits a layer's keys: sdpa's window as attention's
    from archgraph.passes.stacks import _masks_in
    op, lib = _pair(tmp_path, WINDOWED[5])
    assert _masks_in(lib.graph) == _masks_in(op.graph) == {"sliding window of 3"}


BLOCKS = """
name: NAME
variables: {H: 48, A: 6, KV: 2}
inputs:
  x: {shape: [B, S, H]}
  mask: {shape: [B, S], dtype: int64, default: ones}
  block_ids: {shape: [B, S], dtype: int64}
blocks:
  attention: {spec: lib.attention_blocks, category: attention}
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: 8}
  - {name: self_attn, CALL, in: {x: x, rope: "rot:0", rope_sin: "rot:1", mask: mask, block_ids: block_ids},
     hidden: H, heads: A, kv_heads: KV, qkv_bias: false, out_bias: false, causal: true}
"""


def test_lib_attention_blocks_is_the_op_with_block_ids(tmp_path):
    # PaliGemma's prefix: sdpa reads block_ids [B, S], and a query sees every key of its block past the
    # causal rule; the same tensors, FLOPs, cache and outputs as the attention op's
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    models = []
    for name, call in (("op", "op: attention"), ("lib", "block: attention")):
        path = tmp_path / f"{name}.yaml"
        path.write_text(BLOCKS.replace("NAME", name).replace("CALL", call))
        models.append(archgraph.load(str(path)))
    op, lib = models
    assert _tensors(lib) == _tensors(op)
    assert count_flops(lib, SIZES).forward == count_flops(op, SIZES).forward
    assert [e.bytes for e in estimate_memory(lib, SIZES).kv_cache] == [e.bytes for e in estimate_memory(op, SIZES).kv_cache]
    m_op, m_lib = to_module(op), to_module(lib)
    m_lib.load_state_dict(m_op.state_dict())
    x = torch.randn(2, 7, 48)
    mask = torch.tensor([[1] * 7, [0, 1, 1, 1, 1, 1, 1]])
    blocks = torch.tensor([[0, 0, 0, 0, -1, -1, -1], [-1, 0, 0, 0, -1, -1, -1]])   # a prefix of 4 (of 3)
    with torch.no_grad():
        want = m_op(x=x, mask=mask, block_ids=blocks)["self_attn"]
        got = m_lib(x=x, mask=mask, block_ids=blocks)["self_attn"]
        plain = m_lib(x=x, mask=mask, block_ids=torch.full((2, 7), -1))["self_attn"]
    assert torch.equal(got, want)
    assert not torch.allclose(got[:, :3], plain[:, :3])   # the prefix's first tokens see its later ones


def test_sdpa_takes_block_ids_of_self_attention_without_a_window():
    sdpa = REGISTRY["sdpa"]
    q = (2, 6, 7, 8)
    assert sdpa(heads=6, causal=True).infer_shape(q, q, q, (2, 7), (2, 7)) == (2, 6, 7, 8)
    with pytest.raises(archgraph.ShapeError, match="without a window"):
        sdpa(heads=6, causal=True, window=3).infer_shape(q, q, q, (2, 7), (2, 7))
    with pytest.raises(archgraph.ShapeError, match="block ids are for self-attention"):
        sdpa(heads=6, causal=True).infer_shape(q, (2, 6, 9, 8), (2, 6, 9, 8), None, (2, 7))


MOE_OP = """
name: NAME
inputs:
  x: {shape: [B, S, 48]}
nodes:
  - {name: mlp, op: moe, hidden: 48, intermediate: 40, experts: EXPERTS, top_k: TOP_K, normalize: NORMALIZE,
     activation: ACT}
"""

MOE_LIB = """
name: NAME
inputs:
  x: {shape: [B, S, 48]}
blocks:
  moe: {spec: lib.moe, category: mlp}
nodes:
  - {name: mlp, block: moe, hidden: 48, intermediate: 40, experts: EXPERTS, top_k: TOP_K, normalize: NORMALIZE,
     activation: "'ACT'"}
"""

MOES = [dict(zip(("EXPERTS", "TOP_K", "NORMALIZE", "ACT"), values)) for values in itertools.product(
    ("6", "4"), ("1", "2", "4"), ("true", "false"), ("silu", "gelu"))]


def _moe_pair(tmp_path, settings: dict) -> tuple:
    out = []
    for name, text in (("op", MOE_OP), ("lib", MOE_LIB)):
        for key, value in settings.items():
            text = text.replace(key, value)
        path = tmp_path / f"{name}.yaml"
        path.write_text(text.replace("NAME", name))
        out.append(archgraph.load(str(path)))
    return tuple(out)


@pytest.mark.parametrize("settings", MOES, ids=lambda s: "-".join(s.values()))
def test_lib_moe_counts_what_the_op_counts(tmp_path, settings):
    op, lib = _moe_pair(tmp_path, settings)
    assert _tensors(lib) == _tensors(op)
    assert [lib.params().total, lib.params().totals.active] == [op.params().total, op.params().totals.active]
    assert lib.params().totals.by_category == op.params().totals.by_category
    # the op counts the router's and the experts' products of matrices; the parts also count the softmax
    # (5 a score), topk (1 a score) and the renormalisation's sum and division (1 a weight each)
    tokens, e, k = 2 * 7, int(settings["EXPERTS"]), int(settings["TOP_K"])
    scoring = tokens * e * (5 + 1) + (2 * tokens * k if settings["NORMALIZE"] == "true" else 0)
    assert count_flops(lib, SIZES).forward - count_flops(op, SIZES).forward == scoring
    # what training keeps: the op kept the probabilities (float32) and the picks; the parts keep the
    # probabilities (softmax's output, at the activations' width), topk's picks, the weights the experts
    # read, and the renormalisation's dividend and sum; all else as the op
    renorm = tokens * k + tokens if settings["NORMALIZE"] == "true" else 0
    for eager in (False, True):
        kept = [activation_profile(m, SIZES, eager).total() for m in (op, lib)]
        assert kept[0].kept - kept[1].kept == Counter({("fp32", "seq", False): tokens * e,
                                                       ("index", "seq", False): tokens * k})
        assert kept[1].kept - kept[0].kept == Counter({("act", "heads", False): tokens * e + tokens * k + renorm,
                                                       ("index", "heads", False): tokens * k})
        assert kept[1].comm == kept[0].comm


@pytest.mark.parametrize("settings", [MOES[0], MOES[3], MOES[6], MOES[13], MOES[23]],
                         ids=lambda s: "-".join(s.values()))
def test_lib_moe_computes_what_the_op_computes(tmp_path, settings):
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    op, lib = _moe_pair(tmp_path, settings)
    torch.manual_seed(0)
    m_op, m_lib = to_module(op), to_module(lib)
    assert list(m_lib.state_dict()) == list(m_op.state_dict()) == \
        ["mlp.gate.weight", "mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
    m_lib.load_state_dict(m_op.state_dict())
    x = torch.randn(2, 7, 48)
    with torch.no_grad():
        assert torch.equal(m_lib(x=x)["mlp"], m_op(x=x)["mlp"])


def test_a_stack_of_lib_moe_says_its_experts(tmp_path):
    # compare, diff and the page describe a layer by its experts: the experts op's as the moe op's
    from archgraph.passes.stacks import _what
    op, lib = _moe_pair(tmp_path, MOES[4])   # 6 experts, top 2
    assert _what(lib.graph.nodes["mlp"].body.nodes["experts"], None, None) == \
        _what(op.graph.nodes["mlp"], None, None) == {"MoE 6 experts top 2"}


def test_lib_moe_router_is_lib_moe_with_its_router_named_router(tmp_path):
    # GraniteMoe's and Jamba's router: the same nodes and figures, the tensor router.weight for gate.weight
    _, base = _moe_pair(tmp_path, MOES[4])
    path = tmp_path / "router.yaml"
    path.write_text(MOE_LIB.replace("lib.moe", "lib.moe_router").replace("NAME", "router").replace("EXPERTS", "6")
                    .replace("TOP_K", "2").replace("NORMALIZE", "true").replace("ACT", "silu"))
    named = archgraph.load(str(path))
    assert _tensors(named) == {name.replace("mlp.gate.", "mlp.router."): shape for name, shape in _tensors(base).items()}
    assert count_flops(named, SIZES).forward == count_flops(base, SIZES).forward


SPARSEMIXER_LIB = """
name: lib
inputs:
  x: {shape: [B, S, 48]}
blocks:
  moe: {spec: lib.moe_sparsemixer, category: mlp}
nodes:
  - {name: mlp, block: moe, hidden: 48, intermediate: 40, experts: 6, mixer_eps: EPS}
"""


def test_lib_moe_sparsemixer_holds_the_router_and_experts(tmp_path):
    # PhiMoE's router as nodes (its values: test_moe_options.py's hand-computed sparsemixer)
    (tmp_path / "m.yaml").write_text(SPARSEMIXER_LIB.replace("EPS", "0.01"))
    assert _tensors(archgraph.load(str(tmp_path / "m.yaml"))) == {
        "mlp.router.weight": (6, 48), "mlp.experts.gate_up_proj": (6, 80, 48), "mlp.experts.down_proj": (6, 48, 40)}


def test_lib_moe_sparsemixer_picks_two(tmp_path):
    (tmp_path / "m.yaml").write_text(SPARSEMIXER_LIB.replace("EPS", "0.01").replace("mixer_eps", "top_k: 3, mixer_eps"))
    with pytest.raises(SpecError, match="the sparsemixer picks two experts: top_k must be 2"):
        archgraph.load(str(tmp_path / "m.yaml"))


def test_lib_moe_shared_expert_adds_qwen2_moes_gated_shared_expert(tmp_path):
    path = tmp_path / "shared.yaml"
    path.write_text(MOE_LIB.replace("lib.moe", "lib.moe_shared_expert").replace("NAME", "shared")
                    .replace("EXPERTS", "6").replace("TOP_K", "2").replace("NORMALIZE", "false").replace("ACT", "silu")
                    .replace("activation:", "shared_intermediate: 24, activation:"))
    model = archgraph.load(str(path))
    _, base = _moe_pair(tmp_path, MOES[6])   # 6 experts, top 2, not renormalised
    assert _tensors(model) == {**_tensors(base), "mlp.shared_expert.gate_proj.weight": (24, 48),
                               "mlp.shared_expert.up_proj.weight": (24, 48),
                               "mlp.shared_expert.down_proj.weight": (48, 24), "mlp.shared_expert_gate.weight": (1, 48)}
    # the routed experts are idle but for top_k; the shared expert and its gate are always active
    assert model.params().totals.active - base.params().totals.active == 3 * 24 * 48 + 48
