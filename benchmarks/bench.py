"""Wall-time benchmark for archgraph; prints a Markdown table of medians.

Run from anywhere, with the Python that has archgraph installed:

    python benchmarks/bench.py                      # archgraph only
    python benchmarks/bench.py --repeats 11         # more repeats
    python benchmarks/bench.py --framework /path/to/python   # a Python with torch + transformers

What it measures (median of --repeats runs, time.perf_counter):
  * in-process, after a warm-up call: archgraph.load(spec) + .params() + .shapes(B=1, S=...)
    for llama-2-7b as shipped (32 layers), with L=10 and L=1000, and gpt2 with L=1000
    (S=1024 for gpt2, its position table). Depth should not cost: repeated blocks are
    evaluated once.
  * report.nodes() expansion of the params report (every node path, repetitions expanded);
    this is linear in depth by design and is reported separately.
  * cold runs as subprocesses (Python start-up and imports included): the CLI
    `archgraph params llama-2-7b --json`, and `import archgraph` + load + params + shapes.
  * with --framework: in that interpreter, `import torch, transformers`, and building
    LlamaForCausalLM(LlamaConfig(**config)) on torch.device("meta") from
    tests/data/reference/hf/llama-2-7b.json and summing p.numel() (must be 6738415616).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HF_CONFIG = Path(__file__).resolve().parents[1] / "tests" / "data" / "reference" / "hf" / "llama-2-7b.json"
LLAMA_7B = 6738415616

FRAMEWORK_CODE = r"""
import json, sys, time
t0 = time.perf_counter()
import torch, transformers
t1 = time.perf_counter()
config = json.load(open(sys.argv[1]))["config"]
with torch.device("meta"):
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config))
total = sum(p.numel() for p in model.parameters())
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "build": t2 - t1, "total": total,
                  "versions": f"torch {torch.__version__}, transformers {transformers.__version__}"}))
