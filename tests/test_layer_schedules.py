"""The repetition index and layer schedules, lists in expressions, and `a|b` references: a stack
whose layers differ (dense then MoE, cross-attention every other layer, a per-layer dilation)
is one call, counted per distinct layer kind."""
from __future__ import annotations

import json

import pytest

import archgraph
from archgraph.load import load_text
from archgraph.passes.formula import param_formula

SCHEDULE = """\
name: sched
variables:
  H: 8
  L: 6
  K: 2
inputs:
  x: [B, S, H]
blocks:
  layer:
    args: [H, moe]
    nodes:
      - {name: attn, op: attention, in: x, hidden: H, heads: 2}
      - {name: mlp, op: gated_mlp, hidden: H, intermediate: 16, when: not moe}
      - {name: mlp, op: moe, hidden: H, intermediate: 4, experts: 4, when: moe}
      - {name: add, op: add, in: [mlp, x]}
nodes:
  - {name: layers, block: layer, in: x, repeat: L, H: H, moe: "i >= K"}
  - {name: norm, op: rms_norm, dim: H}
"""
ATTN = 4 * (8 * 8 + 8)          # q, k, v, o with biases
DENSE = ATTN + 3 * 16 * 8       # gate, up, down
MOE = ATTN + 4 * 8 + 4 * 8 * 8 + 4 * 8 * 4  # router, gate_up [4, 8, 8], down [4, 8, 4]


def test_the_index_makes_runs_of_layer_kinds():
    model = load_text(SCHEDULE, "sched.yaml")
    assert model.params().total == 2 * DENSE + 4 * MOE + 8
    runs = [(n.label, n.repeat, n.start) for n in model.graph.nodes.values() if hasattr(n, "body")]
    assert runs == [("layers.0..1", 2, 0), ("layers.2..5", 4, 2)]
    paths = [p for p, *_ in model.params().nodes()]
    assert "layers.1.mlp" in paths and "layers.2.mlp" in paths and "layers.5.add" in paths
    assert {p: n.op.op_name for p, n, *_ in model.params().nodes()}["layers.2.mlp"] == "moe"


def test_the_next_node_reads_the_last_run():
    shapes = load_text(SCHEDULE, "sched.yaml").shapes(B=1, S=3)
    assert shapes.shape_of("layers.5.add") == [(1, 3, 8)] and shapes.outputs["norm"] == (1, 3, 8)


@pytest.mark.parametrize("values, expected", [({"K": 0}, 6 * MOE), ({"K": 6}, 6 * DENSE), ({"L": 3, "K": 1},
                                                                                            DENSE + 2 * MOE)])
def test_a_schedule_follows_its_variables(values, expected):
    assert load_text(SCHEDULE, "sched.yaml", values).params().total == expected + 8


def test_counting_costs_the_distinct_layer_kinds_not_the_depth():
    model = load_text(SCHEDULE, "sched.yaml", {"L": 10_000, "K": 5_000})
    assert len(model.graph.nodes) == 3  # two runs and the norm
    assert model.params().total == 5_000 * DENSE + 5_000 * MOE + 8


def test_alternating_layers_by_the_index():
    text = SCHEDULE.replace('moe: "i >= K"', 'moe: "i % 2 == 1"')
    model = load_text(text, "sched.yaml")
    assert [n.label for n in model.graph.nodes.values() if hasattr(n, "body")] == \
        ["layers.0", "layers.1", "layers.2", "layers.3", "layers.4", "layers.5"]
    assert model.params().total == 3 * DENSE + 3 * MOE + 8


def test_a_list_variable_indexed_by_the_layer():
    text = SCHEDULE.replace('moe: "i >= K"', 'moe: "kinds[i] == \'moe\'"').replace(
        "  K: 2\n", "  K: 2\n  kinds: [\"'dense'\", \"'moe'\", \"'moe'\", \"'dense'\", \"'moe'\", \"'dense'\"]\n")
    assert load_text(text, "sched.yaml").params().total == 3 * DENSE + 3 * MOE + 8
    text = SCHEDULE.replace('moe: "i >= K"', 'moe: "i not in dense_layers"').replace("  K: 2\n",
                                                                                    "  dense_layers: [0, 5]\n")
    assert load_text(text, "sched.yaml").params().total == 2 * DENSE + 4 * MOE + 8


