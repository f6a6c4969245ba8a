"""The report page under hostile names (issue 36): every name reaches the page escaped (HTML, the
JSON in its <script>, the DOT its explorers draw), the page keeps a Content-Security-Policy that
runs only its own scripts and styles (by hash), and in Chromium it draws everything, runs no
script a name carries, and refuses a handler injected into it."""
from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest
import yaml

from test_report import _open, browser  # noqa: F401 - the module's Chromium, shared

SCRIPT = "</script><script>document.title='pwned'</script>"
COMMENT = "<!--<script>"
IMG = "<img src=x onerror=document.title='pwned'>"
URL = 'a" [URL="javascript:document.title=1", href="javascript:document.title=1"]'


def hostile_spec(path) -> str:
    """A model whose every name is hostile: the model, its description, nodes (the last one, the
    default output, with a quote), a block call and its body, categories and output names."""
    spec = {"archgraph": 1, "name": COMMENT + SCRIPT, "description": IMG + " " + COMMENT,
            "inputs": {"x": ["B", 4]},
            "blocks": {"blk": {"category": "$\\frac{$", "nodes": [
                {"name": URL, "op": "linear", "in_features": 4, "out_features": 4}]}},
            "nodes": [{"name": 'q"uote', "op": "linear", "in_features": 4, "out_features": 4, "category": "[/]<b>"},
                      {"name": SCRIPT, "block": "blk"}, {"name": "back\\", "op": "relu"},
                      {"name": "a:b", "op": "relu"}, {"name": "a/*b", "op": "relu"}, {"name": 'last"', "op": "relu"}],
            "outputs": {URL: 'last"', "a/*b": "a/*b", COMMENT: "back\\", IMG: 'q"uote'}}
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False))
    return str(path)


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_the_page_lists_the_hash_of_each_inline_script_and_style_and_nothing_unsafe(cli, tmp_path):
    page = tmp_path / "r.html"
    assert cli("report", hostile_spec(tmp_path / "h.yaml"), "gpt2", "-o", str(page))[0] == 0
    html = page.read_text()
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html).group(1)
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    styles = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert len(scripts) == 5 and len(styles) == 2
    assert directives["script-src"].split() == [f"'{_hash(s)}'" for s in scripts] + ["'wasm-unsafe-eval'"]
    assert directives["style-src"].split() == [f"'{_hash(s)}'" for s in styles]
    assert directives["default-src"] == "'none'" and directives["img-src"] == "data:"
    assert "unsafe-inline" not in policy and "unsafe-eval'" not in policy.replace("wasm-unsafe-eval", "")
    assert not re.search(r"<[^>]+\sstyle=", html.split("<script", 1)[0])  # no style attribute: the CSP refuses them
    assert not re.search(r"<[^>]+\son\w+=", html.split("<script", 1)[0])  # no inline handler
    payload = re.search(r'<script type="application/json" id="archgraph-data">(.*?)</script>', html, re.S).group(1)
    assert not re.search(r"[<>&\u2028\u2029]", payload)  # '<!--<script>' cannot open a comment or a script
    assert json.loads(payload)["models"][0]["name"] == COMMENT + SCRIPT


def test_hostile_names_draw_as_text_and_run_nothing(browser, cli, tmp_path):  # noqa: F811
    page = tmp_path / "r.html"
    assert cli("report", hostile_spec(tmp_path / "h.yaml"), "gpt2", "-o", str(page))[0] == 0
    _open(browser, page)  # drawn, no console error: no CSP violation either
    assert browser.title == f"archgraph report: {COMMENT}{SCRIPT}, gpt2"
    assert browser.find_element("css selector", "#m0 h2").text == COMMENT + SCRIPT
    assert browser.find_element("css selector", "#m0 p.description").text == f"{IMG} {COMMENT}"
    svg = browser.find_element("css selector", "#m0 svg.explorer-svg")
    texts = [t.text for t in svg.find_elements("tag name", "text")]
    for name in ('q"uote', SCRIPT, "back\\", "a:b", "a/*b", 'last"', URL, COMMENT, IMG):
        assert name in texts, name
    # the input, six boxes and four outputs: no phantom box from a port, a quote or a comment
    assert len(svg.find_elements("css selector", "g.node")) == 11
    links = browser.execute_script("return Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href')"
                                   " || a.getAttribute('xlink:href'))")
    assert not [h for h in links if h and not h.startswith("#")]
    assert browser.execute_script("return document.querySelectorAll('img, iframe, object, embed').length") == 0


def test_the_policy_refuses_a_handler_and_a_script_injected_into_the_page(browser, cli, tmp_path):  # noqa: F811
    page = tmp_path / "r.html"
    assert cli("report", "gpt2", "-o", str(page))[0] == 0
    injected = ('<button id="evil" onclick="document.title=\'pwned\'">x</button>'
                '<a id="link" href="javascript:document.title=\'pwned\'">y</a>'
                '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" onload="document.title=\'pwned\'">'
                '<script>document.title = "pwned"</script><div id="styled" style="color: rgb(255, 0, 0)">z</div>')
    page.write_text(page.read_text().replace("</body>", injected + "</body>"))
    browser.get(page.as_uri())
    browser.find_element("id", "evil").click()
    browser.find_element("id", "link").click()
    assert browser.title == "archgraph report: gpt2"
    assert browser.execute_script("return getComputedStyle(document.getElementById('styled')).color") != "rgb(255, 0, 0)"
    refused = [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]
    assert len(refused) >= 4, refused  # the handlers, the script and the style attribute
    assert browser.execute_script("return document.querySelectorAll('svg.explorer-svg g.node').length") > 0


def test_a_plan_search_section_draws_under_the_policy(browser, cli, tmp_path):  # noqa: F811
    """plan --search --report adds its chart: an SVG image (matplotlib's inline styles would break
    the policy inline), drawn, with no console error."""
    page = tmp_path / "plan.html"
    code, _, err = cli("plan", "gpt2", "--train", "--gpus", "8", "--search", "--report", str(page))
    assert code == 0, err
    _open(browser, page)
    size = browser.execute_script("const i = document.querySelector('.plan .chart img'); "
                                  "return [i.naturalWidth, i.getBoundingClientRect().width]")
    assert size[0] > 500 and 0 < size[1] <= 1280
