"""The spec language, feature by feature, with exact counts worked out by hand."""
from __future__ import annotations

import json
import re

import pytest

import archgraph
from archgraph.dims import to_json
from archgraph.ops import REGISTRY
from archgraph.load import load_text

TOY = """\
name: toy
variables:
  H: 8
  L: 3
  I: 4 * H
  heads: 2
  head_dim: H / heads
inputs:
  ids: {shape: [B, S], dtype: int64}
blocks:
  ffn:
    args: {H: null, I: null, act: gelu}
    category: mlp
    nodes:
      - {name: norm, op: layer_norm, in: x, normalized_shape: H}
      - {name: up, op: linear, in_features: H, out_features: I}
      - {name: act, op: gelu, when: act == 'gelu'}
      - {name: down, op: linear, in_features: I, out_features: H}
      - {name: add, op: add, in: [down, x]}
  layer:
    args: [H, I]
    nodes:
      - {name: attn, op: attention, in: x, hidden: H, heads: heads, head_dim: head_dim}
      - {name: ffn, block: ffn, in: attn, H: H, I: I}
nodes:
  - {name: embed, op: embedding, in: ids, num_embeddings: 100, embedding_dim: H}
  - {name: layers, block: layer, repeat: L, H: H, I: I}
  - {name: head, op: linear, in_features: H, out_features: 100, bias: false, tie: embed.weight}
"""

# by hand: embedding 100*8 = 800; attention 4*(8*8+8) = 288; ffn: norm 16 + up 8*32+32 = 288 + down 32*8+8 = 264
LAYER = 288 + 16 + 288 + 264


def build(text: str, settings=None):
    return load_text(text, "toy.yaml", settings)


def test_counts_blocks_nested_blocks_repeat_and_tie():
    report = build(TOY).params()
    assert report.total == 800 + 3 * LAYER
    assert report.totals.tied == 800
    assert dict(report.totals.by_category) == {"embedding": 800, "attention": 3 * 288, "norm": 3 * 16,
                                               "mlp": 3 * (288 + 264), "head": 0}  # head: tied
    (layers,) = report.blocks
    assert (layers.path, layers.repeat, layers.per_repetition.total, layers.total.total) == \
        ("layers", 3, LAYER, 3 * LAYER)
    assert [c.path for c in layers.children] == ["layers.*.ffn"]


def test_node_paths_are_expanded_and_unique():
    paths = [p for p, *_ in build(TOY).params().nodes()]
    assert len(paths) == len(set(paths)) == 1 + 3 * 6 + 1
    assert "layers.2.ffn.up" in paths and "layers.0.attn" in paths


def test_variables_can_be_overridden_and_recompute_dependents():
    report = build(TOY, {"H": 16, "L": 1}).params()
    # H=16 makes I=64 and head_dim=8: attention 4*(16*16+16), ffn 32 + (16*64+64) + (64*16+16)
    assert report.total == 100 * 16 + 4 * (16 * 16 + 16) + 32 + (16 * 64 + 64) + (64 * 16 + 16)


def test_symbolic_and_concrete_shapes():
    model = build(TOY)
    shapes = model.shapes()
    assert [to_json(d) for d in shapes.shape_of("layers.1.ffn.up")[0]] == ["B", "S", 32]
    assert shapes.shape_of("head") == [(shapes.inputs["ids"][0], shapes.inputs["ids"][1], 100)]
    assert model.shapes(B=2, S=5).shape_of("head") == [(2, 5, 100)]


def test_when_switches_nodes_off():
    model = build(TOY.replace("I: I}\n", "I: I, act: none}\n", 1).replace(
        "args: {H: null, I: null, act: gelu}", "args: {H: null, I: null, act: gelu}"))
    paths = [p for p, *_ in model.params().nodes()]
    assert "layers.0.ffn.act" not in paths and "layers.0.ffn.up" in paths


def test_shared_repetitions_count_once_and_say_so():
    report = build(TOY.replace("repeat: L,", "repeat: L, shared: true,")).params()
    assert report.total == 800 + LAYER
    assert report.totals.tied == 800 + 2 * LAYER
    rows = {p: (new, tensors) for p, _, new, tensors in report.nodes()}
    assert rows["layers.0.ffn.up"][0] == 288
    new, tensors = rows["layers.2.ffn.up"]
    assert new == 0 and tensors[0].tied_to == "layers.0.ffn.up.weight"
    names = [n for n, _ in report.tensors()]
    assert "layers.ffn.up.weight" in names and len(names) == 1 + 14 + 1  # embed, one layer (8 attention, 6 ffn), head


