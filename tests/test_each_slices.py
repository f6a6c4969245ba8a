"""A repeated block call that slices an input per repetition (`in: {t: {from: table, each: 2}}`):
repetition i reads index start + i of it along that dim, the dim removed, so the body is the same
for every repetition and the repetitions stay one run (JAX's scan over `xs`; PyTorch's
`for i, layer in enumerate(layers): h = layer(h, table[:, :, i])`)."""
from __future__ import annotations

import pytest

import archgraph
from archgraph.load import load_text

SPEC = """\
name: each_demo
variables: {H: 8, L: 3, PL: 4, K: 0}
inputs:
  x: [B, S, H]
  table: [B, S, L, PL]
blocks:
  layer:
    args: [H, PL]
    inputs: [x, t]
    nodes:
      - {name: gate, op: linear, in: x, in_features: H, out_features: PL, bias: false}
      - {name: act, op: activation, fn: gelu}
      - {name: gated, op: mul, in: [act, t]}
      - {name: up, op: linear, in_features: PL, out_features: H, bias: false}
      - {name: out, op: add, in: [up, x]}
nodes:
  - {name: layers, block: layer, in: {x: x, t: {from: table, each: 2}}, repeat: L, start: K, H: H, PL: PL}
  - {name: norm, op: rms_norm, dim: H}
"""


def _load(text=SPEC, **values):
    return load_text(text, "each.yaml", values or None)


def test_the_repetitions_are_one_run_reading_a_slice_each():
    model = _load()
    calls = [n for n in model.graph.nodes.values() if hasattr(n, "body")]
    assert [(c.name, c.repeat, c.each) for c in calls] == [("layers", 3, (None, 2))]
    assert model.params().total == 3 * (8 * 4 + 4 * 8) + 8
    shapes = model.shapes(B=2, S=5)
    assert shapes.shape_of("layers.1.gated") == [(2, 5, 4)]
    assert shapes.outputs["norm"] == (2, 5, 8)
    run = shapes.run.nodes["layers"]
    assert [(s.count, s.run.inputs) for s in run] == [(3, ((2, 5, 8), (2, 5, 4)))]


def test_a_schedule_keeps_its_runs_and_each_reads_its_own_index():
    text = SPEC.replace("args: [H, PL]", "args: [H, PL, wide]").replace(
        "out_features: PL, bias: false}", "out_features: PL, bias: wide}").replace(
        "H: H, PL: PL}", "H: H, PL: PL, wide: \"i >= 2\"}").replace("L: 3", "L: 4")
    model = _load(text)
    calls = [n for n in model.graph.nodes.values() if hasattr(n, "body")]
    assert [(c.label, c.each) for c in calls] == [("layers.0..1", (None, 2)), ("layers.2..3", (None, 2))]


def test_torch_gives_repetition_i_its_slice_as_a_python_loop_does():
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    model = _load(K=0)
    module = to_module(model)
    torch.manual_seed(0)
    x, table = torch.randn(2, 5, 8), torch.randn(2, 5, 3, 4)
    with torch.no_grad():
        got = module(x=x, table=table)["norm"]
        params = dict(module.named_parameters())
        h = x
        for i in range(3):  # the loop the construct stands for
            gate = h @ params[f"layers.{i}.gate.weight"].T
            gated = torch.nn.functional.gelu(gate) * table[:, :, i]
            h = gated @ params[f"layers.{i}.up.weight"].T + h
        want = torch.nn.functional.rms_norm(h, (8,), params["norm.weight"], eps=1e-6)
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(got, module(x=x, table=table.flip(2))["norm"])  # the order of the slices counts


def test_start_numbers_the_slices_too():
    torch = pytest.importorskip("torch")
    from archgraph.torch import to_module
    model = _load(SPEC.replace("repeat: L", "repeat: L - 1"), K=1)  # layers.1, layers.2: table[:, :, 1], [:, :, 2]
    module = to_module(model)
    x, table = torch.randn(1, 2, 8), torch.randn(1, 2, 3, 4)
    with torch.no_grad():
        got = module(x=x, table=table)["norm"]
        changed = table.clone()
        changed[:, :, 0] = 100.0  # index 0 is read by no repetition
        assert torch.equal(got, module(x=x, table=changed)["norm"])
        changed[:, :, 2] = 100.0
        assert not torch.equal(got, module(x=x, table=changed)["norm"])


@pytest.mark.parametrize("edits, values, says", [
    ({"repeat: L": "repeat: L + 1"}, {},
     "each.yaml:17: node 'layers': input 't' [B, S, 3, 4] is sliced along dim 2 (each: 2), of size 3, but "
     "repetitions 0..3 read its indices up to 3\n  fix: repeat the call at most as many times as the dim is long "
     "(index start + repeat - 1 must exist), or slice another dim"),
    ({}, {"K": 1}, "node 'layers': input 't' [B, S, 3, 4] is sliced along dim 2 (each: 2), of size 3, but "
                   "repetitions 1..3 read its indices up to 3"),
    ({"repeat: L": "repeat: L + 1", "H: H, PL: PL}": "H: H, PL: PL, wide: \"i == 3\"}",
      "args: [H, PL]": "args: [H, PL, wide]", "out_features: PL, bias: false}": "out_features: PL, bias: wide}"}, {},
     "node 'layers.3': input 't' [B, S, 3, 4] is sliced along dim 2 (each: 2), of size 3, but repetition 3 reads "
     "its index 3"),
    ({"each: 2}": "each: 4}"}, {}, "each.yaml:17: node 'layers': input 't' is sliced along dim 4 (each: 4), but it "
                                   "has 4 dims [B, S, 3, 4]\n  fix: each: counts the input's dims from 0 (negative "
                                   "from the end): 0 to 3"),
    ({"each: 2}": "each: -5}"}, {}, "is sliced along dim -5 (each: -5), but it has 4 dims"),
])
def test_a_slice_past_the_input_is_refused_by_name(edits, values, says):
    text = SPEC
    for old, new in edits.items():
        text = text.replace(old, new)
    with pytest.raises(archgraph.SpecError) as info:  # at load: the shapes are checked at example sizes
        _load(text, **values)
    assert says in str(info.value)


