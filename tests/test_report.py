"""The HTML report: its data, its HTML, and the page in a real headless Chromium.

The browser tests use Debian's chromium and chromedriver (installed by .ci/run).
They are skipped only when chromium is absent and the CI variable is unset.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import tempfile
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.ui import Select

from archgraph import load
from archgraph.passes.explore import explore
from archgraph.passes.flops import count_flops
from archgraph.render import report
from archgraph.render.report import report_data, report_html, table_rows

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
BLOCKED = "MAP * ~NOTFOUND"  # any host: a request for one fails, and shows as a console error


def test_table_rows_nest_blocks_and_count_every_repetition():
    rows = {r.id: r for r in table_rows(load("gpt2").params())}
    block = rows["transformer.h"]
    assert block.block and block.cells["node"] == "transformer.h × 12"
    assert block.cells["params"] == 7_087_872 and block.cells["total"] == 85_054_464
    fc = rows["transformer.h/mlp.c_fc"]
    assert fc.parent == "transformer.h" and fc.depth == 1
    assert fc.cells["params"] == 768 * 3072 + 3072 and fc.cells["total"] == 12 * (768 * 3072 + 3072)
    head = rows["lm_head"]
    assert head.cells["params"] == 0 and "= transformer.wte.weight" in head.cells["tensors"]


def test_report_data_compares_with_the_summaries_compare_gives():
    data = report_data([load("gpt2"), load("t5-small")])
    assert [s.name for s in data.sections] == ["gpt2", "t5-small"]
    assert [s.totals["total"] for s in data.sections] == [124_439_808, 60_506_624]
    t5 = data.sections[1].summary
    assert t5.kind == "encoder-decoder"
    assert [(s.path, s.layers, s.per_layer) for s in t5.stacks] == [("encoder.block", 6, 3_146_752),
                                                                   ("decoder.block", 6, 4_195_840)]
    assert data.sections[1].tree["sizes"] == {"B": 1, "S": 512, "T": 512}
    layers = data.sections[1].layers  # block 0 holds the relative position table besides
    assert [(l["place"], l["index"], l["size"]) for l in layers[:2]] == [("encoder.block", 0, 3_147_008),
                                                                       ("encoder.block", 1, 3_146_752)]
    assert [l["place"] for l in layers] == ["encoder.block"] * 6 + ["decoder.block"] * 6


def _tree_nodes(graph):
    for node in graph["nodes"]:
        yield node
        if node["kind"] == "block" and node["body"]:
            yield from _tree_nodes(node["body"])


def _tree_paths(graph, kind):
    for node in graph["nodes"]:
        if node["kind"] == kind:
            yield node["path"]
        if node["kind"] == "block" and node["body"]:
            yield from _tree_paths(node["body"], kind)


@pytest.mark.parametrize("name", ["gpt2", "t5-small", "albert-base-v2"])
def test_every_drawn_path_is_one_params_json_gives(cli, name):
    """The explorer's data-path of a node or block is its path in `params --json`."""
    code, out, _ = cli("params", name, "--json")
    assert code == 0
    listed = json.loads(out)
    blocks, todo = set(), list(listed["blocks"])
    while todo:
        row = todo.pop()
        blocks.add(row["path"])
        todo += row["children"]
    tree = explore(load(name), {"B": 1, "S": 8, "T": 8} if name == "t5-small" else {"B": 1, "S": 8})
    ops = list(_tree_paths(tree["graph"], "op"))
    assert set(ops) <= {n["path"] for n in listed["nodes"]}
    assert set(_tree_paths(tree["graph"], "block")) == blocks
    assert len(ops) == len(set(ops))


