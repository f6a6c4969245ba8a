"""Sheet: the columns that fit, names whole unless one alone is wider than the terminal leaves it."""
from __future__ import annotations

import doctest

from rich.console import Console

import archgraph.render.sheet as sheet_module
from archgraph.render.sheet import Alt, Col, Sheet, shorten


def _render(sheet: Sheet, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(sheet)
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_module_doctest():
    assert doctest.testmod(sheet_module).failed == 0


def test_a_name_wider_than_the_terminal_is_shortened_in_the_middle_and_numbers_stay_whole():
    s = Sheet(None, [Col("Node"), Col("Params", "number")])
    s.add_row("model.encoder.layers.attention.output.dense", "1,234,567")
    s.add_row("head", "7")
    lines = _render(s, 30)
    assert lines == ["┏━━━━━━━━━━━━━━━━┳━━━━━━━━━━━┓", "┃ Node           ┃    Params ┃",
                     "┡━━━━━━━━━━━━━━━━╇━━━━━━━━━━━┩", "│ model.e….dense │ 1,234,567 │",
                     "│ head           │         7 │", "└────────────────┴───────────┘"]
    assert shorten("transformer.embed_sum", 12) == "transf…d_sum"


def test_a_dropped_column_comes_back_when_a_later_drop_leaves_room():
    s = Sheet(None, [Col("Name"), Col("Wide"), Col("N", "number"), Col("Cat")], shrink=["Cat", "Wide"])
    s.add_row("a", "x" * 30, "1", "mlp")
    assert _render(s, 60)[1] == "┃ Name ┃ Wide                           ┃ N ┃ Cat ┃"
    assert _render(s, 40)[1] == "┃ Name ┃ N ┃ Cat ┃"  # Wide went, and Cat (dropped first) fits again


def test_prose_wraps_between_words_only_after_every_step_was_tried():
    s = Sheet(None, [Col("Op"), Col("Args"), Col("Description", "text")], shrink=["Args"])
    s.add_row("linear", "in_features, out_features, bias", "An affine map of the last dimension.")
    assert _render(s, 60)[1] == "┃ Op     ┃ Description                          ┃"
    lines = _render(s, 30)
    assert lines[1] == "┃ Op     ┃ Description       ┃"
    assert lines[3:6] == ["│ linear │ An affine map of  │", "│        │ the last          │",
                          "│        │ dimension.        │"]
    assert _render(s, 100)[1].startswith("┃ Op     ┃ Args                            ┃ Description")


def test_alt_forms_come_before_dropping():
    s = Sheet(None, [Col("Name"), Col("Tensors"), Col("N", "number")], shrink=["Tensors", "Tensors"])
    s.add_row("wte", Alt("weight [50257, 768]", "50257×768"), "38,597,376")
    assert _render(s, 45)[3] == "│ wte  │ weight [50257, 768] │ 38,597,376 │"
    assert _render(s, 35)[3] == "│ wte  │ 50257×768 │ 38,597,376 │"
    assert _render(s, 25)[3] == "│ wte  │ 38,597,376 │"
