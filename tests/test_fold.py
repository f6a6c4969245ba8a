"""Repetitions fold by what they compute (issue 38): a call whose arguments differ per repetition
(GPT-2's `layer: i`) is one run when the evaluated bodies are equal, and a schedule of kinds only
where the layers differ.  Counts, tensor names and FLOPs do not change."""
from __future__ import annotations

from pathlib import Path

import archgraph
from archgraph.graph import BlockNode
from archgraph.passes.flops import count_flops

ROOT = Path(__file__).resolve().parent.parent
SPECS = Path(__file__).parent / "data" / "specs"


def calls(graph, segment):
    return [n for n in graph.nodes.values() if isinstance(n, BlockNode) and n.segment == segment]


def test_gpt2_from_its_template_is_one_stack_of_twelve():
    model = archgraph.load(ROOT / "specs/hf/gpt2.yaml")
    (body,) = calls(model.graph, "transformer")
    (h,) = calls(body.body, "h")
    assert (h.label, h.repeat, h.start, h.scheduled) == ("h", 12, 0, False)
    assert model.params().total == 124_439_808


def test_layers_that_differ_stay_a_schedule_with_the_same_counts_and_names():
    folded = archgraph.load(ROOT / "specs/hf/gpt2.yaml")
    apart = archgraph.load(ROOT / "specs/hf/gpt2.yaml", {"inverse_layer": True})  # each layer scales by 1/(i+1)
    (body,) = calls(apart.graph, "transformer")
    assert [n.label for n in calls(body.body, "h")] == [f"h.{i}" for i in range(12)]
    paths = lambda m: [(p, n.op) for p, n, *_ in m.params().nodes() if n.op.op_name != "sdpa"]
    assert paths(folded) == paths(apart) and len(paths(folded)) == 4 + 12 * 12 + 2  # every node of every layer
    assert [p for p, _ in paths(folded)][-3:] == ["transformer.h.11.residual_2", "transformer.ln_f", "lm_head"]
    assert folded.params().total == apart.params().total == 124_439_808
    assert count_flops(folded, {"B": 1, "S": 64}).forward == count_flops(apart, {"B": 1, "S": 64}).forward


def test_an_encoder_decoder_given_each_layer_its_index_folds():
    model = archgraph.load(SPECS / "encdec.yaml")
    assert [(n.label, n.repeat) for n in model.graph.nodes.values() if isinstance(n, BlockNode)] == \
        [("encoder", 6), ("decoder", 6)]
    # encoder layer: attention 4 x (256^2 + 256), mlp 2 x 256 x 1024 + 1024 + 256, two norms 2 x 512
    # decoder layer: two attentions, the mlp, three norms; one embedding tied to the head
    assert model.params().total == 6 * 789_760 + 6 * 1_053_440 + 2_048_000


def test_a_vit_with_moe_every_other_layer_is_a_schedule_of_two_kinds():
    model = archgraph.load(SPECS / "vit_moe.yaml")
    runs = calls(model.graph, "layers")
    assert [n.label for n in runs] == [f"layers.{i}" for i in range(12)]
    assert len({id(n.body) for n in runs}) == 2 and runs[0].body is runs[2].body


def test_a_wavenet_is_eight_kinds_that_differ_in_dilation():
    model = archgraph.load(SPECS / "wavenet.yaml")
    runs = calls(model.graph, "layers")
    assert len(runs) == 16 and len({id(n.body) for n in runs}) == 8 and runs[3].body is runs[11].body
    # per layer: filter and gate 64 x 32 x 3 + 64, res 32 x 64 + 32, skip 64 x 64 + 64
    assert model.params().total == 16 * (2 * 6_208 + 2_080 + 4_160) + 64 + 64 + 4_160 + 16_640


def test_inputs_nothing_reads_are_not_drawn_and_size_no_header():
    from archgraph.passes.compare import summarize
    from archgraph.passes.explore import explore
    from archgraph.passes.memory import estimate_memory
    from archgraph.render.diagram import DiagramOptions, diagram_dot
    model = archgraph.load(ROOT / "specs/hf/gpt2.yaml", {"head": "base"})  # as from a config.json
    assert "encoder_hidden_states" in model.inputs and "T_enc" in model.inputs["encoder_attention_mask"].shape
    for options in (DiagramOptions(), DiagramOptions(depth=0), DiagramOptions(depth=1)):
        dot = diagram_dot(model, options)
        assert "input_ids" in dot and "attention_mask" in dot and "encoder_" not in dot and "T_enc" not in dot
    assert "<b>h × 12</b>" in diagram_dot(model, DiagramOptions(depth=1))
    assert summarize("gpt2", {}, load=lambda *_: model, probe=model).bindings == {"B": 1, "S": 512}
    assert estimate_memory(model).bindings == {"B": 1, "S": 512}
    tree = explore(model, {"B": 1, "S": 512})
    assert [i["name"] for i in tree["inputs"]] == ["input_ids", "attention_mask", "position_ids"]
    h = next(n for n in tree["graph"]["nodes"][0]["body"]["nodes"] if n["name"] == "h")
    assert h["reads"] == [True, False, True, False]  # x, encoder_hidden_states, mask, encoder_mask