def test_the_tree_counts_every_repetition():
    tree = explore(load("gpt2"), {"B": 1, "S": 1024})
    assert tree["total"] == 124_439_808
    assert tree["flops"] == count_flops(load("gpt2"), {"B": 1, "S": 1024}).forward
    block = next(n for n in tree["graph"]["nodes"] if n["kind"] == "block")
    assert (block["params"], block["total"], block["repeat"]) == (7_087_872, 85_054_464, 12)
    fc = next(n for n in block["body"]["nodes"] if n["name"] == "mlp.c_fc")
    assert fc["in"] == ["[1, 1024, 768]"] and fc["out"] == ["[1, 1024, 3072]"]
    assert fc["args"] == {"in_features": 768, "out_features": 3072, "weight_layout": "in_out"}
    assert fc["total"] == 12 * fc["params"] == 12 * (768 * 3072 + 3072)
    assert fc["flops"] == 12 * 2 * 1024 * 768 * 3072 and fc["bytes"] == 12 * 2 * 1024 * 3072
    head = next(n for n in tree["graph"]["nodes"] if n["name"] == "lm_head")
    assert head["params"] == 0 and head["tensors"][0]["tied_to"] == "transformer.wte.weight"


GEMMA3 = Path(__file__).parent / "data" / "configs" / "gemma-3-1b-it.json"  # google/gemma-3-1b-it's config.json


def test_two_nodes_at_one_path_are_two_nodes_of_the_tree():
    # Gemma 3's two rotary tables, called with `path: ''` from two blocks, are both `model.rotary_emb`
    tree = explore(load(str(GEMMA3)), {"B": 1, "S": 8})
    tables = [n for n in _tree_nodes(tree["graph"]) if n["path"] == "model.rotary_emb"]
    assert [n["op"] for n in tables] == ["rotary_embedding", "rotary_embedding"]
    assert tables[0]["id"] != tables[1]["id"] and tables[0]["args"] != tables[1]["args"]


def test_html_is_self_contained():
    html = report_html(report_data([load("gpt2")]))
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=["']?(https?:)?//""", html)
    assert "<script src" not in html and "@import" not in html
    assert "Viz.instance" in html and "d3.zoom" in html  # the vendored scripts, inline
    data = json.loads(re.search(r'id="archgraph-data">(.*?)</script>', html, re.S).group(1))
    assert [m["name"] for m in data["models"]] == ["gpt2"]


def test_the_vendored_scripts_carry_their_licences():
    vendor = Path(report.__file__).parent / "vendor"
    assert (vendor / "VERSIONS").read_text().split("\n")[:2] == ["@viz-js/viz 3.31.0 viz-global.js",
                                                                 "d3 7.9.2 d3.min.js"]
    assert "Michael Daines" in (vendor / "LICENSE.viz").read_text()
    assert "Eclipse Public License" in (vendor / "LICENSE.viz").read_text()
    assert "Mike Bostock" in (vendor / "LICENSE.d3").read_text()


def test_cli_refuses_a_non_html_output(cli, tmp_path):
    code, _, err = cli("report", "gpt2", "-o", str(tmp_path / "r.pdf"))
    assert code == 2
    assert "the report is an HTML page; received" in err and "fix: end the file name with .html" in err


def test_compare_draws_stacks_by_role_and_the_rest_in_the_palette_colours():
    from archgraph.passes.compare import summarize
    from archgraph.render.compare import ROLE_COLORS, compare_chart
    from archgraph.render.palette import category_color
    rows = [summarize(name, {}, load=load) for name in ("gpt2", "bert-base-uncased")]
    svg = compare_chart(rows, "svg").decode("utf-8")
    for colour in (ROLE_COLORS["encoder"], ROLE_COLORS["decoder"], category_color("embedding"),
                   category_color("head")):
        assert f"fill: {colour}" in svg, colour
    assert ">transformer.h × 12<" in svg and ">encoder.layer × 12<" in svg
    assert f"fill: {ROLE_COLORS['layers']}" not in svg  # neither model has convolutional stages


