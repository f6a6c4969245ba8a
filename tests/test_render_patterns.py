"""A layer schedule whose runs repeat with a period (Jamba: Mamba and attention, MoE and MLP on
periods of 8 and 2) is drawn as one period in a dashed cluster that says how often it repeats;
the runs it stands for are not drawn, and what follows reads the period's last run."""
from __future__ import annotations

import re

import pytest

from archgraph.load import load_text
from archgraph.render.diagram import DiagramOptions, diagram_dot, drawn_boxes
from archgraph.render.pattern import _period, repeating

HYBRID = """\
archgraph: 1
name: hybrid
variables: {H: 8, L: 32, P: 8}
inputs:
  x: {shape: [B, S, H]}
blocks:
  layer:
    args: [attn, wide]
    nodes:
      - {name: mix, op: linear, in: x, in_features: H, out_features: H, when: attn}
      - {name: mix, op: mlp, in: x, hidden: H, intermediate: H, when: not attn}
      - {name: ff, op: linear, in_features: H, out_features: H, bias: wide}
nodes:
  - {name: layers, block: layer, in: x, repeat: L, attn: "i % P == P // 2", wide: "i % 2 == 1"}
  - {name: out, op: rms_norm, dim: H}
"""


def _hybrid(**variables):
    text = HYBRID
    for k, v in variables.items():
        text = re.sub(rf"\b{k}: \d+", f"{k}: {v}", text, count=1)
    return load_text(text)


def test_one_period_of_a_repeating_schedule_is_drawn_with_how_often_it_repeats():
    model = _hybrid()
    dot = diagram_dot(model, DiagramOptions(depth=0))
    assert "layers.0..31: the 8 layers of layers.0..7 repeat (4 × 8)" in dot
    assert [f"layers.{i}" for i in range(8)] == re.findall(r"<b>(layers\.\d+) × 1</b>", dot)
    kinds = re.findall(r'<font point-size="9">(linear|mlp \+ linear)</font>', dot)  # what each run holds
    assert kinds == ["mlp + linear"] * 4 + ["linear"] + ["mlp + linear"] * 3
    assert re.search(r'"?layers#7"? -> "?out"? \[label=" \[B, S, 8\] "\]', dot)  # out reads the period's end
    assert drawn_boxes(model.graph, DiagramOptions(depth=0)) == 8 + 1


def test_a_cut_short_last_period_and_expand():
    model = _hybrid(L=30)
    assert "layers.0..29: the 8 layers of layers.0..7 repeat (3 × 8 + 6)" in diagram_dot(model, DiagramOptions(depth=0))
    every = diagram_dot(model, DiagramOptions(depth=0, expand=True))
    assert "repeat (" not in every and "layers.29 × 1" in every  # --expand draws every run


def test_schedules_that_do_not_repeat_are_drawn_as_runs():
    assert repeating(_hybrid(L=6).graph) == {}  # runs 0..5 cover less than two periods
    assert _period([(1, 2), (2, 58)]) is None  # dense then MoE
    assert _period([(1, 1), (2, 1), (1, 1), (2, 1), (1, 1)]) == 2
    assert _period([(1, 5), (2, 1), (1, 5), (2, 1), (1, 3)]) == 2  # Gemma 3's 5 local, 1 global, cut short
    assert _period([(1, 5), (2, 1), (1, 4), (2, 1)]) is None


@pytest.mark.parametrize("layers, runs", [(32, 8), (9, 9)])  # 9: not two periods
def test_the_collapsed_diagram_fits_the_readable_budget(layers, runs):
    dot = diagram_dot(_hybrid(L=layers))
    assert len(re.findall(r"<b>layers\.\d+ × 1</b>", dot)) == runs
