"""Graphs that are not collapsed into repeated blocks: built node by node, counted exactly, and
refused by the diagram (with what would draw instead) rather than handed to Graphviz whole.
benchmarks/large_graph.py times 10k, 100k and 1M nodes; these tests check behaviour."""
from __future__ import annotations

import gc

import pytest

from archgraph import ArchgraphError, ModelBuilder
from archgraph.render.diagram import MAX_BOXES, DiagramOptions, diagram_dot, drawn_boxes


def chain(n: int) -> ModelBuilder:
    b = ModelBuilder("chain", H=64)
    b.input("x", ["B", "H"])
    for i in range(n):
        b.node(f"fc{i}", "linear", in_features="H", out_features="H")
    return b


def test_a_flat_chain_counts_and_shapes_exactly():
    model = chain(20_000).build()
    assert model.params().total == 20_000 * (64 * 64 + 64)
    assert model.params().totals.by_category == {"linear": 20_000 * 4_160}
    shapes = model.shapes(B=3)
    assert shapes.outputs["fc19999"] == (3, 64)
    assert model.shapes() is model.shapes()  # the checked report, not a second walk
    assert len(list(model.shapes().nodes())) == 20_000


def test_nodes_with_equal_hyperparameters_share_one_op_and_keep_their_own_lines():
    model = chain(3).build()
    nodes = list(model.graph.nodes.values())
    assert nodes[0].op is nodes[1].op is nodes[2].op
    assert nodes[0].loc.file == __file__ and nodes[0].loc.line > 0


def test_building_pauses_the_cycle_collector_and_restores_it():
    assert gc.isenabled()
    chain(10).build()
    assert gc.isenabled()
    gc.disable()
    try:
        chain(10).build()
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_an_error_in_a_long_chain_names_the_node_and_the_line():
    b = chain(5_000)
    b.node("bad", "linear", in_features=65, out_features="H")
    with pytest.raises(ArchgraphError) as exc:
        b.build()
    assert exc.value.node == "bad" and exc.value.loc.file == __file__
    assert "in_features" in exc.value.message or "65" in exc.value.message


def test_a_diagram_too_large_to_draw_is_refused_before_graphviz(cli, tmp_path):
    model = chain(MAX_BOXES + 1).build()
    assert drawn_boxes(model.graph, DiagramOptions()) == MAX_BOXES + 1
    with pytest.raises(ArchgraphError) as exc:
        diagram_dot(model)
    assert str(exc.value) == (f"the diagram would have {MAX_BOXES + 1:,} boxes; archgraph draws at most "
                              f"{MAX_BOXES:,} (Graphviz would take minutes, and the picture could not be read)"
                              "\n  fix: group the nodes into blocks (a block called with 'repeat:' is drawn "
                              "once) and draw again")
    assert chain(MAX_BOXES).build() is not None and diagram_dot(chain(10).build()).startswith("digraph")


def _stacked(layers: int, width: int) -> ModelBuilder:
    b = ModelBuilder("stack", H=8)
    b.input("x", ["B", "H"])
    with b.block("wide", args=["H"]) as blk:
        for i in range(width):
            blk.node(f"fc{i}", "linear", in_features="H", out_features="H")
    b.call("layers", "wide", repeat=layers, H="H")
    return b


def test_expand_that_would_not_fit_says_to_leave_it_out(cli, tmp_path):
    spec = _stacked(layers=100, width=60).build()
    assert drawn_boxes(spec.graph, DiagramOptions()) == 60
    assert drawn_boxes(spec.graph, DiagramOptions(expand=True)) == 6_000
    with pytest.raises(ArchgraphError) as exc:
        diagram_dot(spec, DiagramOptions(expand=True))
    assert exc.value.hint == "draw each repeated block once: leave out --expand"


def test_a_block_too_wide_to_draw_is_collapsed_or_refused_with_a_depth():
    model = _stacked(layers=2, width=MAX_BOXES + 10).build()
    assert drawn_boxes(model.graph, DiagramOptions(depth=0)) == 1
    source = diagram_dot(model)  # without --depth: collapsed to what reads
    assert "blocks nested deeper than 0 drawn as one box" in source
    with pytest.raises(ArchgraphError) as exc:  # asked for in full
        diagram_dot(model, DiagramOptions(depth=1))
    assert exc.value.hint == "draw nested blocks as single boxes: --depth 0"


def test_ops_are_values_frozen_and_made_like_dataclasses():
    from archgraph.ops import REGISTRY
    linear = REGISTRY["linear"]
    a, b = linear(64, 32), linear(in_features=64, out_features=32)
    assert a == b and hash(a) == hash(b) and a != linear(64, 33)
    assert repr(a) == "Linear(in_features=64, out_features=32, bias=True, weight_layout='out_in')"
    assert a.copy_with(bias=False) == linear(64, 32, bias=False)
    with pytest.raises(AttributeError, match="cannot assign to field 'in_features'"):
        a.in_features = 3
    with pytest.raises(TypeError, match="an unexpected argument 'width'"):
        a.copy_with(width=3)
    with pytest.raises(TypeError, match="missing the argument 'out_features'"):
        linear(64)
    with pytest.raises(TypeError, match="an unexpected argument 'width'"):
        linear(64, 32, width=3)