def test_the_kinds_of_a_schedule_say_what_differs_between_them():
    from archgraph.passes.kinds import differences, schedules
    from archgraph.render.pattern import values_text
    (runs,) = schedules(archgraph.load(SPECS / "wavenet.yaml").graph)
    found = differences(runs)
    assert [(d.node, d.field) for d in found] == [("filter", "padding"), ("filter", "dilation"), ("gate", "padding"),
                                                  ("gate", "dilation")]
    assert found[1].values == (1, 2, 4, 8, 16, 32, 64, 128) and values_text(found[1].values) == "1, 2, 4, ..., 128"
    (runs,) = schedules(archgraph.load(SPECS / "vit_moe.yaml").graph)
    assert differences(runs) is None  # a dense and a MoE layer differ in their nodes
    neo = archgraph.load(ROOT / "specs/hf/gpt_neo.yaml")
    (runs,) = schedules(neo.graph.nodes["transformer"].body)
    assert [(d.node, d.field, d.values) for d in differences(runs)] == [("attn.attention", "window", (None, 256))]


def test_a_schedule_of_kinds_differing_only_in_arguments_is_drawn_as_one_stack():
    from archgraph.render.diagram import DiagramOptions, diagram_dot
    model = archgraph.load(SPECS / "wavenet.yaml")
    dot = diagram_dot(model, DiagramOptions(depth=1))
    assert "<b>layers.0..15 × 16</b>" in dot and "8 kinds alike but for dilation 1, 2, 4, ..., 128; padding 1, 2, 4, " \
        "..., 128" in dot
    assert dot.count("dilation=1, 2, 4, ..., 128") == 2 and dot.count("<b>filter</b>") == 1  # filter and gate, once
    assert "298.50 K params" in dot  # 16 x 18,656
    box = diagram_dot(model, DiagramOptions(depth=0))
    assert box.count("layers.0..15 × 16") == 1 and "layers.1" not in box
    every = diagram_dot(model, DiagramOptions(expand=True))
    assert every.count("<b>filter</b>") == 16  # --expand still draws every layer
    vit = diagram_dot(archgraph.load(SPECS / "vit_moe.yaml"), DiagramOptions(depth=1))
    assert "alike but for" not in vit and "repeat (6 × 2)" in vit  # two kinds of layer: a pattern of them


def test_a_repeating_schedule_is_shaded_by_every_layer_it_stands_for():
    import re
    from archgraph.render.diagram import DiagramOptions, diagram_dot
    from archgraph.render.palette import share_bin
    model = archgraph.load(SPECS / "vit_moe.yaml")
    dot = diagram_dot(model, DiagramOptions(depth=1))
    fill = re.search(r'"layers\.1\.moe" \[label=<.*?> fillcolor="(#[0-9a-f]+)"', dot).group(1)
    share = 6 * 3_540_480 / model.params().total  # six MoE layers (router, gate_up, down): 85 % of all (one: 14 %)
    assert round(share, 2) == 0.85 and fill == share_bin(share, True)[1] != share_bin(share / 6, True)[1]


def test_memory_names_the_layers_of_each_cache_rule_not_runs():
    # GPT-Neo alternates global and local layers: one stack of two kinds, each rule every other layer
    from archgraph.passes.memory import estimate_memory
    from archgraph.render.memory import cache_rows
    neo = archgraph.load(ROOT / "specs/hf/gpt_neo.yaml")
    rows = cache_rows(estimate_memory(neo, {"B": 1, "S": 2048}).kv_cache)
    per_token = 2 * 2048 * 2  # keys and values of 2,048 channels, bf16 (the 1.3B's 24 layers)
    assert rows == [
        ("cache, full attention: 12 of transformer.h (0, 2, 4, ..., 22), attn.attention "
         "(4,096 values/token, 2,048 tokens)", 12 * 2048 * per_token),
        ("cache, sliding window of 256: 12 of transformer.h (1, 3, 5, ..., 23), attn.attention "
         "(4,096 values/token, 256 tokens)", 12 * 256 * per_token),
    ]
