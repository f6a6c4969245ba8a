"""`plan --search` drawn: the chart (PNG, SVG) and its section of the report page, as a person sees
them (the page in Chromium at 1,280 px)."""
from __future__ import annotations

import json
import re

import pytest
from test_report import browser  # noqa: F401  (Chromium, as the report's tests open it)

# Llama 2 7B on 8 L4s (24 GiB): some layouts fit, most do not
SEARCH = ("llama-2-7b", "--gpus", "8", "--gpu", "l4", "--search", "--seq", "2048", "--global-batch", "32")


@pytest.fixture(scope="module")
def found():
    from archgraph.cli import main
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", *SEARCH, "--json"]) == 0
    return json.loads(out.getvalue())


def test_the_chart_names_what_it_counts(cli, tmp_path, found):
    """The legend counts the layouts that fit (by recomputation) and those that do not, as --json
    does; the fastest is named; SVG is the same bytes twice."""
    svg = tmp_path / "plans.svg"
    assert cli("plan", *SEARCH, "--chart", str(svg))[0] == 0
    text = svg.read_text()
    fit = {mode: sum(p["layout"]["recompute"] == mode for p in found["plans"]) for mode in ("none", "full")}
    assert f"does not fit ({len(found['rejected']):,})" in text
    for mode, n in fit.items():
        assert f"fits, recompute {mode} ({n:,})" in text
    best = found["plans"][0]["layout"]
    assert f"fastest: tp {best['tp']} · pp {best['pp']} · dp {best['dp']} · ZeRO {best['zero']}" in text
    assert "the GPU's memory (24 GiB)" in text
    again = tmp_path / "again.svg"
    cli("plan", *SEARCH, "--chart", str(again))
    assert again.read_bytes() == svg.read_bytes()
    png = tmp_path / "plans.png"
    assert cli("plan", *SEARCH, "--chart", str(png))[0] == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png.read_bytes()[16:20], "big"), int.from_bytes(png.read_bytes()[20:24], "big")
    assert (width, height) == (960, 672)


def test_the_report_section_lists_the_fastest_and_why_the_others_fail(cli, tmp_path, found):
    page = tmp_path / "report.html"
    assert cli("plan", *SEARCH, "--report", str(page))[0] == 0
    html = page.read_text()
    section = html[html.index('<section class="plan"'):]
    section = section[:section.index("</section>")]
    assert "Plan on 8 × NVIDIA L4" in section
    assert f"404 layouts of llama-2-7b tried, {len(found['plans'])} fit; the fastest 20 below" in section
    rows = re.findall(r"<tr>(<td.*?)</tr>", section)
    assert len(rows) == 20
    best = found["plans"][0]
    memory = re.findall(r'<td class="number" data-value="([0-9.e+]+)">', rows[0])[5]   # tp pp dp ZeRO mb memory
    assert float(memory) == pytest.approx(best["per_gpu"]["total"] / 2 ** 30)
    need = sorted(r["per_gpu"]["total"] for r in found["rejected"])
    assert f"does not fit in 24.00 GiB: needs {need[0] / 2**30:.2f} GiB" in section
    assert f": {len(found['rejected'])}</li>" in section


def test_a_search_where_nothing_fits_says_so(cli, tmp_path):
    page = tmp_path / "report.html"
    code, out, _ = cli("plan", "llama-2-70b", "--gpus", "8", "--gpu", "l4", "--search", "--report", str(page))
    assert code == 0
    assert "490 layouts tried, 0 fit" in out and "why every layout fails" in out
    html = page.read_text()
    assert "0 fit; none fits" in html and "<h3>Why the layouts fail</h3>" in html and '<table class="plans">' not in html


@pytest.mark.slow
def test_the_plan_section_at_1280_pixels(browser, cli, tmp_path):
    """The chart (an SVG image) spans the page up to 960 px, its smallest text at 12 px or more; nothing in the
    section is wider than the page; the table sorts memory as a number."""
    from test_report import _open
    page = tmp_path / "report.html"
    assert cli("plan", *SEARCH, "--report", str(page))[0] == 0
    _open(browser, page)
    seen = browser.execute_script("""
        const s = document.querySelector('section.plan'), img = s.querySelector('.chart img');
        const svg = new DOMParser().parseFromString(atob(img.src.split(',')[1]), 'image/svg+xml').documentElement;
        const scale = img.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        const sizes = Array.from(svg.querySelectorAll('text'))
                           .map(t => parseFloat(/font-size: *([\\d.]+)px/.exec(t.getAttribute('style'))[1]) * scale);
        return {page: document.documentElement.clientWidth, scroll: document.documentElement.scrollWidth,
                section: s.getBoundingClientRect().width, svg: img.getBoundingClientRect().width,
                smallest: Math.min(...sizes), texts: sizes.length, drawn: img.complete && img.naturalWidth};""")
    assert seen["scroll"] <= seen["page"]
    assert seen["svg"] == pytest.approx(min(960, seen["section"]), abs=1)
    assert seen["smallest"] >= 12 and seen["texts"] > 10 and seen["drawn"] > 0  # an image (the page's policy)
    header = browser.find_element("css selector", "table.plans th:nth-child(8)")
    header.click()
    values = browser.execute_script("""return Array.from(document.querySelectorAll('table.plans tbody tr'))
                                        .map(r => parseFloat(r.children[7].dataset.value));""")
    assert values in (sorted(values), sorted(values, reverse=True)) and len(set(values)) > 1
