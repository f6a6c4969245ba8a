"""Feed hostile names through every command and output format of archgraph, and check what comes
out: a clean refusal (exit status 2, one message and its fix) or the right answer; no control
character on the terminal; valid DOT with one box per node; a page whose data and HTML hold the
name escaped, under its Content-Security-Policy; charts, JSON and written specs that read back.

    python tools/fuzz_names.py --seed 1 --cases 40    # prints one JSON object: names, runs, failures

The names are NAMES (each a known attack on one output: rich markup, HTML, the JSON in a page's
<script>, DOT, mathtext, the terminal, paths) and REFUSED (what a spec may not name anything:
control and bidirectional characters, blanks, 201 characters), then `--cases` random mixes of
their fragments made from `--seed`.  Each name is put at every place a spec gives one (the model,
a node, the last node (the default output), an output, a category, a block call, the
description), into a checkpoint's tensor names and into the name of the folder a config.json
sits in.  tests/test_hostile_corpus.py runs the fixed corpus and seeded mixes.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NAMES = ["[/]", "[link=https://example.com]x[/link]", "[bold]b", ":smile:", "<!--<script>",
         "</script><script>document.title='pwned'</script>", "<img src=x onerror=alert(1)>", "a&amp;b",
         'a" [URL="javascript:alert(1)", href="javascript:alert(1)"]', 'q"uote', "back\\", "a/*b", "x*/",
         "a:b", "c:d:e", "}", "digraph", "\\N\\G\\l", "$\\frac{$", "$\\undefinedcmd$", "$x^2$", "%s%n",
         "{{x}}", "${x}", "'; DROP", "../../etc/passwd", "é中文😀", " lead", "a" * 199]  # and a "'": 200
REFUSED = ["", " ", "a\x1b[2Jb", "nul\x00", "bell\x07", "rtl\u202eevil", "line\u2028sep", "tab\tx", "nl\nx",
           "osc\x1b]8;;https://x\x1b\\", "zw\u200bj", "a" * 201, "nbsp\u00a0x"]
FRAGMENTS = ["[", "]", "/", "<", ">", "&", '"', "'", "\\", ":", "$", "{", "}", "*", "--", "<!--", "script",
             "javascript:", "\x1b", "\x00", "\u202e", "\u2028", "é", "😀", "\n", " ", "a", "[/]", "%"]
BOXES = {"d.dot": 7, "o.dot": 8}  # the input, 4 nodes (one in the block), the outputs and the legend
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def names(seed: int, cases: int) -> list[str]:
    """NAMES and REFUSED, then `cases` random mixes of FRAGMENTS made from `seed`."""
    rng = random.Random(seed)
    mixes = ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 8))) for _ in range(cases)]
    return NAMES + REFUSED + mixes


def accepted(name: str) -> bool:
    """What a spec may name a thing (archgraph.names.check_name's rule)."""
    return bool(name.strip()) and name.isprintable() and len(name) <= 200


def spec(name: str, outputs: bool = False) -> dict:
    """A spec holding `name` at every place a spec gives one (its last node, the default output, is
    `name` too; with `outputs`, an output is named `name` instead); 36 parameters."""
    data = {"archgraph": 1, "name": name, "description": name.replace("\n", " "),
            "variables": {"H": 4}, "inputs": {"x": ["B", 4]},
            "blocks": {"blk": {"category": name, "nodes": [{"name": name, "op": "relu"}]}},
            "nodes": [{"name": name, "op": "linear", "in_features": 4, "out_features": "H", "category": name},
                      {"name": "call", "block": "blk"},
                      {"name": "fc2", "op": "linear", "in_features": 4, "out_features": 4, "bias": False},
                      {"name": name + "'", "op": "relu"}]}
    if outputs:
        data["nodes"][-1]["name"] = "last"
        data["outputs"] = {name: "last", "out2" if name != "out2" else "out3": "call"}
    return data


def checkpoint(path: Path, tensors: list[str]) -> None:
    """A safetensors file of one-element F16 tensors named `tensors` (any text: surrogates too)."""
    header = json.dumps({t: {"dtype": "F16", "shape": [1], "data_offsets": [2 * i, 2 * i + 2]}
                         for i, t in enumerate(tensors)}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(2 * len(tensors)))


def cli(*args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `archgraph ARGS`, run in this process."""
    from archgraph.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except Exception as exc:  # noqa: BLE001 - the bug this corpus looks for
            import traceback
            code, err = -1, io.StringIO(traceback.format_exc())
            err.seek(0, 2)
            print(f"{type(exc).__name__}: {exc}", file=err)
    return code, out.getvalue(), err.getvalue()


def formats(model: str, other: str, folder: Path, images: bool = True) -> list[tuple[str, ...]]:
    """Every command that takes a model, in every output format (files written into `folder`);
    `other` (the name as an output's) is the second model of compare, chart and report.  Without
    `images`, the formats matplotlib and Graphviz draw (seconds each) are left out but DOT."""
    o = lambda name: str(folder / name)  # noqa: E731
    runs: list[tuple[str, ...]] = []
    for command in ("params", "shapes", "memory", "flops", "formula", "explain"):
        runs += [(command, model), (command, model, "--json")]
    runs += [("sweep", model, "--vary", "H=4,8"), ("sweep", model, "--vary", "H=4,8", "--json"),
             ("sweep", model, "--vary", "H=4,8", "--csv"), ("compare", model, other),
             ("compare", model, other, "--json"), ("render", model, "-o", o("d.dot")),
             ("render", other, "-o", o("o.dot")), ("report", model, other, "-o", o("r.html")),
             ("plan", model, "--train", "--gpus", "8"), ("plan", model, "--serve", "--json")]
    if images:
        runs += [("compare", model, other, "-o", o("c.png")), ("compare", model, other, "-o", o("c.svg")),
                 ("render", model, "-o", o("d.svg")), ("render", model, "-o", o("d.png")),
                 ("render", model, "-o", o("d.pdf")), ("chart", model, "-o", o("p.png")),
                 ("chart", model, "-o", o("p.svg")), ("chart", model, other, "-o", o("pc.svg")),
                 ("plan", model, "--train", "--gpus", "8", "--search", "--chart", o("s.svg"), "--report", o("s.html"))]
    return runs


def clean(text: str) -> bool:
    """No control, formatting or bidirectional character but line breaks."""
    return CONTROL.search(text) is None


def check_run(args: tuple[str, ...], name: str, result: tuple[int, str, str], folder: Path) -> list[str]:
    """What is wrong with one run's result."""
    code, out, err = result
    where = f"{' '.join(a[:40] for a in args[:3])} [{name[:30]!r}]"
    if code == -1 or "Traceback" in err:
        return [f"{where}: {err.strip().splitlines()[-1][:200]}"]
    problems = [] if clean(out) and clean(err) else [f"{where}: a control character reached the terminal"]
    if not accepted(name):
        if code != 2 or out or not re.fullmatch(r"archgraph: error: [^\n]*\n  fix: [^\n]*\n", err):
            problems.append(f"{where}: not one clean refusal ({code}): {err[:200]!r}")
        return problems
    if code != 0:
        return problems + [f"{where}: refused ({code}): {err[:200]!r}"]
    return problems + _output_problems(args, name, out, folder, where)


def _output_problems(args, name, out, folder, where) -> list[str]:
    problems = []
    if "--json" in args:
        data = json.loads(out)
        if args[0] in ("params", "shapes", "memory", "flops", "plan") and data.get("model") != name:
            problems.append(f"{where}: --json names the model {data.get('model')!r}")
        if args[0] == "params" and (data["total"], data.get("model")) != (36, name):
            problems.append(f"{where}: params --json says {data['total']}, {data.get('model')!r}")
    if args[0] == "render" and args[-1].endswith(".dot"):
        svg = subprocess.run(["dot", "-Tsvg", args[-1]], capture_output=True, text=True)
        boxes, want = svg.stdout.count('class="node"'), BOXES[Path(args[-1]).name]
        if svg.returncode or svg.stderr or boxes != want or "<a " in svg.stdout:
            problems.append(f"{where}: dot drew {boxes} boxes ({want} expected): {svg.stderr[:200]}")
        from html import unescape
        texts = {unescape(t).replace("\xa0", " ")  # Graphviz writes the second of two spaces as &#160;
                 for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg.stdout)}
        if len(name) <= 60 and name.strip() not in {t.strip() for t in texts}:  # longer: its ends only
            problems.append(f"{where}: the diagram does not show the name as written")
    if args[0] in ("report", "plan") and args[-1].endswith(".html"):
        problems += _page_problems(Path(args[-1]).read_text(), name, where)
    for suffix, magic in ((".png", b"\x89PNG"), (".pdf", b"%PDF"), (".svg", b"<?xml")):
        if "-o" in args and args[-1].endswith(suffix) and not Path(args[-1]).read_bytes().startswith(magic):
            problems.append(f"{where}: {args[-1]} is not a {suffix} file")
    return problems


def _page_problems(html: str, name: str, where: str) -> list[str]:
    from html import escape
    problems = []
    if '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'' not in html:
        problems.append(f"{where}: the page has no Content-Security-Policy")
    payload = re.search(r'<script type="application/json" id="archgraph-data">(.*?)</script>', html, re.S)
    if payload is None or re.search(r"[<>&]", payload.group(1)):
        problems.append(f"{where}: the page's data is not escaped")
    elif json.loads(payload.group(1))["models"][0]["name"] != name:
        problems.append(f"{where}: the page's data lost the name")
    if f"<h2>{escape(name)}</h2>" not in html:
        problems.append(f"{where}: the page does not show the name escaped")
    if _handlers(html):
        problems.append(f"{where}: inline handlers or styles in the page: {_handlers(html)[:3]}")
    return problems


def _handlers(html: str) -> list[str]:
    """The event handler (`onclick=`) and style attributes of the page's elements."""
    from html.parser import HTMLParser
    found: list[str] = []

    class Attributes(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.extend(f"{tag} {k}" for k, _ in attrs if k.startswith("on") or k == "style")
    Attributes().feed(html)
    return found


def _file_problems(name: str, folder: Path) -> list[str]:
    """`name` as a checkpoint's tensor names (check --against) and as a config.json's folder."""
    problems = []
    ckpt = folder / "m.safetensors"
    checkpoint(ckpt, [name, f"{name}.weight", "fc2.weight"])
    for args in (("check", str(ROOT / "specs" / "gpt2.yaml"), "--against", str(ckpt)),
                 ("check", str(ROOT / "specs" / "gpt2.yaml"), "--against", str(ckpt), "--json"), ("params", str(ckpt))):
        code, out, err = result = cli(*args)
        where = f"{args[0]} [{name[:30]!r}]"
        if code not in (0, 1) or not clean(out) or not clean(err):
            problems.append(f"{where}: {code} {err[-200:]!r}" if code else f"{where}: a control character")
        elif "--json" in args and name not in {t["name"] for t in json.loads(out)["extra"]}:
            problems.append(f"{where}: --json lost the tensor name")
        del result
    try:
        if "/" in name or "\x00" in name or len(name.encode("utf-8")) > 200 or name.strip(".") == "":
            return problems  # not a folder's name
    except UnicodeEncodeError:  # a lone surrogate
        return problems
    config = folder / name / "config.json"
    config.parent.mkdir()
    config.write_text((ROOT / "examples" / "mistral-7b" / "config.json").read_text())
    written = folder / "imported.yaml"
    for args in (("params", str(config), "--json"), ("import-hf", str(config), "-o", str(written)),
                 ("params", str(written), "--json")):
        code, out, err = cli(*args)
        if code != 0 or not clean(out) or not clean(err) or ("--json" in args and json.loads(out)["total"] != 7_241_732_096):
            problems.append(f"{args[0]} of a config in folder {name[:30]!r}: {code} {err[-200:]!r}")
    return problems


def run_name(name: str, folder: Path, images: bool = True) -> tuple[int, list[str]]:
    """(runs, failures) of one name through every command and format (`formats`)."""
    folder.mkdir(parents=True, exist_ok=True)
    model, other = folder / "m.yaml", folder / "other.yaml"
    model.write_text(yaml.safe_dump(spec(name), allow_unicode=True, sort_keys=False), encoding="utf-8")
    other.write_text(yaml.safe_dump(spec(name, outputs=True), allow_unicode=True, sort_keys=False), encoding="utf-8")
    runs = formats(str(model), str(other), folder, images)
    if not accepted(name):  # refused by every command alike
        runs = [r for r in runs if r[0] in ("params", "render", "report", "chart")]
    failures = []
    for args in runs:
        failures += check_run(args, name, cli(*args), folder)
    failures += _file_problems(name, folder)
    return len(runs) + 6, failures


def spec_of_all(names: list[str]) -> dict:
    """One model whose nodes, categories and outputs are named by all of `names` (accepted ones)
    at once: a linear layer (H = 4: 20 parameters) named by each, a relu after it, an output of each."""
    names = [n for n in names if accepted(n)]
    nodes, outputs = [], {}
    for i, name in enumerate(names):
        nodes += [{"name": name, "op": "linear", "in_features": "H", "out_features": "H",
                   "category": names[(i + 1) % len(names)]}, {"name": f"r{i}", "op": "relu"}]
        outputs[name] = f"r{i}"
    return {"archgraph": 1, "name": names[0], "description": " ".join(names), "variables": {"H": 4},
            "inputs": {"x": ["B", "H"]}, "nodes": nodes, "outputs": outputs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=40, help="random names besides the fixed corpus")
    parser.add_argument("--no-images", action="store_true", help="leave out PNG, SVG and PDF (DOT stays)")
    args = parser.parse_args()
    import tempfile
    total, failures = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = names(args.seed, args.cases)
        for i, name in enumerate(corpus):
            runs, found = run_name(name, Path(tmp) / f"case{i}", not args.no_images)
            total += runs
            failures += found
    print(json.dumps({"seed": args.seed, "names": len(corpus), "runs": total, "failures": failures}))


if __name__ == "__main__":
    main()