def test_the_formula_of_a_schedule_keeps_the_schedule_numbers():
    f = param_formula(load_text(SCHEDULE, "sched.yaml", symbolic=True))
    assert f.evaluate() == 2 * DENSE + 4 * MOE + 8
    assert {"L", "K"} <= f.frozen  # the runs' lengths are numbers: sweeps of L or K build each model


def test_sweep_of_a_scheduled_variable_builds_each_configuration(cli, tmp_path):
    spec = tmp_path / "sched.yaml"
    spec.write_text(SCHEDULE)
    code, out, err = cli("sweep", str(spec), "--vary", "K=0,6", "--json")
    assert code == 0, err
    assert [r["params"] for r in json.loads(out)["rows"]] == [6 * MOE + 8, 6 * DENSE + 8]


def test_index_errors():
    with pytest.raises(archgraph.SpecError, match="no argument of this call uses the index 'j'"):
        load_text(SCHEDULE.replace("repeat: L,", "repeat: L, index: j,"), "s.yaml")
    with pytest.raises(archgraph.SpecError, match="its arguments cannot depend on 'i'"):
        load_text(SCHEDULE.replace("repeat: L,", "repeat: L, shared: true,"), "s.yaml")
    with pytest.raises(archgraph.SpecError, match="index 6 is out of range for a list of 6"):
        load_text(SCHEDULE.replace('moe: "i >= K"', 'moe: "kinds[i + 1] == 1"').replace(
            "  K: 2\n", "  kinds: [0, 0, 0, 1, 1, 1]\n"), "s.yaml")


def test_a_named_index_starts_at_start():
    text = SCHEDULE.replace('repeat: L, H: H, moe: "i >= K"', 'repeat: L, start: 1, index: n, H: H, moe: "n > K"')
    model = load_text(text, "sched.yaml")
    assert [n.label for n in model.graph.nodes.values() if hasattr(n, "body")] == ["layers.1..2", "layers.3..6"]


ALTERNATIVES = """\
name: alt
variables: {C: 8, D: 16}
inputs:
  x: [B, C]
nodes:
  - {name: fc, op: linear, in: x, in_features: C, out_features: D}
  - {name: shortcut, op: linear, in: x, in_features: C, out_features: D, when: C != D}
  - {name: out, op: add, in: [fc, shortcut|x]}
"""


def test_a_reference_to_whichever_exists():
    assert load_text(ALTERNATIVES, "alt.yaml").params().total == 2 * (8 * 16 + 16)
    same = load_text(ALTERNATIVES, "alt.yaml", {"D": 8})
    assert same.params().total == 8 * 8 + 8
    assert [str(r) for r in same.graph.nodes["out"].inputs] == ["fc", "x"]
    with pytest.raises(archgraph.SpecError, match="none of 'shortcut', 'proj' is an input or an earlier node here"):
        load_text(ALTERNATIVES.replace("shortcut|x", "shortcut|proj"), "alt.yaml", {"D": 8})


TOWER = """\
name: tower
variables:
  W: 16
  L: 2
inputs:
  x: [B, N, W]
blocks:
  layer:
    args: [W]
    nodes:
      - {name: fc, op: linear, in: x, in_features: W, out_features: W}
      - {name: act, op: gelu}
nodes:
  - {name: layers, block: layer, in: x, repeat: L, W: W}
  - {name: pooled, op: mean, dim: 1}
outputs:
  last_hidden_state: layers
  pooler_output: pooled
"""
TOP = """\
name: two-towers
variables:
  D: 8
inputs:
  image: [B, P, 16]
  text: [B, T, D]
blocks:
  tower: {spec: tower.yaml}
  layer:                         # the same block name as the tower's own: each spec has its own blocks
    args: [D]
    nodes:
      - {name: proj, op: linear, in: x, in_features: 16, out_features: D}
nodes:
  - {name: vision, block: tower, in: image}
  - {name: language, block: tower, in: text, W: D, L: 3}
  - {name: projector, block: layer, in: "vision:last_hidden_state", D: D}
  - {name: joined, op: concat, in: [projector, language], dim: 1}
  - {name: pooled, op: add, in: ["vision:pooler_output", "language:1"]}
outputs:
  hidden: joined
"""


