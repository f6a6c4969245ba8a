"""The specs and terminal sessions the documentation shows, read from docs/*.md (tests/test_docs_site.py
runs them); `python tools/doc_blocks.py --update [PAGE ...]` writes what each command prints today
into its page (then read the diff: a changed count is a finding, not a formality).

Conventions of the pages:
- a ```yaml block whose first line is `# spec: NAME.yaml` is a complete spec; every such block of
  the site is written, under that name, into one folder (`examples/` beside them); `# refused:
  NAME.yaml` is one written there too that archgraph must refuse (to show its error);
- a ```console block holds `$ archgraph ...` commands, each followed by what it prints (stdout,
  then stderr), run in that folder at 80 columns, page by page in the site's order;
- a ```python block whose first line is `# run` runs there too (a page's blocks share their
  names, in order); a ```text block right after it is what it prints.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)
MARK = re.compile(r"#\s*(spec|refused):\s*(\S+\.yaml)\s*$")


def pages() -> list[Path]:
    """Every page, in the order of mkdocs.yml's nav (pages not in it last)."""
    nav = re.findall(r":\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    ordered = [DOCS / p for p in nav if (DOCS / p).is_file()]
    return ordered + sorted(p for p in DOCS.rglob("*.md") if p not in ordered)


def blocks(page: Path, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(page.read_text()) if kind == lang]


def python_runs(page: Path) -> list[tuple[str, str | None]]:
    """(code, what the page says it prints, or None) of each `# run` python block of `page`."""
    text = page.read_text()
    found = list(FENCE.finditer(text))
    out = []
    for n, match in enumerate(found):
        if match.group(1) == "python" and match.group(2).startswith("# run"):
            after = found[n + 1] if n + 1 < len(found) else None
            shown = (after.group(2) if after is not None and after.group(1) == "text"
                     and not text[match.end():after.start()].strip() else None)
            out.append((match.group(2), shown))
    return out


def run_python(code: str, folder: Path, namespace: dict) -> str:
    """What `code` prints, run in `folder` with `namespace` (a page's blocks share one)."""
    out = io.StringIO()
    here = os.getcwd()
    try:
        os.chdir(folder)
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<docs>", "exec"), namespace)  # our own pages' code, not user input
    finally:
        os.chdir(here)
    return out.getvalue()


def spec_blocks() -> dict[str, tuple[Path, str, bool]]:
    """file name -> (page, text, whether archgraph must accept it) of every marked yaml block."""
    out: dict[str, tuple[Path, str, bool]] = {}
    for page in pages():
        for body in blocks(page, "yaml"):
            found = MARK.match(body.split("\n", 1)[0])
            if found:
                kind, name = found.groups()
                if name in out:
                    raise ValueError(f"two specs named {name}: {out[name][0].name} and {page.name}")
                out[name] = (page, body, kind == "spec")
    return out


def write_specs(folder: Path) -> None:
    """Every marked spec of the site into `folder`, and `examples/` beside them."""
    for name, (_, body, _) in spec_blocks().items():
        (folder / name).write_text(body)
    if not (folder / "examples").exists():
        (folder / "examples").symlink_to(ROOT / "examples")


def commands(body: str) -> list[tuple[str, str]]:
    """(command, what the page says it prints) of a console block."""
    out: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif not out:
            raise ValueError(f"a console block opens with output, not a command: {line!r}")
        else:
            out[-1][1].append(line)
    return [(c, "\n".join(lines)) for c, lines in out]


def argv(command: str) -> list[str]:
    """The arguments of `archgraph ...` (a trailing `  # comment` is not one)."""
    words = shlex.split(command.split("  #")[0])
    if words[0] != "archgraph":
        raise ValueError(f"only archgraph commands run in a console block: {command}")
    return words[1:]


def tidy(text: str) -> str:
    """Output as a page holds it: no trailing spaces, no blank lines around it."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def run(command: str, folder: Path) -> str:
    """What `command` prints (stdout, then stderr) run in `folder` at 80 columns, in this process."""
    from archgraph.cli import main
    out, err = io.StringIO(), io.StringIO()
    here, columns = os.getcwd(), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        os.chdir(folder)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv(command))
    finally:
        os.chdir(here)
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return out.getvalue() + err.getvalue()


def update(page: Path, folder: Path) -> None:
    """Rewrite each console block of `page` with what its commands print now."""
    text = page.read_text()

    def fill(match: re.Match) -> str:
        if match.group(1) != "console":
            return match.group(0)
        parts = []
        for command, _ in commands(match.group(2)):
            parts += [f"$ {command}", tidy(run(command, folder))]
        return "```console\n" + "\n".join(p for p in parts if p) + "\n```"

    text = FENCE.sub(fill, text)
    namespace: dict = {}
    for code, shown in python_runs(page):
        printed = tidy(run_python(code, folder, namespace))
        if shown is not None:
            text = text.replace(f"```python\n{code}```\n\n```text\n{shown}```",
                                f"```python\n{code}```\n\n```text\n{printed}\n```", 1)
    page.write_text(text)


def main(args: list[str]) -> int:
    import tempfile
    if not args or args[0] != "--update":
        print(__doc__)
        return 2
    sys.path.insert(0, str(ROOT))
    chosen = {Path(a).resolve() for a in args[1:]}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_specs(folder)
        for page in pages():  # in order: a page may read what an earlier one wrote
            if not blocks(page, "console") and not python_runs(page):
                continue
            if not chosen or page in chosen:
                update(page, folder)
                print(f"updated {page.relative_to(ROOT)}")
            else:
                for body in blocks(page, "console"):
                    for command, _ in commands(body):
                        run(command, folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