# -- in a browser ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM) or not os.path.exists(CHROMEDRIVER):
        if not os.environ.get("CI"):
            pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
        pytest.fail(f"CI needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="archgraph-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1000", f"--user-data-dir={profile}", f"--host-resolver-rules={BLOCKED}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(browser, path):
    """Open a report, wait until its explorers are drawn; no console errors, nothing fetched."""
    browser.get(path.as_uri())
    for _ in range(200):
        if browser.execute_script("return document.body.dataset.ready === 'true'"):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the explorers were not drawn: {browser.get_log('browser')}")
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == [], errors
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert [u for u in fetched if not u.startswith(("data:", "file:", "blob:"))] == []


def _smallest_labels(browser):
    """(explorer, the smallest font of a text in its view, on screen in px) for every explorer."""
    return browser.execute_script("""
        return Array.from(document.querySelectorAll('svg.explorer-svg')).map(svg => {
          const view = svg.parentNode.getBoundingClientRect();
          let min = Infinity;
          for (const t of svg.querySelectorAll('text')) {
            const r = t.getBoundingClientRect();
            if (r.bottom < view.top || r.top > view.bottom || r.right < view.left || r.left > view.right) continue;
            min = Math.min(min, parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a);
          }
          const owner = svg.closest('section.model') || svg.closest('.pane');
          return [owner.id || 'side by side', min];
        });""")


def _overflowing(browser):
    """Tables wider than their box, and text of the page (outside the drawings) under 8 px."""
    return browser.execute_script("""
        const wide = Array.from(document.querySelectorAll('table')).filter(t => t.offsetParent !== null &&
          t.getBoundingClientRect().width > t.parentNode.clientWidth + 1).map(t => t.className);
        const small = [];
        for (const el of document.querySelectorAll('body *:not(svg):not(svg *):not(script):not(style)')) {
          if (el.offsetParent === null || !Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim()))
            continue;
          if (parseFloat(getComputedStyle(el).fontSize) < 8) small.push(el.tagName + ' ' + el.className);
        }
        return [wide, small, Math.max(0, document.documentElement.scrollWidth - document.documentElement.clientWidth)];""")


def _report(cli, tmp_path, names, file):
    page = tmp_path / file
    code, _, err = cli("report", *names, "-o", str(page))
    assert code == 0, err
    return page


def _shot(browser, tmp_path, file):
    """A screenshot of the whole page at 1,280 px, kept where ARCHGRAPH_SHOTS says (to look at)."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(height + 140, 12_000))
    browser.execute_script("window.scrollTo(0, 0)")
    shot = Path(os.environ.get("ARCHGRAPH_SHOTS", tmp_path)) / file
    assert browser.save_screenshot(str(shot))
    width, _ = struct.unpack(">II", shot.read_bytes()[16:24])
    assert width == 1280
    browser.set_window_size(1280, 1000)


def _path(browser, section, path):
    return browser.find_element("css selector", f"#{section} svg [data-path='{path}']")


def _count(browser, section, path):
    return len(browser.find_elements("css selector", f"#{section} svg [data-path='{path}']"))


FOUR = ["gpt2", "bert-base-uncased", "t5-small", "llama-2-70b"]
SIX = ["gpt2", "bert-base-uncased", "t5-small", "albert-base-v2", "llama-2-7b", "resnet-50"]


@pytest.mark.slow
def test_a_report_of_four_models_at_1280_pixels(browser, cli, tmp_path):
    page = _report(cli, tmp_path, FOUR, "report-4.html")
    browser.set_window_size(1280, 1000)
    _open(browser, page)
    assert browser.title == "archgraph report: " + ", ".join(FOUR)
    assert [s.find_element("tag name", "h2").text for s in browser.find_elements("css selector", "section.model")] \
        == FOUR
    wide, small, sideways = _overflowing(browser)
    assert (wide, small, sideways) == ([], [], 0)
    labels = _smallest_labels(browser)
    assert len(labels) == 6 and all(px >= 8 for _, px in labels), labels  # four sections, two side by side

    stacks = browser.find_elements("css selector", "table.stacks tr.stack[data-model='t5-small']")
    assert [[td.text for td in r.find_elements("tag name", "td")][:3] for r in stacks] == [
        ["encoder.block", "6", "3,146,752"], ["decoder.block", "6", "4,195,840"]]
    figures = browser.find_element("css selector", "table.figures")
    assert [th.text for th in figures.find_elements("css selector", "thead th")] == ["Figure", *FOUR]
    row = figures.find_element("css selector", "tr[data-figure='parameters']")
    assert [td.text for td in row.find_elements("tag name", "td")] == [
        "parameters", "124,439,808", "109,482,240", "60,506,624", "68,976,648,192"]
    for figure in ("encoder pass", "decoder prefill", "forward per new token", "KV cache", "training"):
        assert browser.find_elements("css selector", f"table.figures tr[data-figure='{figure}']"), figure
    layers = browser.find_elements("css selector", ".layer-row[data-model='llama-2-70b'] .layer")
    assert len(layers) == 80
    assert len(browser.find_elements("css selector", ".layer-row[data-model='t5-small'] .layer")) == 12

    # a repeated block is one box that opens in place and closes again
    block = _path(browser, "m1", "encoder.layer")
    assert block.get_attribute("data-expanded") == "false" and "encoder.layer × 12" in block.text
    assert _count(browser, "m1", "encoder.layer.0.attention.self.query") == 0
    block.click()
    assert _path(browser, "m1", "encoder.layer").get_attribute("data-expanded") == "true"
    assert _count(browser, "m1", "encoder.layer.0.attention.self.query") == 1
    assert all(px >= 8 for _, px in _smallest_labels(browser))
    _path(browser, "m1", "encoder.layer").find_element("tag name", "text").click()  # its title closes it
    assert _path(browser, "m1", "encoder.layer").get_attribute("data-expanded") == "false"
    assert _count(browser, "m1", "encoder.layer.0.attention.self.query") == 0

    # the 70B model opens collapsed: its 80 layers one box
    assert _path(browser, "m3", "model.layers").get_attribute("data-expanded") == "false"
    assert len(browser.find_elements("css selector", "#m3 svg g.node")) < 20

    # search opens the blocks around a node and marks it
    find = browser.find_element("css selector", "#m2 input.find")
    find.send_keys("DenseReluDense.wo\n")
    assert browser.find_element("css selector", "#m2 .status").text == \
        "found encoder.block.0.layer.1.DenseReluDense.wo"
    found = browser.find_elements("css selector", "#m2 svg g.found")
    assert [g.get_attribute("data-path") for g in found] == ["encoder.block.0.layer.1.DenseReluDense.wo"]
    find.clear()
    find.send_keys("no_such_node\n")
    assert browser.find_element("css selector", "#m2 .status").text == "no node matches 'no_such_node'"

    # hovering shows the op, its arguments, shapes and tensors
    ActionChains(browser).move_to_element(_path(browser, "m0", "transformer.wte")).perform()
    tip = browser.find_element("css selector", "#m0 .tip")
    assert tip.is_displayed()
    assert "op embedding" in tip.text and "num_embeddings=50257" in tip.text
    assert "out [1, 512, 768]" in tip.text and "tensor weight [50257, 768] 38,597,376" in tip.text

    # shading by FLOPs redraws with its legend
    Select(browser.find_element("css selector", "#m0 select.measure")).select_by_value("flops")
    assert browser.find_element("css selector", "#m0 .legend.shading").text.startswith("share of the forward FLOPs")

    # the side-by-side panes show the model their menu picks
    panes = browser.find_elements("css selector", ".side-by-side .pane")
    Select(panes[1].find_element("tag name", "select")).select_by_visible_text("t5-small")
    assert panes[1].find_elements("css selector", "svg [data-path='decoder.block']")
    assert panes[0].find_elements("css selector", "svg [data-path='transformer.h']")
    _open(browser, page)  # reloaded: still no console errors
    _shot(browser, tmp_path, "report-4.png")


@pytest.mark.slow
def test_a_report_of_six_models_at_1280_pixels(browser, cli, tmp_path):
    page = _report(cli, tmp_path, SIX, "report-6.html")
    browser.set_window_size(1280, 1000)
    _open(browser, page)
    wide, small, sideways = _overflowing(browser)
    assert (wide, small, sideways) == ([], [], 0)
    labels = _smallest_labels(browser)
    assert len(labels) == 8 and all(px >= 8 for _, px in labels), labels
    figures = browser.find_element("css selector", "table.figures")
    assert [th.text for th in figures.find_elements("css selector", "thead th")] == ["Figure", *SIX]
    encoder_decoder = browser.find_elements("css selector", "table.stacks tr.stack[data-model='t5-small'] td.path")
    assert [td.text for td in encoder_decoder] == ["encoder.block", "decoder.block"]
    block = _path(browser, "m3", "encoder.albert_layer_groups.0.albert_layers.0")
    assert "shared" in block.text
    block.click()
    assert _count(browser, "m3", "encoder.albert_layer_groups.0.albert_layers.0.0.ffn") == 1
    assert all(px >= 8 for _, px in _smallest_labels(browser))
    _shot(browser, tmp_path, "report-6.png")


@pytest.mark.slow
def test_the_parameter_table_sorts_and_folds(browser, cli, tmp_path):
    page = _report(cli, tmp_path, ["gpt2"], "report-1.html")
    browser.set_window_size(1280, 1000)
    _open(browser, page)
    table = browser.find_element("css selector", "table.params")
    heads = table.find_elements("css selector", "thead th")
    total = [th.text for th in heads].index("Params (all)")
    heads[total].click()  # numbers: largest first, children stay under their block
    rows = [r.get_attribute("data-id") for r in table.find_elements("css selector", "tbody tr")]
    assert rows[0] == "transformer.h" and rows[1].startswith("transformer.h/")
    top = "tbody tr[data-parent='']"
    values = [int(r.find_elements("tag name", "td")[total].get_attribute("data-value"))
              for r in table.find_elements("css selector", top)]
    assert values == sorted(values, reverse=True) and values[0] == 85_054_464
    heads[total].click()  # and back: smallest first
    values = [int(r.find_elements("tag name", "td")[total].get_attribute("data-value"))
              for r in table.find_elements("css selector", top)]
    assert values == sorted(values) and values[-1] == 85_054_464
    child = table.find_element("css selector", "tr[data-id='transformer.h/mlp.c_fc']")
    table.find_element("css selector", "tr[data-id='transformer.h'] button.toggle").click()
    assert not child.is_displayed()
    table.find_element("css selector", "tr[data-id='transformer.h'] button.toggle").click()
    assert child.is_displayed()
    assert not browser.find_elements("css selector", "section.comparison")  # one model: nothing to compare


@pytest.mark.slow
def test_gemma_3_draws_its_two_rotary_tables_as_two_boxes(browser, cli, tmp_path):
    page = _report(cli, tmp_path, [str(GEMMA3), "gpt2"], "report-2.html")
    browser.set_window_size(1280, 1000)
    _open(browser, page)
    assert len(browser.find_elements("css selector", "#m0 svg g.node[data-path='model.rotary_emb']")) == 2
    # its 26 layers (five sliding-window layers, then a global one, and again) are one box
    layers = browser.find_elements("css selector", "#m0 svg [data-path='model.layers']")
    assert len(layers) == 1 and layers[0].get_attribute("data-expanded") == "false"
    assert "layers.0..25 × 26" in layers[0].text and "the 6 layers of layers.0..5 repeat" in layers[0].text
    layers[0].click()  # one period: the runs layers.0..4 and layers.5
    runs = browser.find_elements("css selector", "#m0 svg g.node[data-path='model.layers']")
    assert [r.text.split("\n")[0] for r in runs] == ["layers.0..4 × 5", "layers.5"]
    runs[1].click()  # a run opens like any block
    assert _count(browser, "m0", "model.layers.5.self_attn") == 1
    browser.find_element("css selector", "#m0 svg g.cluster[data-kind='pattern'] text").click()
    assert len(browser.find_elements("css selector", "#m0 svg [data-path='model.layers']")) == 1
    find = browser.find_element("css selector", "#m0 input.find")
    find.send_keys("model.layers.11.mlp\n")  # in a run the period stands for: every run drawn
    assert [g.get_attribute("data-path") for g in browser.find_elements("css selector", "#m0 svg g.found")] == [
        "model.layers.11.mlp"]
    head = _path(browser, "m1", "lm_head")
    assert "tied: weight" in head.text  # its weight is transformer.wte's
    wide, small, sideways = _overflowing(browser)
    assert (wide, small, sideways) == ([], [], 0)
    assert all(px >= 8 for _, px in _smallest_labels(browser))


@pytest.mark.slow
def test_an_input_sliced_per_repetition_is_labelled_with_its_slice(browser, cli, tmp_path):
    from tests.test_each_slices import SPEC
    spec = tmp_path / "each.yaml"
    spec.write_text(SPEC)
    page = _report(cli, tmp_path, [str(spec)], "report-each.html")
    _open(browser, page)
    labels = lambda: {t.text.strip() for t in browser.find_elements("css selector", "#m0 svg g.edge text")}  # noqa: E731
    assert "[1, 512, 3, 4][:, :, i]" in labels()  # into the closed box: the table and the slice each repetition takes
    _path(browser, "m0", "layers").click()
    assert "[1, 512, 4] = [:, :, i]" in labels()  # opened: what the body receives
    _shot(browser, tmp_path, "report-each.png")


def test_a_stack_path_wraps_only_after_a_dot_between_names():
    """The page's stacks table may wrap a composite's long path (`model.language_model.layers.5,11..29`),
    but only after a dot between names: never inside the indices, where `..` is a range."""
    from archgraph.render.report_compare import breakable
    assert breakable("model.language_model.layers.5,11..29") == \
        "model.<wbr>language_model.<wbr>layers.<wbr>5,11..29"
    assert breakable("enc.a<b>") == "enc.<wbr>a&lt;b&gt;"   # escaped as before


TALL = """
const x = window.archgraphExplorers[0], svg = x.svg, view = x.view.getBoundingClientRect();
let smallest = Infinity;
for (const t of svg.querySelectorAll('text')) {
  const r = t.getBoundingClientRect();
  if (r.bottom < view.top || r.top > view.bottom || r.right < view.left || r.left > view.right) continue;
  smallest = Math.min(smallest, parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a);
}
const wheel = dy => { const e = new WheelEvent('wheel', {deltaY: dy, bubbles: true, cancelable: true});
                      svg.dispatchEvent(e); return [e.defaultPrevented, x.transform.y, x.transform.k]; };
const first = [x.transform.y, x.transform.k];
const down = wheel(400), bottom = wheel(1e6), past = wheel(400);
const drawing = svg.querySelector('g.zoom').getBoundingClientRect();
return {smallest, first, down, bottom, past, view_height: view.height, window: window.innerHeight,
        drawing_bottom: drawing.bottom - view.top, drawing_height: drawing.height};
"""


@pytest.mark.slow
def test_a_tall_drawing_opens_legible_and_the_wheel_scrolls_it(browser, cli, tmp_path):
    """T5 with every block open is 5,700 px tall: it opens at the scale that fits its width (never
    below 10 px for the smallest label; it was shrunk towards the 75 % of the window its view held,
    to 9 px), in a view of most of the window; the wheel scrolls it (ctrl + wheel zooms), and past
    its end the page scrolls on."""
    page = _report(cli, tmp_path, ["t5-small"], "report-tall.html")
    browser.set_window_size(1280, 1000)
    _open(browser, page)
    browser.find_element("css selector", "#m0 button[data-action='open']").click()
    seen = browser.execute_script(TALL)
    assert seen["smallest"] >= 10 and 1.0 <= seen["first"][1] <= 1.15, seen
    assert seen["drawing_height"] > 4 * seen["view_height"] and seen["view_height"] >= 0.85 * seen["window"]
    prevented, y, k = seen["down"]
    assert prevented and y == pytest.approx(seen["first"][0] - 400) and k == seen["first"][1]  # scrolled, not zoomed
    prevented, y, k = seen["bottom"]
    assert prevented and seen["view_height"] - 20 < seen["drawing_bottom"] <= seen["view_height"]  # to its end, no further
    assert seen["past"] == [False, y, k]  # the page scrolls on
    assert browser.find_element("css selector", "#m0 .legend.shading .hint").text.endswith(
        "drag or wheel to move, ctrl + wheel to zoom")
    _shot(browser, tmp_path, "report-tall.png")


# -- what a person sees on a page: every text a box, none over another, none clipped, none outside its box
PAGE_TEXT = """
// every text a person reads on the page, as boxes: HTML text (each line of each text node) and the
// explorers' SVG text inside their views; then what overlaps, what is clipped, what leaves its container
const round = r => [Math.round(r.left), Math.round(r.top), Math.round(r.right), Math.round(r.bottom)];
const texts = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode, el = node.parentElement;
  if (!node.textContent.trim() || el.closest('svg, script, style, select, datalist, .tip') || !el.getClientRects().length) continue;
  const range = document.createRange();
  range.selectNodeContents(node);
  for (const r of range.getClientRects()) if (r.width > 0.5 && r.height > 0.5) texts.push({text: node.textContent.trim().slice(0, 40), r, el});
}
for (const svg of document.querySelectorAll('svg.explorer-svg')) {
  const view = svg.parentNode.getBoundingClientRect();
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (r.bottom < view.top || r.top > view.bottom || r.right < view.left || r.left > view.right) continue;
    texts.push({text: t.textContent.trim().slice(0, 40), r, el: t, svg: true});
  }
}
const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
const overlapping = [];
for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
  if (overlap(texts[i].r, texts[j].r)) overlapping.push([texts[i].text, texts[j].text]);
}
// clipped: an element that hides what overflows it holds more than it shows
const clipped = [];
for (const el of document.querySelectorAll('body *:not(svg):not(svg *)')) {
  if (!el.getClientRects().length) continue;
  const s = getComputedStyle(el);
  const hides = v => v === 'hidden' || v === 'clip';
  if ((hides(s.overflowX) && el.scrollWidth > el.clientWidth + 1) || (hides(s.overflowY) && el.scrollHeight > el.clientHeight + 1)
      || (s.textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth + 1)) clipped.push(el.className || el.tagName);
}
// leaving its container: an HTML text past the right edge of the page's content, or an SVG text past its node's shape
const page = document.querySelector('main, body').getBoundingClientRect();
const outside = texts.filter(t => !t.svg && (t.r.right > document.documentElement.clientWidth + 1 || t.r.left < -1)).map(t => t.text);
for (const g of document.querySelectorAll('svg.explorer-svg g.node')) {
  const shape = g.querySelector('polygon, path, ellipse');
  if (!shape) continue;
  const box = shape.getBoundingClientRect();
  for (const t of g.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) outside.push(t.textContent);
  }
}
return {texts: texts.length, overlapping, clipped, outside,
        sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth};