@pytest.mark.parametrize("old, new, says", [
    ("repeat: L, start: K, ", "", "each.yaml:17: node 'layers': input 't' takes 'each: 2', which gives each repetition "
                                  "its own index of it, but this call of block 'layer' is not repeated\n"
                                  "  fix: add 'repeat: N', or read the input whole (t: {from: ...})"),
    ("x: x, t:", "x: {from: x, each: 0}, t:",
     "input 'x' takes 'each: 0', but it is the block's input 0, which its output 0 feeds in the next repetition"),
    ("each: 2}", "each: \"'two'\"}", "input 't': 'each' is the dim each repetition takes its index along, a whole "
                                     "number; received 'two'"),
    ("- {name: norm, op: rms_norm, dim: H}", "- {name: norm, op: rms_norm, dim: H, in: {x: {from: layers, each: 1}}}",
     "input 'x' takes 'each:', which slices a repeated block call's input per repetition; op 'rms_norm' is not a "
     "block call"),
    ("each: 2}", "each: 2, over: 1}", "unknown key 'over' in input 't'"),
])
def test_misuse_is_refused_by_name(old, new, says):
    with pytest.raises(archgraph.SpecError) as info:
        _load(SPEC.replace(old, new))
    assert says in str(info.value)


def test_the_cli_refuses_it_with_status_2_and_no_traceback(cli, tmp_path):
    spec = tmp_path / "each.yaml"
    spec.write_text(SPEC.replace("L: 3", "L: 5"))
    code, out, err = cli("shapes", str(spec))
    assert code == 0 and "layers.0..4  × 5" in out  # the table is L long: 5 slices fit
    spec.write_text(SPEC.replace("repeat: L", "repeat: L + 1"))
    code, out, err = cli("shapes", str(spec))
    assert code == 2 and "Traceback" not in err
    assert "repetitions 0..3 read its indices up to 3" in err


def test_tables_and_diagrams_show_the_slice(cli, tmp_path):
    spec = tmp_path / "each.yaml"
    spec.write_text(SPEC)
    code, out, _ = cli("shapes", str(spec))
    assert code == 0 and "x, table[:, :, i]" in out
    code, dot, _ = cli("render", str(spec))
    assert code == 0 and 'label=" [B, S, 4] = [:, :, i] "' in dot
    code, dot, _ = cli("render", str(spec), "--expand")
    assert code == 0 and all(f'label=" [B, S, 4] = [:, :, {i}] "' in dot for i in range(3))
    code, dot, _ = cli("render", str(spec), "--depth", "0")
    assert code == 0 and 'label=" [B, S, 3, 4][:, :, i] "' in dot
    grouped = SPEC.replace("args: [H, PL]", "args: [H, PL, wide]").replace(
        "out_features: PL, bias: false}", "out_features: PL, bias: wide}").replace(
        "H: H, PL: PL}", 'H: H, PL: PL, wide: "i >= 1", group: {stage: "1 if i < 1 else 2"}}')
    spec.write_text(grouped)
    code, dot, _ = cli("render", str(spec), "--depth", "0")  # each stage one box
    assert code == 0 and dot.count('-> "layers (group)" [label=" [B, S, 3, 4][:, :, i] "]') == 1
    assert dot.count('-> "layers#0 (group)" [label=" [B, S, 3, 4][:, :, i] "]') == 1


@pytest.mark.parametrize("fixture, runs", [
    ("gemma4_text-e4b-reconstructed", {"sliding window of 512": (20, 5), "full attention": (4, 4)}),
    ("gemma3n_text-e4b", {"sliding window of 512": (16, 5), "full attention": (4, 4)}),
])
def test_gemmas_per_layer_embeddings_keep_a_run_per_kind_of_layer(tmp_path, fixture, runs):
    """Each layer reads its slice of per_layer_inputs with each: 2, so the caches `memory` lists are a
    run per stretch of one kind of layer (a layer each, before: 20 runs of one sliding layer)."""
    import json
    from pathlib import Path
    from archgraph.passes.memory import estimate_memory
    record = json.loads((Path(__file__).parent / "data" / "hf" / f"{fixture}.json").read_text())
    config = tmp_path / "config.json"
    config.write_text(json.dumps(record["config"]))
    model = archgraph.load(str(config))
    assert model.params().total == record["expected_params"]  # transformers' count, as before
    found: dict = {}
    for entry in estimate_memory(model).kv_cache:
        layers, count = found.get(entry.rule, (0, 0))
        found[entry.rule] = (layers + entry.layers, count + 1)
    assert found == runs
