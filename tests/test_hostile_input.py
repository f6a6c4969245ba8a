"""Broken and hostile specs from the corpus of issue 13: each refused with one message that says
where and why, or accepted and drawn correctly; nothing reaches the terminal or Graphviz raw."""
from __future__ import annotations

import re

import pytest

from conftest import NEEDS_DOT

LINEAR = "  - {{name: {name}, op: linear, in_features: 4, out_features: 4}}\n"


def spec(tmp_path, nodes: str, name: str = "s.yaml", model: str = "odd") -> str:
    path = tmp_path / name
    path.write_text(f"archgraph: 1\nname: {model}\ninputs: {{x: [B, 4]}}\nnodes:\n{nodes}", encoding="utf-8")
    return str(path)


def test_a_five_thousand_digit_number_is_refused_at_its_line(cli, tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("archgraph: 1\nname: big\nvariables:\n  H: " + "9" * 5000 +
                    "\ninputs: {x: [B, H]}\nnodes:\n  - {name: fc, op: linear, in_features: H, out_features: 2}\n")
    code, out, err = cli("params", str(path))
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}:4: a whole number of 5,000 digits is too long to read\n"
                   "  fix: sizes and values are at most 10**30\n")


@pytest.mark.parametrize("name, shown", [
    ('"rtl\\u202eevil"', "rtl\\u202eevil"),
    ('"esc\\e[31mred"', "esc\\x1b[31mred"),
    ('"bell\\a"', "bell\\x07"),
])
def test_control_characters_in_names_are_refused_and_shown_escaped(cli, tmp_path, name, shown):
    path = spec(tmp_path, LINEAR.format(name=name))
    for command in ("params", "shapes", "render"):
        code, out, err = cli(command, path, *(["-o", str(tmp_path / "d.svg")] if command == "render" else []))
        assert (code, out) == (2, "")
        assert err == (f"archgraph: error: {path}:5: the name '{shown}' holds a control or formatting character\n"
                       "  fix: use letters, digits, '_', '.' and other visible characters\n")
        assert "\x1b" not in err and "\u202e" not in err


@NEEDS_DOT
@pytest.mark.parametrize("name", ["'fc\\'", "'back\\\\slash'", "'q\"uote'", "a" * 200, "'<b>html</b>'"])
def test_odd_names_draw_valid_graphviz(cli, tmp_path, name):
    path = spec(tmp_path, LINEAR.format(name=name) + "  - {name: after, op: relu}\n")
    out_svg = tmp_path / "d.svg"
    code, out, err = cli("render", path, "-o", str(out_svg))
    assert code == 0, err
    svg = out_svg.read_text()
    assert svg.count('class="node"') == 5  # the input, the two nodes, the output and the legend
    if len(name) > 60:  # a long name keeps its ends in the box
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        assert "a" * 29 + "…" + "a" * 29 in texts and not any("a" * 61 in t for t in texts)
    dot_path = tmp_path / "d.dot"
    assert cli("render", path, "-o", str(dot_path))[0] == 0
    import subprocess
    check = subprocess.run(["dot", "-Tsvg", str(dot_path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_extends_resolves_a_parent_beside_the_file_that_names_it(cli, tmp_path):
    (tmp_path / "sub").mkdir()
    base = "archgraph: 1\nname: {n}\nvariables: {{H: {h}}}\ninputs: {{x: [B, H]}}\n" \
           "nodes:\n  - {{name: fc, op: linear, in_features: H, out_features: H}}\n"
    (tmp_path / "base.yaml").write_text(base.format(n="wrong", h=8))        # beside top.yaml: not this one
    (tmp_path / "sub" / "base.yaml").write_text(base.format(n="right", h=4))
    (tmp_path / "sub" / "mid.yaml").write_text("archgraph: 1\nextends: base.yaml\nname: mid\n")
    (tmp_path / "top.yaml").write_text("archgraph: 1\nextends: sub/mid.yaml\nname: top\n")
    code, out, err = cli("params", str(tmp_path / "top.yaml"), "--json")
    assert code == 0, err
    import json
    assert json.loads(out)["total"] == 4 * 4 + 4


def test_an_error_in_a_parent_names_what_the_child_sets(cli, tmp_path):
    child = tmp_path / "child.yaml"
    child.write_text("archgraph: 1\nextends: gpt2\nname: child\nvariables:\n  H: 770\n")
    code, out, err = cli("params", str(child))
    assert (code, out) == (2, "")
    assert "query width / heads: 770 is not divisible by 12" in err
    assert err.endswith(f"; {child} sets H = 770 ({child}:5)\n")
    # a value --set gives is not the child's to blame (nor a config.json's: mistral.yaml's W)
    code, out, err = cli("params", str(child), "--set", "H=772")
    assert (code, out) == (2, "")
    assert "query width / heads: 772 is not divisible by 12" in err and "sets H" not in err