"""


def _text_boxes(browser) -> dict:
    """Every text a person reads on the page (HTML text line by line; the explorers' SVG text inside
    their views): pairs that overlap, elements that clip what they hold, texts outside the page or
    their node's shape, and how far the page scrolls sideways."""
    return browser.execute_script(PAGE_TEXT)


@pytest.mark.slow
def test_a_schedule_of_alternating_kinds_at_1280_pixels_overlaps_and_clips_nothing(browser, cli, tmp_path):
    """The ViT with a mixture of experts every other layer (a schedule of two kinds that repeats):
    closed, then one period open, then a run open; no text over another, none clipped or outside."""
    spec = Path(__file__).parent / "data" / "specs" / "vit_moe.yaml"
    page = _report(cli, tmp_path, [str(spec)], "schedule.html")
    browser.set_window_size(1280, 1000)
    _open(browser, page)
    seen = _text_boxes(browser)
    assert seen["texts"] > 100 and (seen["overlapping"], seen["clipped"], seen["outside"], seen["sideways"]) \
        == ([], [], [], 0), seen
    box = browser.find_element("css selector", "#m0 svg [data-path='layers']")
    assert box.text.split("\n")[:2] == ["layers.0..11 × 12", "the 2 layers of layers.0..1 repeat"]
    box.click()  # one period: a dense layer and a MoE layer, each standing for six
    runs = browser.find_elements("css selector", "#m0 svg g.node[data-path='layers']")
    assert [r.text.split("\n")[0] for r in runs] == ["layers.0", "layers.1"]
    seen = _text_boxes(browser)
    assert (seen["overlapping"], seen["clipped"], seen["outside"]) == ([], [], []), seen
    runs[1].click()
    assert _count(browser, "m0", "model.layers.1.moe") + _count(browser, "m0", "layers.1.moe") == 1
    seen = _text_boxes(browser)
    assert (seen["overlapping"], seen["clipped"], seen["outside"]) == ([], [], []), seen
    _shot(browser, tmp_path, "schedule.png")
