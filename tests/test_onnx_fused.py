"""import-onnx of opset 23's fused operators (Attention, RotaryEmbedding) and ScatterND, in files made
with onnx.helper: each becomes archgraph ops (sdpa; the rotation op by op; index_put) whose `to_module`
computes onnxruntime's outputs; what these ops do not compute is refused by name."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from onnx import TensorProto as T, helper as H, numpy_helper  # noqa: E402

from archgraph.errors import ArchgraphError  # noqa: E402
from archgraph.fromonnx.verify import same_outputs  # noqa: E402
from archgraph.load import _onnx_model, onnx_spec  # noqa: E402
from archgraph.torch import to_module  # noqa: E402

B, S = "batch", "sequence"


def vi(name, dims, kind=T.FLOAT):
    return H.make_tensor_value_info(name, kind, dims)


def saved(tmp_path, node, inputs, inits=(), opset=23):
    graph = H.make_graph([node], "g", inputs, [H.make_tensor_value_info("y", T.FLOAT, None)], list(inits))
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", opset)])
    model.ir_version = 10
    path = tmp_path / f"{node.op_type}.onnx"
    onnx.save(model, str(path))
    return path


def tables(rows=16, half=3):
    rng = np.random.default_rng(0)
    return [numpy_helper.from_array(rng.standard_normal((rows, half)).astype(np.float32), n)
            for n in ("cos_cache", "sin_cache")]


def matches(path, positions: int | None = None) -> str:
    """The checked spec's text; its module computes onnxruntime's outputs at sizes other than the check's."""
    made = onnx_spec(path, build=to_module)
    with _onnx_model(path, None) as (again, spec):
        if positions:
            again.converter.id_limit = positions  # position ids over the whole table, not only below 2
        same_outputs(again, spec, to_module, {s: 3 for s in again.converter.sizes.values()})
    return str(made.text)


CASES = {
    "gqa_causal": (H.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1),
                   [vi("q", [B, 4, S, 8]), vi("k", [B, 2, S, 8]), vi("v", [B, 2, S, 8])],
                   "op: sdpa, in: [q, k, v], heads: 4, kv_heads: 2, causal: true"),
    "flat_mask_scale": (H.make_node("Attention", ["q", "k", "v", "m"], ["y"], q_num_heads=4, kv_num_heads=4, scale=0.3),
                        [vi("q", [B, S, 32]), vi("k", [B, S, 32]), vi("v", [B, S, 32]), vi("m", [S, S])],
                        "heads: 4, scale: 0.3"),
    "bool_mask": (H.make_node("Attention", ["q", "k", "v", "m"], ["y"]),
                  [vi("q", [B, 2, S, 8]), vi("k", [B, 2, S, 8]), vi("v", [B, 2, S, 8]), vi("m", [B, 1, S, S], T.BOOL)],
                  "op: sdpa, in: [q, k, v, m], heads: 2"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_attention_is_sdpa(tmp_path, case):
    node, inputs, expected = CASES[case]
    assert expected in matches(saved(tmp_path, node, inputs))


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("flat", [False, True], ids=["heads_first", "flat"])
def test_rotary_embedding_partial_and_interleaved(tmp_path, interleaved, flat):
    x = vi("x", [B, S, 16]) if flat else vi("x", [B, 2, S, 8])
    node = H.make_node("RotaryEmbedding", ["x", "cos_cache", "sin_cache", "pos"], ["y"], interleaved=interleaved,
                       rotary_embedding_dim=6, **({"num_heads": 2} if flat else {}))
    text = matches(saved(tmp_path, node, [x, vi("pos", [B, S], T.INT64)], tables()), positions=16)
    assert "op: index, in: [constant, pos], dims: [0]" in text  # the table (a constant) gathered at the positions
    assert ("step: 2" in text) == bool(interleaved)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_nd_is_index_put(tmp_path, reduction):
    index = numpy_helper.from_array(np.array([[1], [3]], dtype=np.int64), "idx")
    node = H.make_node("ScatterND", ["x", "idx", "u"], ["y"], reduction=reduction)
    text = matches(saved(tmp_path, node, [vi("x", [5, B]), vi("u", [2, B])], [index], opset=18))
    assert f"op: index_put, in: [x, u, select], dims: [0], accumulate: {str(reduction == 'add').lower()}" in text


@pytest.mark.parametrize("node,inputs,why", [
    (H.make_node("Attention", ["q", "k", "v"], ["y"], softcap=30.0),
     [vi("q", [B, 2, S, 8]), vi("k", [B, 2, S, 8]), vi("v", [B, 2, S, 8])], "softcap 30.0 (sdpa has none)"),
    (H.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "pk2", "pv2"]),
     [vi("q", [B, 2, S, 8]), vi("k", [B, 2, S, 8]), vi("v", [B, 2, S, 8]), vi("pk", [B, 2, 3, 8]), vi("pv", [B, 2, 3, 8])],
     "it reads a key cache (past_key)"),
    (H.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="mul"),
     [vi("x", [5, 4]), vi("i", [2, 1], T.INT64), vi("u", [2, 4])], "ScatterND with reduction 'mul'"),
])
def test_what_they_do_not_compute_is_refused(tmp_path, node, inputs, why):
    with pytest.raises(ArchgraphError) as err:
        onnx_spec(saved(tmp_path, node, inputs), build=to_module)
    assert f"cannot import node '' ({node.op_type}): {why}" in str(err.value)