def test_frozen_block_and_buffers_are_reported_apart():
    text = TOY.replace("repeat: L,", "repeat: L, trainable: false,") + \
        "  - {name: bn, op: batch_norm, in: feat, num_features: S0}\n"
    text = text.replace("  H: 8\n", "  H: 8\n  S0: 7\n").replace("inputs:\n", "inputs:\n  feat: [B, S0, 5]\n")
    model = build(text)
    report = model.params()
    assert report.total == 800 + 3 * LAYER + 2 * 7
    assert report.totals.non_trainable == 3 * LAYER
    assert report.totals.buffers == 7 + 7 + 1  # running_mean, running_var, num_batches_tracked


def test_category_override_on_a_node_beats_the_block_and_ops():
    text = TOY.replace("{name: up, op: linear,", "{name: up, op: linear, category: expansion,")
    cats = build(text).params().totals.by_category
    assert cats["expansion"] == 3 * 288 and cats["mlp"] == 3 * 264 and cats["norm"] == 3 * 16


HEADS = """\
name: heads
variables: {H: 8, V: 10}
inputs:
  ids: {shape: [B, S], dtype: int64}
blocks:
  two_layer:
    nodes:
      - {name: dense, op: linear, in: x, in_features: H, out_features: H}
      - {name: norm, op: layer_norm, normalized_shape: H}
      - {name: out_proj, op: linear, in_features: H, out_features: 2}
  pooled:
    category: pooler
    nodes:
      - {name: dense, op: linear, in: x, in_features: H, out_features: H}
nodes:
  - {name: embed, op: embedding, in: ids, num_embeddings: V, embedding_dim: H}
  - {name: fc, op: linear, in_features: H, out_features: H}
  - {name: lm_head, op: linear, in: fc, in_features: H, out_features: V, bias: false}
  - {name: classifier, block: two_layer, in: fc}
  - {name: cls.score, op: linear, in: fc, in_features: H, out_features: 3, category: scoring}
  - {name: qa_head, block: pooled, in: fc}
  - {name: body, block: two_layer, in: fc}
outputs:
  logits: lm_head
  labels: classifier
  scores: cls.score
  pooled: qa_head
  rest: body
"""


def test_a_node_named_like_a_head_is_categorised_head():
    # lm_head 8*10 = 80; the classifier block's linears 8*8+8 = 72 and 8*2+2 = 18 (its norm stays a norm);
    # a category of the node's own (scoring) or of the block's definition (pooler) wins over the name;
    # fc and the same block under another name (body) stay linear
    cats = build(HEADS).params().totals.by_category
    assert dict(cats) == {"embedding": 80, "linear": 72 + 72 + 18, "head": 80 + 72 + 18, "norm": 2 * 16,
                          "scoring": 27, "pooler": 72}


def test_repeat_start_and_keyword_inputs():
    text = TOY.replace("{name: layers, block: layer, repeat: L, H: H, I: I}",
                       "{name: layers, block: layer, in: {x: embed}, repeat: L, start: 4, H: H, I: I}")
    paths = [p for p, *_ in build(text).params().nodes()]
    assert "layers.4.attn" in paths and "layers.6.ffn.down" in paths and "layers.0.attn" not in paths


def test_multiple_inputs_and_outputs_with_output_indices():
    text = """\
name: two-in-two-out
inputs:
  a: [B, 12]
  b: [B, 4]
nodes:
  - {name: parts, op: split, in: a, dim: 1, sizes: [4, 8]}
  - {name: gate, op: mul, in: ["parts:0", b]}
  - {name: rest, op: linear, in: "parts:1", in_features: 8, out_features: 4}
outputs:
  gated: gate
  projected: rest
"""
    shapes = build(text).shapes(B=3)
    assert shapes.outputs == {"gated": (3, 4), "projected": (3, 4)}
    assert shapes.shape_of("parts") == [(3, 4), (3, 8)]
    with pytest.raises(archgraph.SpecError, match=r"asks for output 2 of 'parts', which has 2 output"):
        build(text.replace('"parts:1"', '"parts:2"')).shapes(B=3)


