"""The documentation site builds strictly, documents every op, and every spec and output it shows is real.

The pages' conventions (a ```yaml block opening with `# spec: NAME.yaml` is a complete spec, a
```console block holds commands and what they print) are in tools/doc_blocks.py, which reads the
blocks and, with --update, writes today's output into a page.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NEEDS_DOT, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import doc_blocks  # noqa: E402

SPECS = doc_blocks.spec_blocks()
TORCH_PAGES = {"run-and-train.md", "import-torch.md"}  # pages whose commands build and train torch modules


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder holding every complete spec of the site, and `examples/` beside them."""
    folder = tmp_path_factory.mktemp("docs")
    doc_blocks.write_specs(folder)
    return folder


def test_the_pages_show_specs():
    tutorial = {name for name, (page, _, _) in SPECS.items() if page.parent.name == "tutorial"}
    assert {"mlp.yaml", "tiny-gpt.yaml", "tiny-moe.yaml", "two-towers.yaml", "tiny-unet.yaml"} <= tutorial


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_complete_spec_counts_and_shapes(name, workdir, cli, monkeypatch):
    page, _, accepted = SPECS[name]
    monkeypatch.chdir(workdir)
    for command in ("params", "shapes"):
        code, out, err = cli(command, name)
        if accepted:
            assert code == 0 and out.strip(), f"{page.name}: archgraph {command} {name}: {err}"
        else:
            assert code == 2 and err.startswith("archgraph: error: "), f"{page.name}: {name} was not refused"


def test_every_spec_like_block_is_marked():
    """A yaml block with a top-level `nodes:` says whether it is a whole spec (`# spec: NAME.yaml`) or not."""
    for page in doc_blocks.pages():
        for body in doc_blocks.blocks(page, "yaml"):
            if re.search(r"^nodes:", body, re.M):
                assert re.match(r"#\s*(spec:|refused:|fragment)", body), f"{page.name}: mark this block:\n{body[:300]}"


@pytest.mark.parametrize("page", [pytest.param(p, id=str(p.relative_to(doc_blocks.DOCS)),
                                               marks=[pytest.mark.slow] if p.name in TORCH_PAGES else [])
                                  for p in doc_blocks.pages() if doc_blocks.blocks(p, "console")])
def test_console_blocks_print_what_the_page_shows(page, workdir):
    for body in doc_blocks.blocks(page, "console"):
        for command, want in doc_blocks.commands(body):
            got = doc_blocks.run(command, workdir)
            assert doc_blocks.tidy(got) == doc_blocks.tidy(want), (
                f"{page.name}: $ {command}\n--- the page shows:\n{want}\n--- it prints:\n{got}\n"
                "(python tools/doc_blocks.py --update PAGE writes today's output)")


@pytest.mark.slow
@pytest.mark.parametrize("page", [pytest.param(p, id=str(p.relative_to(doc_blocks.DOCS)))
                                  for p in doc_blocks.pages() if doc_blocks.python_runs(p)])
def test_python_blocks_run_and_print_what_the_page_shows(page, workdir):
    pytest.importorskip("torch")
    namespace: dict = {}
    for code, shown in doc_blocks.python_runs(page):
        printed = doc_blocks.run_python(code, workdir, namespace)
        if shown is not None:
            assert doc_blocks.tidy(printed) == doc_blocks.tidy(shown), (
                f"{page.name}:\n{code}\n--- the page shows:\n{shown}\n--- it prints:\n{printed}")


# -- the site ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """`mkdocs build --strict` of this checkout: (the site's folder, what mkdocs logged)."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return out, done.stderr


@NEEDS_DOT
@pytest.mark.slow
def test_the_site_builds_strictly_without_warnings(site):
    folder, log = site
    assert "WARNING" not in log, log
    for page in ("tutorial", "tutorial/run-and-train", "spec-language", "family-templates", "gallery",
                 "howto/import-config", "howto/compare", "howto/run-and-train", "checkpoints"):
        assert (folder / page / "index.html").is_file(), page
    tutorial = (folder / "tutorial" / "index.html").read_text()
    assert "203,530" in tutorial  # the first spec's count, as the page's console block shows it


