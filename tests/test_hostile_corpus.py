"""The corpus of issue 36: hostile names (tools/fuzz_names.py makes them) through every command and
every output format (text, --json, --csv, DOT, SVG, PNG and PDF diagrams, the report page, charts,
compare, check --against a checkpoint, import-hf of a config in a folder so named): each run a
clean refusal or the right answer, nothing raw on the terminal, no script or handler in a page,
one box per node in every diagram.  The fast suite runs one name of each kind of attack; the
slow one the whole corpus, images too, and random mixes from two seeds."""
from __future__ import annotations

import json
import sys

import pytest
import yaml

from conftest import NEEDS_DOT, ROOT
from test_report import _open, browser  # noqa: F401 - the module's Chromium, shared

sys.path.insert(0, str(ROOT / "tools"))
import fuzz_names  # noqa: E402

# one of each kind: rich markup, the page's <script>, an HTML handler, a DOT attribute and port,
# a backslash at the end, mathtext, a lookalike path, 200 characters; refused: ESC, RLO, NUL, blank
KINDS = ["[/]", "<!--<script>", "<img src=x onerror=alert(1)>",
         'a" [URL="javascript:alert(1)", href="javascript:alert(1)"]', "a:b", "back\\", "$\\frac{$",
         "../../etc/passwd", "a" * 199, "a\x1b[2Jb", "rtl\u202eevil", "nul\x00", " "]


@NEEDS_DOT
@pytest.mark.parametrize("name", KINDS)
def test_a_hostile_name_through_every_command(tmp_path, name):
    runs, failures = fuzz_names.run_name(name, tmp_path, images=False)
    assert failures == []
    assert runs == (28 if fuzz_names.accepted(name) else 11)


@NEEDS_DOT
def test_every_name_at_once_through_every_format(tmp_path):
    """One model whose nodes, categories and outputs carry all of the corpus's names."""
    model, other = tmp_path / "all.yaml", tmp_path / "other.yaml"
    model.write_text(yaml.safe_dump(fuzz_names.spec_of_all(fuzz_names.NAMES), allow_unicode=True), encoding="utf-8")
    other.write_text(yaml.safe_dump(fuzz_names.spec("other"), sort_keys=False))
    accepted = [n for n in fuzz_names.NAMES if fuzz_names.accepted(n)]
    failures = []
    for args in fuzz_names.formats(str(model), str(other), tmp_path):
        if args[0] == "plan" and "--train" in args:  # plan refuses a model without repeated layers ("pp=1 is
            continue                                  # more than the 0 layers"), whatever its names
        code, out, err = fuzz_names.cli(*args)
        if code != 0 or not fuzz_names.clean(out + err):
            failures.append(f"{args[0]} {args[-1]}: {code} {err[-300:]}")
        elif args[:1] == ("params",) and "--json" in args:
            data = json.loads(out)
            assert data["total"] == 20 * len(accepted)
            assert {n["path"] for n in data["nodes"]} == set(accepted) | {f"r{i}" for i in range(len(accepted))}
        elif args[0] == "render" and args[-1].endswith("d.dot"):
            import subprocess
            svg = subprocess.run(["dot", "-Tsvg", args[-1]], capture_output=True, text=True, check=True).stdout
            assert svg.count('class="node"') == 1 + 3 * len(accepted) + 1  # input; node, relu, output each; legend
    assert failures == []


def test_the_page_of_every_name_draws_in_chromium(browser, tmp_path):  # noqa: F811
    model = tmp_path / "all.yaml"
    model.write_text(yaml.safe_dump(fuzz_names.spec_of_all(fuzz_names.NAMES), allow_unicode=True), encoding="utf-8")
    page = tmp_path / "all.html"
    assert fuzz_names.cli("report", str(model), "gpt2", "-o", str(page))[0] == 0
    _open(browser, page)  # drawn; no console error, so no CSP violation
    accepted = [n for n in fuzz_names.NAMES if fuzz_names.accepted(n)]
    assert browser.title == f"archgraph report: {accepted[0]}, gpt2"
    svg = browser.find_element("css selector", "#m0 svg.explorer-svg")
    assert len(svg.find_elements("css selector", "g.node")) == 1 + 3 * len(accepted)
    texts = set(browser.execute_script("return Array.from(arguments[0].querySelectorAll('text'))"
                                       ".map(t => t.textContent)", svg))  # those out of view too
    assert {n for n in accepted if len(n) <= 48} <= texts  # longer ones keep their ends only
    assert browser.execute_script("return document.querySelectorAll('a[href^=\"javascript\"], [onerror], img')"
                                  ".length") == 0


@pytest.mark.slow
@NEEDS_DOT
@pytest.mark.parametrize("name", fuzz_names.NAMES + fuzz_names.REFUSED)
def test_the_whole_corpus_through_every_format(tmp_path, name):
    runs, failures = fuzz_names.run_name(name, tmp_path)
    assert failures == []
    assert runs == (37 if fuzz_names.accepted(name) else 17)  # a refused name: params, render, report, chart


@pytest.mark.slow
@NEEDS_DOT
@pytest.mark.parametrize("seed", [36, 2026])
def test_random_mixes_of_hostile_fragments(tmp_path, seed):
    names = fuzz_names.names(seed, 20)[-20:]
    failures = []
    for i, name in enumerate(names):
        failures += fuzz_names.run_name(name, tmp_path / f"case{i}", images=i % 4 == 0)[1]
    assert failures == []