def test_extends_overrides_variables(tmp_path):
    (tmp_path / "base.yaml").write_text(TOY)
    (tmp_path / "wide.yaml").write_text("extends: base.yaml\nname: wide\nvariables:\n  L: 1\n")
    model = archgraph.load(tmp_path / "wide.yaml")
    assert model.name == "wide" and model.params().total == 800 + LAYER


def test_tie_with_wrong_shape_is_an_error():
    text = TOY.replace("out_features: 100, bias: false, tie: embed.weight", "out_features: 99, bias: false, "
                       "tie: embed.weight")
    with pytest.raises(archgraph.SpecError) as info:
        build(text)
    assert info.value.node == "head" and info.value.loc.line == 28
    assert "tie: 'weight' has shape [99, 8] but 'embed.weight' has shape [100, 8]" in str(info.value)


def test_tie_to_a_missing_tensor_suggests_one():
    with pytest.raises(archgraph.SpecError, match=r"(?s)node 'embed' \(embedding\) has no tensor 'weights'.*did you mean 'weight'"):
        build(TOY.replace("tie: embed.weight", "tie: embed.weights"))


def test_unknown_input_keyword_and_block_input():
    with pytest.raises(archgraph.SpecError, match=r"(?s)op 'attention' has no input 'key'.*its inputs: x, kv, bias, rope, k, v"):
        build(TOY.replace("{name: attn, op: attention, in: x,", "{name: attn, op: attention, in: {x: x, key: x},"))
    with pytest.raises(archgraph.SpecError, match=r"op 'attention' has no input 'ky'.*\n  fix: did you mean 'k'\?"):
        build(TOY.replace("{name: attn, op: attention, in: x,", "{name: attn, op: attention, in: {x: x, ky: x},"))


def test_variable_cycle_is_an_error():
    with pytest.raises(archgraph.SpecError, match=r"variables depend on each other in a cycle: H -> I -> H"):
        build(TOY.replace("  H: 8\n", "  H: I / 4\n"))


def test_repeated_block_analysis_does_not_grow_with_depth(monkeypatch):
    calls = []
    original = REGISTRY["linear"].infer_shape

    def counting(self, x):
        calls.append(1)
        return original(self, x)

    monkeypatch.setattr(REGISTRY["linear"], "infer_shape", counting)
    model = build(TOY, {"L": 10})  # loading checks the shapes once (symbolic B, S)
    calls.clear()
    model.shapes(B=2, S=4)
    ten = len(calls)
    model = build(TOY, {"L": 1000})
    calls.clear()
    report = model.shapes(B=2, S=4)
    assert len(calls) == ten == 3  # up, down, head: one evaluation of the layer body
    assert report.shape_of("layers.999.ffn.down") == [(2, 4, 8)]


def test_builder_api_gives_the_same_model_as_yaml():
    b = archgraph.ModelBuilder("toy", H=8, L=3, I="4 * H", heads=2, head_dim="H / heads")
    b.input("ids", ["B", "S"], dtype="int64")
    with b.block("ffn", args={"H": None, "I": None, "act": "gelu"}, category="mlp") as ffn:
        ffn.node("norm", "layer_norm", inputs="x", normalized_shape="H")
        ffn.node("up", "linear", in_features="H", out_features="I")
        ffn.node("act", "gelu", when="act == 'gelu'")
        ffn.node("down", "linear", in_features="I", out_features="H")
        ffn.node("add", "add", inputs=["down", "x"])
    with b.block("layer", args=["H", "I"]) as layer:
        layer.node("attn", "attention", inputs="x", hidden="H", heads="heads", head_dim="head_dim")
        layer.call("ffn", "ffn", inputs="attn", H="H", I="I")
    b.node("embed", "embedding", inputs="ids", num_embeddings=100, embedding_dim="H")
    b.call("layers", "layer", repeat="L", H="H", I="I")
    b.node("head", "linear", in_features="H", out_features=100, bias=False, tie="embed.weight")
    built, yaml_model = b.build().params(), build(TOY).params()
    assert built.total == yaml_model.total and built.totals.tied == yaml_model.totals.tied
    assert [p for p, *_ in built.nodes()] == [p for p, *_ in yaml_model.nodes()]


