"""The report's explorer on models of thousands of boxes, in a real headless Chromium: "expand all"
opens in steps and a drawing never holds more than the explorer lays out at once (600 boxes), so
the page stays usable (2,242 boxes froze the tab for 194 s).  What it costs is measured by
benchmarks/report_speed.py; these tests check what a person sees."""
from __future__ import annotations

import pytest

from test_report import _open, _smallest_labels, browser  # noqa: F401  (browser is a fixture)

LAYER = """archgraph: 1
name: {name}
variables: {{H: 16}}
inputs: {{x: [B, S, H]}}
blocks:
  attn:
    inputs: [x]
    nodes:
      - {{name: norm, op: rms_norm, in: x, dim: H}}
      - {{name: q, op: linear, in: norm, in_features: H, out_features: H}}
      - {{name: k, op: linear, in: norm, in_features: H, out_features: H}}
      - {{name: v, op: linear, in: norm, in_features: H, out_features: H}}
      - {{name: qk, op: add, in: [q, k]}}
      - {{name: qkv, op: add, in: [qk, v]}}
      - {{name: o, op: linear, in: qkv, in_features: H, out_features: H}}
      - {{name: residual, op: add, in: [x, o]}}
  mlp:
    inputs: [x]
    nodes:
      - {{name: norm, op: rms_norm, in: x, dim: H}}
      - {{name: gate, op: linear, in: norm, in_features: H, out_features: H}}
      - {{name: up, op: linear, in: norm, in_features: H, out_features: H}}
      - {{name: prod, op: mul, in: [gate, up]}}
      - {{name: down, op: linear, in: prod, in_features: H, out_features: H}}
      - {{name: residual, op: add, in: [x, down]}}
  layer:
    inputs: [x]
    nodes:
      - {{name: self_attn, block: attn, in: x}}
      - {{name: mlp, block: mlp}}
  wide:
    inputs: [x]
    nodes:
{wide}
nodes:
{calls}
"""


def many_layers(layers: int, wide: int = 0) -> str:
    """A spec of `layers` distinct layers (each called once: 14 boxes open), then, when `wide`, one
    block of `wide` linear nodes side by side."""
    body = "\n".join(f"      - {{name: fc{j}, op: linear, in: x, in_features: H, out_features: H}}"
                     for j in range(max(wide, 1)))
    calls = [f"  - {{name: layer{i}, block: layer}}" for i in range(layers)]
    calls += ["  - {name: wide, block: wide}"] if wide else []
    return LAYER.format(name=f"layers_{layers}", wide=body, calls="\n".join(calls))


def _page(cli, tmp_path, text):
    spec, page = tmp_path / "model.yaml", tmp_path / "report.html"
    spec.write_text(text)
    code, _, err = cli("report", str(spec), "-o", str(page))
    assert code == 0, err
    return page


def _seen(browser):
    """(boxes drawn: the graph's nodes but its inputs and outputs, the status line)."""
    return browser.execute_script("""
        const svg = document.querySelector('svg.explorer-svg');
        return [svg.querySelectorAll('g.node').length - svg.querySelectorAll('g.node > ellipse').length,
                document.querySelector('.explorer .status').textContent];""")


def _on_screen(browser, path):
    """Whether the node at `path` is drawn inside the explorer's view, where a person can click it."""
    return browser.execute_script("""
        const view = document.querySelector('.explorer-view').getBoundingClientRect();
        const g = document.querySelector(`svg.explorer-svg [data-path='${arguments[0]}']`);
        const r = g && g.getBoundingClientRect();
        return Boolean(r) && r.top >= view.top && r.bottom <= view.bottom && r.left >= view.left &&
          r.right <= view.right;""", path)


def _block(browser, path):
    return browser.find_element("css selector", f"svg.explorer-svg [data-path='{path}']")


