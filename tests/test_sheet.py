"""Sheet: the columns that fit, names whole unless one alone is wider than the terminal leaves it."""
from __future__ import annotations

import doctest

from rich.console import Console

import archgraph.render.sheet as sheet_module
from archgraph.render.sheet import Alt, Col, Sheet, broken


def _render(sheet: Sheet, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(sheet)
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_module_doctest():
    assert doctest.testmod(sheet_module).failed == 0


def test_a_name_wider_than_the_terminal_is_broken_after_dots_never_cut_and_numbers_stay_whole():
    s = Sheet(None, [Col("Node"), Col("Params", "number")])
    s.add_row("model.encoder.layers.attention.output.dense", "1,234,567")
    s.add_row("head", "7")
    lines = _render(s, 30)
    assert lines == ["┏━━━━━━━━━━━━━━━━┳━━━━━━━━━━━┓", "┃ Node           ┃    Params ┃",
                     "┡━━━━━━━━━━━━━━━━╇━━━━━━━━━━━┩", "│ model.encoder. │ 1,234,567 │",
                     "│ layers.        │           │", "│ attention.     │           │",
                     "│ output.dense   │           │",
                     "│ head           │         7 │", "└────────────────┴───────────┘"]
    assert "".join(line[2:16].strip() for line in lines[3:7]) == "model.encoder.layers.attention.output.dense"
    assert broken("  x." + "y" * 12, 8) == ["  x.", "  yyyyyy", "  yyyyyy"]  # a part wider than a line


def test_the_columns_a_narrow_terminal_leaves_out_are_named_under_the_table():
    s = Sheet("t", [Col("Name"), Col("Wide"), Col("N", "number"), Col("Cat")], shrink=["Cat", "Wide"],
              wider="a wider terminal or --json shows")
    s.add_row("a", "x" * 30, "1", "mlp")
    assert not [line for line in _render(s, 60) if "not shown" in line]
    assert " ".join(_render(s, 40)[-2:]) == "Wide not shown at 40 columns: a wider terminal or --json shows it"
    s = Sheet("t", [Col("Name"), Col("Wide"), Col("N", "number"), Col("Cat")], shrink=["Wide", "Cat"])
    s.add_row("a", "x" * 30, "1", "mlp-and-more")
    lines = _render(s, 16)
    assert " ".join(lines[lines.index("└──────┴───┘") + 1:]) == \
        "Wide, Cat not shown at 16 columns: a wider terminal shows them"


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