def test_builder_errors_point_at_the_python_line():
    b = archgraph.ModelBuilder("bad", H=8)
    b.input("x", ["B", "H"])
    b.node("fc", "linaer", in_features="H", out_features=2); line = __import__("inspect").currentframe().f_lineno
    with pytest.raises(archgraph.SpecError) as info:
        b.build()
    assert info.value.loc.line == line and info.value.loc.file == __file__
    assert "unknown op 'linaer'" in str(info.value) and "did you mean 'linear'" in str(info.value)


def test_params_json_has_the_documented_keys(cli):
    code, out, err = cli("params", "bert-base-uncased", "--json")
    data = json.loads(out)
    assert code == 0 and err == ""
    assert (data["total"], data["trainable"], data["non_trainable"]) == (109482240, 109482240, 0)
    assert data["by_category"] == {"mlp": 56669184, "attention": 28348416, "embedding": 23835648,
                                   "head": 590592, "norm": 38400}
    paths = [n["path"] for n in data["nodes"]]
    assert len(paths) == len(set(paths))
    node = next(n for n in data["nodes"] if n["path"] == "encoder.layer.3.intermediate.dense")
    assert node["op"] == "linear" and node["params"] == 768 * 3072 + 3072
    assert sum(n["params"] for n in data["nodes"]) == data["total"]


def test_shapes_json_with_set(cli):
    code, out, _ = cli("shapes", "gpt2", "--json", "--set", "B=2", "--set", "S=128")
    data = json.loads(out)
    assert code == 0 and data["bindings"] == {"B": 2, "S": 128}
    node = next(n for n in data["nodes"] if n["path"] == "transformer.h.11.attn.c_attn")
    assert node == {"path": "transformer.h.11.attn.c_attn", "op": "linear", "outputs": [[2, 128, 2304]]}
    split = next(n for n in data["nodes"] if n["path"] == "transformer.h.0.attn.qkv")
    assert split["outputs"] == [[2, 128, 768]] * 3
    code, out, _ = cli("shapes", "gpt2", "--json")
    assert json.loads(out)["outputs"]["logits"] == ["B", "S", 50257]


def test_set_overrides_a_variable(cli):
    code, out, _ = cli("params", "gpt2", "--json", "--set", "L=2")
    # embeddings 50257*768 + 1024*768, final norm 1536, 2 layers of 7,087,872
    assert json.loads(out)["total"] == 50257 * 768 + 1024 * 768 + 1536 + 2 * 7087872


def test_params_table_shows_repeated_blocks_once(cli):
    code, out, _ = cli("params", "bert-base-uncased")
    assert code == 0
    assert out.count("intermediate.dense") == 1
    assert "encoder.layer  × 12" in out and "(12 × 7,087,872)" in out
    assert "109,482,240" in out and "51.8%" in out


@pytest.mark.parametrize("shared", [False, True])
def test_zero_repetitions_count_nothing(shared, cli, tmp_path):
    text = TOY.replace("repeat: L,", f"repeat: 0, shared: {str(shared).lower()},")
    report = build(text).params()
    assert report.total == 800 and report.totals.tied == 800  # embedding; the head is tied to it
    assert report.blocks[0].total.total == 0 and report.blocks[0].total.tied == 0
    path = tmp_path / "zero.yaml"
    path.write_text(text)
    code, out, _ = cli("params", str(path))
    assert code == 0 and "layers  × 0" in out
    assert next(line for line in out.splitlines() if "layers  × 0" in line).split("│")[4].strip() == "0"


PATHS = """\
name: paths
variables:
  head: "'lm'"
  body: "'' if head == 'base' else 'model'"
inputs:
  ids: {shape: [B, S], dtype: int64}
blocks:
  core:
    nodes:
      - {name: embed, op: embedding, in: x, num_embeddings: 10, embedding_dim: 4}
      - {name: layers, block: layer, repeat: 2}
  layer:
    nodes:
      - {name: ln, op: layer_norm, in: x, normalized_shape: 4}
nodes:
  - {name: model, block: core, path: body, in: ids}
  - {name: lm_head, op: linear, in_features: 4, out_features: 10, bias: false,
     tie: model.embed.weight, when: "head == 'lm'"}
"""