@pytest.mark.slow
def test_expand_all_on_2242_boxes_opens_in_steps_a_person_can_follow(browser, cli, tmp_path):
    """160 layers of 14 boxes: every block open would be 2,240 boxes (and the input and output)."""
    _open(browser, _page(cli, tmp_path, many_layers(160)))
    assert _seen(browser) == [160, ""]  # each layer one box
    expand = browser.find_element("css selector", ".explorer button[data-action='open']")
    expand.click()  # every layer opens (2 boxes each), then the first attention blocks, while 250 more fit
    assert _seen(browser) == [409, "409 boxes drawn, 305 blocks closed: expand all again to open more"]
    assert _block(browser, "layer0.self_attn").get_attribute("data-expanded") == "true"
    assert _block(browser, "layer159").get_attribute("data-expanded") == "true"
    expand.click()
    assert _seen(browser) == [596, "596 boxes drawn, 274 blocks closed: a drawing holds at most 600 boxes; "
                                   "click a block to open it"]
    expand.click()  # nothing more fits: nothing changes
    assert _seen(browser)[0] == 596
    assert all(px >= 8 for _, px in _smallest_labels(browser))

    # a closed block far down is found, drawn where it can be clicked, and opens; past 600 boxes the
    # blocks around it stay open and the others close
    find = browser.find_element("css selector", ".explorer input.find")
    find.send_keys("layer150.mlp\n")
    assert _seen(browser)[1] == "found layer150.mlp" and _on_screen(browser, "layer150.mlp")
    _block(browser, "layer150.mlp").click()
    assert _seen(browser) == [166, "the other blocks closed: a drawing holds at most 600 boxes"]
    assert _block(browser, "layer150.mlp").get_attribute("data-expanded") == "true"
    assert _block(browser, "layer0").get_attribute("data-expanded") == "false"
    assert _on_screen(browser, "layer150.mlp.norm") and _on_screen(browser, "layer150.mlp.prod")  # opened in place
    assert all(px >= 8 for _, px in _smallest_labels(browser))
    browser.find_element("css selector", ".explorer button[data-action='close']").click()
    assert _seen(browser) == [160, ""]
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


@pytest.mark.slow
def test_a_block_of_more_boxes_than_a_drawing_holds_stays_closed_and_says_why(browser, cli, tmp_path):
    _open(browser, _page(cli, tmp_path, many_layers(2, wide=700)))
    assert _seen(browser) == [3, ""]
    _block(browser, "wide").click()
    assert _seen(browser) == [3, "wide needs a drawing of 702 boxes; a drawing holds at most 600: the table of "
                                 "parameters lists every node"]
    assert _block(browser, "wide").get_attribute("data-expanded") == "false"
    browser.find_element("css selector", ".explorer button[data-action='open']").click()
    assert _seen(browser) == [29, "29 boxes drawn, 1 block closed: a drawing holds at most 600 boxes; click a "
                                  "block to open it"]


@pytest.mark.slow
def test_a_model_too_large_even_closed_says_so_where_its_drawing_would_be(browser, cli, tmp_path):
    """700 nodes at the top level: no block to close, so nothing is laid out; the page answers at once."""
    nodes = "\n".join(f"  - {{name: fc{j}, op: linear, in_features: H, out_features: H}}" for j in range(700))
    _open(browser, _page(cli, tmp_path, f"archgraph: 1\nname: flat\nvariables: {{H: 16}}\ninputs: {{x: [B, H]}}\n"
                                        f"nodes:\n{nodes}\n"))
    assert browser.find_element("css selector", ".explorer-view").text == (
        "flat draws 700 boxes with every block closed; a drawing holds at most 600: the table of parameters lists "
        "every node")
    assert browser.find_elements("css selector", "svg.explorer-svg") == []
    browser.find_element("css selector", ".explorer button[data-action='open']").click()
    browser.find_element("css selector", ".explorer input.find").send_keys("fc699\n")
    assert browser.find_element("css selector", ".explorer .status").text == (
        "fc699 needs a drawing of 700 boxes; a drawing holds at most 600: the table of parameters lists every node")
    rows = browser.find_elements("css selector", "table.params tbody tr")
    assert len(rows) == 700 and rows[-1].find_element("tag name", "td").text == "fc699"
