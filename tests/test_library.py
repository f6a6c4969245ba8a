"""The standard library of blocks (specs/lib/, issue 40): a spec names one as `lib.NAME`, and
lib.attention, written in primitives, is the `attention` op's computation: the same tensors, FLOPs,
cache, what training keeps and outputs, for a grid of settings."""
from __future__ import annotations

import itertools
import re

import pytest

import archgraph
from archgraph import SpecError
from archgraph.passes.flops import count_flops
from archgraph.passes.memory import estimate_memory
from archgraph.passes.plan_activations import activation_profile
from archgraph.spec.sources import library_blocks

HEAD = """
name: NAME
variables: {H: 48, A: 6, KV: KVH, D: 8}
inputs:
  x: {shape: [B, S, H]}
  mask: {shape: [B, S], dtype: int64, default: ones}
"""

OP = HEAD + """
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: D}
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
    rotary: ROTARY
"""

LIB = HEAD + """
blocks:
  attention: {spec: lib.attention, category: attention}
nodes:
  - {name: rot, op: rotary_embedding, in: x, head_dim: D}
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
    rotary: "'ROTARY'"
"""

GRID = [dict(zip(("KVH", "QKV_BIAS", "OUT_BIAS", "CAUSAL", "ROTARY"), values)) for values in itertools.product(
    ("6", "2", "1"), ("false", "true"), ("false", "true"), ("true", "false"), ("half", "interleaved"))]
SIZES = {"B": 2, "S": 7}


def _pair(tmp_path, settings: dict) -> tuple:
    """The model with the attention op and with lib.attention, at `settings`."""
    out = []
    for name, text in (("op", OP), ("lib", LIB)):
        for key, value in settings.items():
            text = text.replace(key, value)
        path = tmp_path / f"{name}.yaml"
        path.write_text(text.replace("NAME", name))
        out.append(archgraph.load(str(path)))
    return tuple(out)


def _tensors(model) -> dict:
    return {path: tuple(row.shape) for path, row in model.params().tensors()}


@pytest.mark.parametrize("settings", GRID, ids=lambda s: "-".join(s.values()))
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
    for eager in (False, True):   # what training keeps, with a fused kernel and eager attention
        kept = [activation_profile(m, SIZES, eager).total() for m in (op, lib)]
        assert kept[1].kept == kept[0].kept and kept[1].flops == kept[0].flops and kept[1].comm == kept[0].comm
        assert kept[1].core_flops == kept[0].core_flops


def test_memory_activations_count_the_outputs_the_op_hid(tmp_path):
    # memory's rough activation figure sums every op's output: the parts of lib.attention are ops, so it
    # also counts the projections' outputs, the turned queries and keys and the core's output
    op, lib = _pair(tmp_path, GRID[16])   # kv_heads 2
    b, s, a, kv, d = 2, 7, 6, 2, 8
    parts = b * s * d * (a + kv + kv) + b * s * d * (a + kv) + b * s * a * d
    assert estimate_memory(lib, SIZES).activation_values - estimate_memory(op, SIZES).activation_values == parts


@pytest.mark.parametrize("settings", [GRID[0], GRID[9], GRID[21], GRID[30], GRID[42], GRID[47]],
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
    path.write_text(LIB.replace("lib.attention", "lib.atention").replace("NAME", "m").replace("KVH", "6")
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
