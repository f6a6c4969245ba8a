"""The HTML report: its data, its HTML, and the page in a real headless Chromium.

The browser tests use Debian's chromium and chromedriver (installed by .ci/run).
They are skipped only when chromium is absent and the CI variable is unset.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import tempfile
from pathlib import Path

import pytest

from archgraph import load
from archgraph.render.report import ReportData, report_data, report_html, table_rows
from conftest import NEEDS_DOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


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


@NEEDS_DOT
def test_report_data_compares_models():
    data = report_data([load("gpt2"), load("bert-base-uncased")])
    assert [s.name for s in data.sections] == ["gpt2", "bert-base-uncased"]
    totals = {row["model"]: row["total"] for row in data.comparison}
    assert totals == {"gpt2": 124_439_808, "bert-base-uncased": 109_482_240}
    keys = [c.key for c in data.comparison_columns]
    assert keys[:5] == ["model", "total", "trainable", "tied", "buffers"]
    assert {"cat:mlp", "cat:attention", "cat:embedding", "cat:norm", "cat:head"} <= set(keys)
    gpt2 = data.comparison[0]
    assert gpt2["cat:mlp"] == 56_669_184 and gpt2["tied"] == 38_597_376


@NEEDS_DOT
def test_html_is_self_contained():
    html = report_html(report_data([load("gpt2")]))
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched from a network
    assert "<?xml" not in html and html.count("<svg") >= 2
    assert "<script>" in html and "<style>" in html


def test_cli_refuses_a_non_html_output(cli, tmp_path):
    code, _, err = cli("report", "gpt2", "-o", str(tmp_path / "r.pdf"))
    assert code == 2
    assert "the report is an HTML page; received" in err and "fix: end the file name with .html" in err


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
                 "--window-size=1600,1200", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(browser, path):
    browser.get(path.as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == [], errors


def _column(browser, table, title):
    headers = [th.text.rstrip(" ▲▼") for th in table.find_elements("css selector", "thead th")]
    return headers.index(title)


def _first_level(browser, table, column):
    """Cells of one column in the rows at the top of the tree, in page order."""
    rows = table.find_elements("css selector", "tbody tr[data-parent='']")
    return [r.find_elements("tag name", "td")[column].get_attribute("data-value") for r in rows]


@NEEDS_DOT
@pytest.mark.slow
def test_report_in_chromium(browser, cli, tmp_path):
    page = tmp_path / "report.html"
    code, out, err = cli("report", "gpt2", "bert-base-uncased", "-o", str(page))
    assert code == 0, err
    _open(browser, page)
    assert browser.title == "archgraph report: gpt2, bert-base-uncased"

    sections = browser.find_elements("css selector", "section.model")
    assert [s.find_element("tag name", "h2").text for s in sections] == ["gpt2", "bert-base-uncased"]
    diagram = sections[0].find_element("css selector", ".diagram svg")
    assert diagram.size["width"] > 200 and diagram.size["height"] > 200
    assert "transformer.h × 12" in diagram.get_attribute("textContent")
    assert sections[0].find_element("css selector", ".chart svg").size["height"] > 100

    # the two sections stand side by side
    assert sections[1].location["x"] > sections[0].location["x"] + 300
    assert abs(sections[1].location["y"] - sections[0].location["y"]) < 5

    table = sections[0].find_element("css selector", "table.params")
    total = _column(browser, table, "Params (all)")
    names = _column(browser, table, "Node")
    assert _first_level(browser, table, names)[:3] == ["transformer.wte", "transformer.wpe",
                                                       "transformer.embed_sum"]
    table.find_elements("css selector", "thead th")[total].click()  # numbers: largest first
    values = [int(v) for v in _first_level(browser, table, total)]
    assert values == sorted(values, reverse=True) and values[0] == 85_054_464
    rows = [r.get_attribute("data-id") for r in table.find_elements("css selector", "tbody tr")]
    assert rows[0] == "transformer.h" and rows[1].startswith("transformer.h/")  # children stay under it
    table.find_elements("css selector", "thead th")[total].click()  # and back: smallest first
    values = [int(v) for v in _first_level(browser, table, total)]
    assert values == sorted(values) and values[-1] == 85_054_464

    child = table.find_element("css selector", "tr[data-id='transformer.h/mlp.c_fc']")
    assert child.is_displayed()
    table.find_element("css selector", "tr[data-id='transformer.h'] button.toggle").click()
    assert not child.is_displayed()
    table.find_element("css selector", "tr[data-id='transformer.h'] button.toggle").click()
    assert child.is_displayed()

    comparison = browser.find_element("css selector", "table.comparison")  # one column per model
    assert [th.text for th in comparison.find_elements("css selector", "thead th")] == [
        "Parameters", "gpt2", "bert-base-uncased"]
    total = comparison.find_element("css selector", "tr[data-id='total']")
    assert [td.text for td in total.find_elements("tag name", "td")] == ["Total", "124,439,808", "109,482,240"]
    comparison.find_elements("css selector", "thead th")[0].click()  # text: A to Z
    figures = [r.find_elements("tag name", "td")[0].text for r in comparison.find_elements("css selector", "tbody tr")]
    assert figures == sorted(figures, key=str.lower) and "Total" in figures and "mlp" in figures

    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 800 and height >= 600
    _open(browser, page)  # reload: still no console errors


SIX = ["gpt2", "bert-base-uncased", "albert-base-v2", "llama-2-7b", "bloom-1b4-zh", "bert-base-chinese"]


@pytest.fixture(scope="module")
def six_sections():
    return report_data([load(name) for name in SIX])


@NEEDS_DOT
@pytest.mark.slow
@pytest.mark.parametrize("count", [2, 3, 4, 5, 6])
def test_a_report_of_two_to_six_models_reads_at_1280_pixels(browser, six_sections, tmp_path, count):
    """One column per model in the comparison, the models two abreast, nothing wider than the
    window, charts at their width; the screenshot is kept beside the page."""
    data = six_sections
    subset = ReportData(data.title, data.columns, data.sections[:count], data.comparison_columns,
                        data.comparison[:count])
    page = tmp_path / f"report-{count}.html"
    page.write_text(report_html(subset), encoding="utf-8")
    browser.set_window_size(1280, 1000)
    try:
        _open(browser, page)
        inner = browser.execute_script("return window.innerWidth")
        assert 1200 <= inner <= 1280
        assert browser.execute_script("return document.documentElement.scrollWidth") <= inner  # no sideways scroll

        comparison = browser.find_element("css selector", "table.comparison")
        heads = [th.text for th in comparison.find_elements("css selector", "thead th")]
        assert heads == ["Parameters", *SIX[:count]]
        box = browser.execute_script("const t = arguments[0]; return [t.scrollWidth, t.parentNode.clientWidth]",
                                     comparison)
        assert box[0] <= box[1]  # the comparison fits without scrolling
        swatches = comparison.find_elements("css selector", "tr[data-id='cat:mlp'] .swatch")
        assert len(swatches) == 1  # the palette's mlp colour, as in the diagram and the charts
        assert swatches[0].value_of_css_property("background-color") == "rgba(128, 177, 211, 1)"

        sections = browser.find_elements("css selector", "section.model")
        assert [s.find_element("tag name", "h2").text for s in sections] == SIX[:count]
        assert len({s.location["x"] for s in sections}) == 2  # two abreast, whatever the count
        for section in sections:
            chart = section.find_element("css selector", ".chart svg")
            assert chart.size["width"] >= 480, section.text[:40]  # not squeezed
            assert section.find_element("css selector", ".diagram svg").size["width"] > 200
        links = [a.text for a in browser.find_elements("css selector", "nav.index a")]
        assert links == SIX[:count]

        shot = Path(os.environ.get("ARCHGRAPH_SHOTS", tmp_path)) / f"report-{count}.png"
        assert browser.save_screenshot(str(shot))
        width, _ = struct.unpack(">II", shot.read_bytes()[16:24])
        assert 1200 <= width <= 1280
    finally:
        browser.set_window_size(1600, 1200)


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