def test_block_path_names_tensors_and_ties_follow_it():
    lm = build(PATHS)
    assert [n for n, _ in lm.params().tensors()] == [
        "model.embed.weight", "model.layers.0.ln.weight", "model.layers.0.ln.bias",
        "model.layers.1.ln.weight", "model.layers.1.ln.bias", "lm_head.weight"]
    assert lm.params().total == 10 * 4 + 2 * 8
    base = build(PATHS, {"head": "base"})
    assert [n for n, _ in base.params().tensors()] == [
        "embed.weight", "layers.0.ln.weight", "layers.0.ln.bias", "layers.1.ln.weight", "layers.1.ln.bias"]
    assert [p for p, *_ in base.params().nodes()] == ["embed", "layers.0.ln", "layers.1.ln"]
    assert [p for p, _, _ in base.shapes().nodes()] == ["embed", "layers.0.ln", "layers.1.ln"]


def test_tie_into_a_block_without_a_path_segment():
    text = PATHS.replace("tie: model.embed.weight", "tie: embed.weight").replace("head: \"'lm'\"", "head: \"'x'\"")
    text = text.replace("body: \"'' if head == 'base' else 'model'\"", "body: \"''\"").replace(
        "when: \"head == 'lm'\"", "when: true")
    report = build(text).params()
    assert report.total == 10 * 4 + 2 * 8
    assert report.totals.tied == 40


@pytest.mark.parametrize("path, message", [
    ("3", "'path' must give a dotted name or '' (no segment); received 3"),
    ("\"'a b'\"", "'path' must give a dotted name or '' (no segment); received 'a b'"),
])
def test_bad_block_path(path, message):
    with pytest.raises(archgraph.SpecError, match=re.escape(message)):
        build(PATHS.replace("path: body", f"path: {path}"))


def test_repeated_block_needs_a_path_segment():
    with pytest.raises(archgraph.SpecError, match="a repeated block needs a path segment"):
        build(PATHS.replace("{name: layers, block: layer, repeat: 2}", "{name: layers, block: layer, repeat: 2, path: \"''\"}"))


OPTIONAL_INPUT = """\
name: optional
variables:
  gated: false
inputs:
  x: {shape: [B, 8]}
  g: {shape: [B, 8]}
blocks:
  mix:                     # reads g only when gated
    args: [gated]
    inputs: [x, g]
    nodes:
      - {name: proj, op: linear, in: x, in_features: 8, out_features: 8}
      - {name: gate, op: mul, in: [proj, g], when: gated}
  outer:                   # passes g on to mix
    args: [gated]
    inputs: [x, g]
    nodes:
      - {name: inner, block: mix, in: [x, g], gated: gated}
nodes:
  - {name: body, block: outer, in: x, gated: gated}
"""


def test_a_call_may_leave_out_inputs_its_body_never_reads():
    model = build(OPTIONAL_INPUT)  # outer passes g to mix, which does not read it: `in: x` is enough
    assert model.params().total == 72
    assert [to_json(d) for d in model.shapes().shape_of("body.inner.proj")[0]] == ["B", 8]
    keyword = build(OPTIONAL_INPUT.replace("in: x, gated", "in: {x: x}, gated"))
    assert keyword.params().total == 72
    with pytest.raises(archgraph.SpecError, match=re.escape(
            "block 'outer' takes 2 input(s) (x, g); 'in' gives 1")):
        build(OPTIONAL_INPUT, {"gated": True})
    with pytest.raises(archgraph.SpecError, match="block 'outer' needs the input\\(s\\) g"):
        build(OPTIONAL_INPUT.replace("in: x, gated", "in: {x: x}, gated"), {"gated": True})


def test_a_module_runs_without_the_inputs_its_blocks_never_read():
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    module = to_module(build(OPTIONAL_INPUT))
    assert module.input_names == ("x",)
    x = torch.randn(2, 8)
    out = next(iter(module(x=x).values()))
    weight, bias = module.state_dict()["body.inner.proj.weight"], module.state_dict()["body.inner.proj.bias"]
    assert torch.allclose(out, x @ weight.T + bias)