@NEEDS_DOT
@pytest.mark.slow
def test_every_op_has_its_entry(site):
    from archgraph.ops import REGISTRY
    from archgraph.ops.help import describe
    folder, _ = site
    index = (folder / "ops" / "index.html").read_text()
    for name, cls in REGISTRY.items():
        module = cls.__module__.rsplit(".", 1)[-1]
        html = (folder / "ops" / module / "index.html").read_text()
        assert f'<h2 id="{name}">' in html, name
        entry = html.split(f'<h2 id="{name}">', 1)[1].split("<h2 ", 1)[0]
        for arg, _, _, meaning in describe(name).hyperparameters:  # each argument with its sentence
            assert f"<code>{arg}</code>" in entry and meaning.split()[0] in entry, (name, arg)
        assert f"my_{name}" in entry, name  # the example line
        assert "PyTorch equivalent" in entry and "In a model" in entry, name
        assert f'href="{module}/#{name}"' in index, name
    linear = (folder / "ops" / "linear" / "index.html").read_text()  # its first use, shapes and FLOPs
    assert ("<code>albert-base-v2</code>, node <code>encoder.embedding_hidden_mapping_in</code>" in linear
            and "<code>[B, S, 128]</code> → outputs <code>[B, S, 768]</code>" in linear
            and "196608·B·S" in linear)  # 2 · 128 · 768 per token


@NEEDS_DOT
@pytest.mark.slow
def test_the_gallery_draws_every_builtin_and_example(site):
    from archgraph.load import builtin_specs
    folder, _ = site
    page = (folder / "gallery" / "index.html").read_text()
    examples = [p.stem for p in (ROOT / "examples").glob("*.yaml")]
    configs = [p.parent.name for p in (ROOT / "examples").glob("*/config.json")]
    assert "tiny-llama" in configs
    for name in list(builtin_specs()) + examples + configs:
        svg = (folder / "gallery" / f"{name}.svg").read_text()
        title = name.replace("-", "&#45;")  # dot's escaping
        assert "<svg" in svg and f"<title>{title}</title>" in svg, name  # drawn by dot, titled with the model's name
        assert f"{name}.svg" in page, name
    assert "124,439,808 parameters" in page  # gpt2's total beside its diagram
    report = (folder / "gallery" / "report.html").read_text()  # archgraph report, linked from the page
    assert 'href="report.html"' in page and "<title>archgraph report: gpt2, bert-base-uncased, t5-small" in report


def test_readme_links_into_docs_resolve():
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\((docs/[^)#]+)", readme) + re.findall(r'src="(docs/[^"]+)"', readme)
    assert targets
    for target in targets:
        assert (ROOT / target).is_file(), target


def test_the_test_extra_installs_the_docs_extra():
    """CI runs `pip install -e ".[test]"` and then builds the site: `test` must hold `docs`'s pins."""
    text = (ROOT / "pyproject.toml").read_text()

    def extra(name):
        return set(re.findall(r'"([^"]+)"', re.search(rf"^{name} = \[(.*?)\]", text, re.S | re.M).group(1)))
    assert extra("docs") == {"mkdocs==1.6.1", "mkdocs-material==9.8.2"} and extra("docs") <= extra("test")


def test_the_reference_names_every_key_and_function():
    """The spec language reference lists what the code accepts: a key or function added to the
    language and not to docs/spec-language.md fails here."""
    from archgraph.expr import FUNCTIONS
    from archgraph.spec.blocks import BLOCK_KEYS
    from archgraph.spec.extends import TOP_KEYS
    from archgraph.spec.graphs import NODE_KEYS
    text = (doc_blocks.DOCS / "spec-language.md").read_text()
    section = lambda title: text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]  # noqa: E731
    table_keys = lambda title: set(re.findall(r"^\| `(\w+)` \|", section(title), re.M))  # noqa: E731
    assert TOP_KEYS <= table_keys("Top-level keys"), TOP_KEYS - table_keys("Top-level keys")
    assert BLOCK_KEYS - {"nodes"} <= table_keys("Blocks"), BLOCK_KEYS - table_keys("Blocks")
    nodes = table_keys("Nodes") | {"name", "op", "block"}  # these three in the prose above the table
    assert NODE_KEYS <= nodes, NODE_KEYS - nodes
    values = section("Values and expressions")
    assert all(f"`{name}`" in values for name in FUNCTIONS), [n for n in FUNCTIONS if f"`{n}`" not in values]