def _composed(tmp_path, top=TOP, tower=TOWER):
    (tmp_path / "tower.yaml").write_text(tower)
    (tmp_path / "top.yaml").write_text(top)
    return archgraph.load(str(tmp_path / "top.yaml"))


def test_a_spec_used_as_a_block_keeps_its_variables_blocks_and_outputs(tmp_path):
    model = _composed(tmp_path, TOP.replace('in: ["vision:pooler_output", "language:1"]',
                                            'in: ["vision:pooler_output", "vision:1"]'))
    names = [n for n, _ in model.params().tensors()]
    assert names[:4] == ["vision.layers.0.fc.weight", "vision.layers.0.fc.bias", "vision.layers.1.fc.weight",
                         "vision.layers.1.fc.bias"]
    assert "language.layers.2.fc.weight" in names and "projector.proj.weight" in names
    assert model.params().total == 2 * (16 * 16 + 16) + 3 * (8 * 8 + 8) + (16 * 8 + 8)
    assert model.shapes(B=2, P=5, T=7).outputs["hidden"] == (2, 12, 8)


def test_a_used_spec_refuses_what_it_does_not_have_and_its_own_ties(tmp_path):
    with pytest.raises(archgraph.SpecError, match="(?s)unknown key 'Wd' in a call of block 'tower'.*did you mean 'W'"):
        _composed(tmp_path, TOP.replace("W: D, L: 3", "Wd: D, L: 3"))
    with pytest.raises(archgraph.SpecError, match="(?s)'vision' has no output named 'pooled_output'.*did you "
                                                  "mean 'pooler_output'"):
        _composed(tmp_path, TOP.replace("vision:pooler_output", "vision:pooled_output"))
    tied = TOWER.replace("{name: pooled, op: mean, dim: 1}",
                         "{name: pooled, op: mean, dim: 1}\n  - {name: head, op: linear, in: pooled, in_features: W, "
                         "out_features: W, tie: layers.0.fc.weight}")
    with pytest.raises(archgraph.SpecError, match="a used spec cannot, since its paths depend on where it is used"):
        _composed(tmp_path, tower=tied)
    with pytest.raises(archgraph.SpecError, match="no spec file 'towr.yaml'"):
        _composed(tmp_path, TOP.replace("spec: tower.yaml", "spec: towr.yaml"))


def test_a_used_spec_checks_its_constraints_with_the_calls_arguments(tmp_path):
    checked = TOWER.replace("inputs:\n", "constraints:\n  - {check: W % 4 == 0, message: W must be a multiple of 4}\n"
                                          "  - N <= 64\ninputs:\n", 1)
    top = TOP.replace('in: ["vision:pooler_output", "language:1"]', 'in: ["vision:pooler_output", "vision:1"]')
    assert _composed(tmp_path, top, checked).params().total == 2 * (16 * 16 + 16) + 3 * (8 * 8 + 8) + (16 * 8 + 8)
    with pytest.raises(archgraph.SpecError, match="W must be a multiple of 4"):  # the language tower's W: D = 6
        _composed(tmp_path, top.replace("D: 8", "D: 6"), checked)


def test_a_used_spec_may_be_a_hugging_face_template_by_its_file_name(tmp_path):
    # CLIP's vision tower (specs/hf/clip_vision.yaml) as a block of a spec in another folder
    (tmp_path / "probe.yaml").write_text(
        "name: probe\ninputs:\n  pixel_values: [B, 3, 32, 32]\nblocks:\n  tower: {spec: clip_vision.yaml}\n"
        "nodes:\n  - {name: vision, block: tower, in: pixel_values, H: 16, L: 1, A: 2, I: 8, IS: 32, PS: 16}\n"
        "  - {name: probe, op: linear, in: 'vision:pooler_output', in_features: 16, out_features: 3}\n")
    model = archgraph.load(str(tmp_path / "probe.yaml"))
    # class embedding 16, conv 16*3*16*16, positions (4+1)*16, two norms, one layer, post norm, probe
    layer = 2 * 16 + 4 * (16 * 16 + 16) + (16 * 8 + 8) + (8 * 16 + 16) + 2 * 16
    assert model.params().total == 16 + 16 * 3 * 16 * 16 + 5 * 16 + 2 * 16 + layer + 2 * 16 + 16 * 3 + 3
    assert model.shapes(B=2).outputs["probe"] == (2, 3)