"""

COLD_CODE = ("import archgraph; m = archgraph.load('llama-2-7b'); "
             "assert m.params().total == %d; m.shapes(B=1, S=4096)" % LLAMA_7B)


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def run_child(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(argv[:3])}... failed:\n{done.stderr[-2000:]}")
    return done.stdout


def archgraph_rows(repeats: int) -> list[tuple[str, float, int, str]]:
    import archgraph

    def full(name: str, settings: dict | None, seq: int):
        model = archgraph.load(name, settings)
        total = model.params().total
        model.shapes(B=1, S=seq)
        return total

    full("llama-2-7b", None, 4096)  # warm-up: lazy imports (sympy), file caches
    rows = []
    for name, layers, seq in [("llama-2-7b", None, 4096), ("llama-2-7b", 10, 4096),
                              ("llama-2-7b", 1000, 4096), ("gpt2", 1000, 1024)]:
        settings = {"L": layers} if layers else None
        total = full(name, settings, seq)
        label = f"{name}{f' L={layers}' if layers else ''}: load + params + shapes(B=1, S={seq})"
        rows.append((label, median_time(lambda: full(name, settings, seq), repeats), repeats,
                     f"{total:,} params"))
    for layers in (10, 1000):
        report = archgraph.load("llama-2-7b", {"L": layers}).params()
        count = sum(1 for _ in report.nodes())
        rows.append((f"llama-2-7b L={layers}: sum(1 for _ in params().nodes())",
                     median_time(lambda: sum(1 for _ in report.nodes()), repeats), repeats,
                     f"{count:,} node paths; linear in depth by design"))
    return rows


def sweep_rows(repeats: int) -> list[tuple[str, float, int, str]]:
    """`archgraph sweep`: the closed-form formula, derived once and lambdified, over a 6,100-point grid."""
    from archgraph import load
    from archgraph.passes.sweep import sweep

    grid = {"L": list(range(1, 51)), "H": list(range(256, 4097, 64)), "I": [8192, 11008]}
    size = 50 * 61 * 2
    sweep("llama-2-7b", grid, load=load)  # warm-up
    seconds = median_time(lambda: sweep("llama-2-7b", grid, load=load), repeats)
    return [(f"sweep llama-2-7b over {size:,} configurations (L x H x I), formula included", seconds, repeats,
             f"{size / seconds:,.0f} configurations/s")]


def config_and_render_rows(repeats: int) -> list[tuple[str, float, int, str]]:
    """A Hugging Face config.json read through its family template; the 80-layer diagram through dot."""
    import json
    import tempfile

    from archgraph.load import load_config
    from archgraph.load import load
    from archgraph.render.diagram import diagram_svg

    rows = []
    ref = HF_CONFIG.parent / "llama-2-70b.json"
    if ref.is_file():
        folder = Path(tempfile.mkdtemp())
        config = folder / "config.json"
        config.write_text(json.dumps(json.loads(ref.read_text())["config"]))
        total = load_config(config).params().total
        seconds = median_time(lambda: load_config(config).params().total, repeats)
        rows.append(("llama-2-70b config.json: read + template + params", seconds, repeats, f"{total:,} params"))
    if shutil.which("dot"):
        seconds = median_time(lambda: diagram_svg(load("llama-2-70b")), repeats)
        rows.append(("llama-2-70b: load + diagram to SVG (dot included, 80 layers collapsed)", seconds, repeats,
                     "in a running Python"))
        cli = shutil.which("archgraph", path=str(Path(sys.executable).parent)) or shutil.which("archgraph")
        if cli:
            out = Path(tempfile.mkdtemp()) / "llama.svg"
            seconds = median_time(lambda: run_child([cli, "render", "llama-2-70b", "-o", str(out)]), 3)
            rows.append(("CLI subprocess: `archgraph render llama-2-70b -o llama.svg`", seconds, 3,
                         "Python start-up + imports + dot"))
    return rows


def cold_rows(repeats: int) -> list[tuple[str, float, int, str]]:
    cli = shutil.which("archgraph", path=str(Path(sys.executable).parent)) or shutil.which("archgraph")
    argv = [cli, "params", "llama-2-7b", "--json"] if cli else \
        [sys.executable, "-c", "import sys; from archgraph.cli import main; sys.exit(main())",
         "params", "llama-2-7b", "--json"]
    assert json.loads(run_child(argv)), "CLI printed no JSON"
    rows = [("CLI subprocess: `archgraph params llama-2-7b --json`",
             median_time(lambda: run_child(argv), repeats), repeats, "Python start-up + imports included")]
    cold = [sys.executable, "-c", COLD_CODE]
    rows.append(("subprocess: import archgraph + load + params + shapes(B=1, S=4096)",
                 median_time(lambda: run_child(cold), repeats), repeats, "cold: first shapes() call included"))
    bare = [sys.executable, "-c", "pass"]
    rows.append(("subprocess: `python -c pass` (baseline)",
                 median_time(lambda: run_child(bare), repeats), repeats, "interpreter start-up only"))
    return rows


def framework_rows(python: str, repeats: int) -> list[tuple[str, float, int, str]]:
    runs = [json.loads(run_child([python, "-c", FRAMEWORK_CODE, str(HF_CONFIG)]).splitlines()[-1])
            for _ in range(repeats)]
    for run in runs:
        if run["total"] != LLAMA_7B:
            sys.exit(f"bench: transformers counted {run['total']}, expected {LLAMA_7B}")
    print(f"transformers LlamaForCausalLM on meta: {runs[0]['total']} parameters ({runs[0]['versions']})")
    return [("framework: `import torch, transformers`", statistics.median(r["import"] for r in runs),
             repeats, runs[0]["versions"]),
            ("framework: LlamaForCausalLM on meta + sum(p.numel())", statistics.median(r["build"] for r in runs),
             repeats, f"{runs[0]['total']:,} params; after the import")]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=7, help="in-process repeats (default 7)")
    p.add_argument("--cold-repeats", type=int, default=5, help="subprocess repeats (default 5)")
    p.add_argument("--framework", metavar="PYTHON", help="a python with torch and transformers")
    p.add_argument("--framework-repeats", type=int, default=3, help="framework subprocess repeats (default 3)")
    args = p.parse_args()

    rows = (archgraph_rows(args.repeats) + sweep_rows(args.repeats) + config_and_render_rows(args.repeats)
            + cold_rows(args.cold_repeats))
    if args.framework:
        rows += framework_rows(args.framework, args.framework_repeats)
    print(f"\nmachine: {os.cpu_count()} CPUs, Python {platform.python_version()} ({platform.machine()}), "
          f"{platform.system()}\n")
    print("| case | median | repeats | note |")
    print("| --- | ---: | ---: | --- |")
    for label, seconds, repeats, note in rows:
        print(f"| {label} | {fmt(seconds)} | {repeats} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