def test_a_scheduled_call_repeated_zero_times_passes_its_input_through():
    # a stage of depth 0 (Swin, ConvNeXt allow it): the call's arguments use the index, yet it
    # makes no repetition; the next node reads its input as if it had
    text = SCHEDULE.replace("repeat: L", "repeat: 0").replace('moe: "i >= K"', 'moe: "depths[i] > K"')
    text = text.replace("  K: 2\n", "  K: 2\n  depths: [1, 3]\n")
    model = load_text(text, "sched.yaml")
    assert model.params().total == 8  # the norm alone
    assert model.shapes(B=1, S=3).outputs["norm"] == (1, 3, 8)
STAGES = """\
name: stages
variables:
  widths: [8, 12]
  repeats: [1, 3]
  dm: 0.5
  scaled: "[round(w * dm) * 2 for w in widths]"          # 8, 12 (round halves to even: 2.0, 3.0)
  stage_of: "[s for s in range(len(repeats)) for j in range(repeats[s])]"
  first_of: "[j == 0 for s in range(len(repeats)) for j in range(repeats[s])]"
inputs:
  x: [B, 8]
blocks:
  block:
    args: [C_in, C_out]
    nodes:
      - {name: fc, op: linear, in: x, in_features: C_in, out_features: C_out}
nodes:
  - {name: blocks, block: block, in: x, repeat: "len(stage_of)",
     C_in: "widths[0] if i == 0 else scaled[stage_of[i]] if not first_of[i] else scaled[stage_of[i] - 1]",
     C_out: "scaled[stage_of[i]]"}
"""


def test_blocks_numbered_through_stages_by_lists_made_with_comprehensions():
    model = load_text(STAGES, "stages.yaml")
    assert model.variables["stage_of"] == [0, 1, 1, 1]
    assert model.variables["first_of"] == [True, True, False, False]
    tensors = dict((n, tuple(t.shape)) for n, t in model.params().tensors())
    assert tensors["blocks.0.fc.weight"] == (8, 8) and tensors["blocks.1.fc.weight"] == (12, 8)
    assert tensors["blocks.3.fc.weight"] == (12, 12)
    assert model.params().total == (8 * 8 + 8) + (12 * 8 + 12) + 2 * (12 * 12 + 12)


@pytest.mark.parametrize("text, value", [
    ("[16, 24, 32]", [16, 24, 32]),
    ("[w * 2 for w in ws if w > 1]", [4, 6]),
    ("[a * b for a in [1, 2] for b in range(a, 3)]", [1, 2, 4]),
    ("range(2, 9, 3)", [2, 5, 8]),
    ("[round(x) for x in [0.5, 1.5, 2.5, 2.6]]", [0, 2, 2, 3]),   # Python's round: halves to even
    ("ws + [9]", [1, 2, 3, 9]),
    ("sum([w for w in ws])", 6),
])
def test_list_expressions(text, value):
    from archgraph.expr import evaluate
    assert evaluate(text, {"ws": [1, 2, 3]}) == value


@pytest.mark.parametrize("text, says", [
    ("[a for (a, b) in ws]", "each 'for' of a list comprehension takes one name"),
    ("[w for w in 3]", "a comprehension's 'for' runs over a list; received 3"),
    ("range(1000000)", "range() of 1000000 items is too long (at most 100000)"),
    ("[a for a in range(1000) for b in range(1000)]", "the list comprehension takes more than 100000 steps"),
    ("range(1.5)", "range() takes whole numbers; received 1.5"),
    ("[len for len in ws]", "'len' is a function"),
])
def test_list_expression_errors(text, says):
    from archgraph.errors import ExprError
    from archgraph.expr import evaluate
    with pytest.raises(ExprError) as info:
        evaluate(text, {"ws": [1, 2, 3]})
    assert says in info.value.message


def test_a_comprehension_names_only_its_free_variables():
    from archgraph.expr import names
    assert names("[w * dm for w in widths if w > least]") == {"dm", "widths", "least"}
