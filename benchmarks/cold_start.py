"""Cold start: `archgraph params` against transformers on the meta device, same question, fresh processes.

Run with the Python that has archgraph installed, and a Python that has torch and transformers:

    python benchmarks/cold_start.py --framework /path/to/python           # 9 interleaved rounds
    python benchmarks/cold_start.py --framework /path/to/python --rounds 15

For each model, every round runs, one after the other (interleaved, so a slow moment of the
machine hurts both sides alike):

  * `archgraph params CONFIG.json --json`: a Hugging Face config.json (from the reference
    figures in tests/data/reference/hf), read through its family template;
  * `archgraph params NAME --json` for the models that are also built-in specs;
  * the framework: `import torch, transformers`, then `AutoModelFor...from_config(...)` under
    `torch.device("meta")` and `sum(p.numel() for p in model.parameters())`.

Both must print the reference total.  Every round also runs the floor, a bare
`python -c "import yaml"` (the interpreter and the one library archgraph needs; issue 24 asks for
archgraph within 2.5x of it).  The table shows medians, the ratio to the floor and how many times
sooner than transformers (ratios of medians).  Then `python -X importtime` of the CLI on the first
config, with its slowest imports (cumulative).

On a busy machine, `--instructions` also counts the instructions each archgraph command and the
floor execute, once each, with valgrind's callgrind (`apt-get install valgrind`): a count does not
move with the load, so its ratio to the floor's is the steady figure (time ratios drift with it).
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
import tempfile
import time
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "reference" / "hf"
MODELS = {  # reference file -> (transformers auto class, built-in spec of the same model or None)
    "llama-2-70b": ("AutoModelForCausalLM", "llama-2-70b"),
    "llama-2-7b": ("AutoModelForCausalLM", "llama-2-7b"),
    "mixtral-8x7b": ("AutoModelForCausalLM", None),
    "bert-base-uncased": ("AutoModel", "bert-base-uncased"),
}

FLOOR = [sys.executable, "-c", "import yaml"]  # the interpreter and PyYAML: what no command can beat
FRAMEWORK = r"""
import json, sys
import torch, transformers
config = json.load(open(sys.argv[1]))
auto = getattr(transformers, sys.argv[2])
with torch.device("meta"):
    model = auto.from_config(transformers.AutoConfig.for_model(**config))
print(sum(p.numel() for p in model.parameters()))
"""


def timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"cold_start: {' '.join(argv)} failed:\n{out.stderr}")
    return seconds, out.stdout


def instructions(argv: list[str]) -> int:
    """Instructions the process executes (callgrind, children not traced)."""
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                         capture_output=True, text=True)
    counted = [line for line in out.stderr.splitlines() if "Collected :" in line]
    if out.returncode != 0 or not counted:
        sys.exit(f"cold_start: valgrind {' '.join(argv)} failed:\n{out.stderr[-2000:]}")
    return int(counted[-1].split()[-1])


def total_of(stdout: str) -> int:
    text = stdout.strip()
    return int(text) if text.isdigit() else json.loads(text)["total"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--framework", metavar="PYTHON", help="a Python with torch and transformers")
    p.add_argument("--rounds", type=int, default=9, help="interleaved rounds per model (default 9)")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--instructions", action="store_true",
                   help="also count instructions with valgrind's callgrind (steady under load)")
    args = p.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        sys.exit("cold_start: --instructions needs valgrind (apt-get install valgrind)")
    cli = shutil.which("archgraph", path=str(Path(sys.executable).parent)) or shutil.which("archgraph")
    if cli is None:
        sys.exit("cold_start: the archgraph command is not installed beside this Python")
    # An installed wheel has its byte code (pip compiles it); an editable install writes it on the
    # first run, unless PYTHONDONTWRITEBYTECODE is set, when every run compiles archgraph's sources
    # again (about 50 ms more).  Measure what an installed package does: compile it first.
    import archgraph
    import compileall
    compileall.compile_dir(str(Path(archgraph.__file__).parent), quiet=1)
    folder = Path(tempfile.mkdtemp())
    rows = []
    counts: list[tuple[str, str, int]] = []  # (model, command, instructions) with --instructions
    floors: list[float] = []
    for name in args.models:
        ref = json.loads((REFERENCE / f"{name}.json").read_text())
        config = folder / name / "config.json"
        config.parent.mkdir()
        config.write_text(json.dumps(ref["config"]))
        auto, builtin = MODELS[name]
        cases = {f"archgraph params {name}/config.json": [cli, "params", str(config), "--json"]}
        if builtin:
            cases[f"archgraph params {builtin}"] = [cli, "params", builtin, "--json"]
        if args.framework:
            cases["transformers on meta"] = [args.framework, "-c", FRAMEWORK, str(config), auto]
        times: dict[str, list[float]] = {case: [] for case in cases}
        for _ in range(args.rounds):
            for case, argv in cases.items():
                seconds, out = timed(argv)
                if total_of(out) != ref["expected_params"]:
                    sys.exit(f"cold_start: {case} counted {total_of(out)}, expected {ref['expected_params']}")
                times[case].append(seconds)
            floors.append(timed(FLOOR)[0])  # in the same rounds: a slow moment hurts it too
        medians = {case: statistics.median(t) for case, t in times.items()}
        floor = statistics.median(floors)  # this model's rounds: the ratio compares like with like
        framework = medians.get("transformers on meta")
        rows.append((name, "python -c 'import yaml' (the floor)", floor, "", "", ref["expected_params"]))
        for case, median in medians.items():
            ratio = f"{framework / median:.0f}x" if framework and case != "transformers on meta" else ""
            rows.append((name, case, median, f"{median / floor:.1f}x", ratio, ref["expected_params"]))
        floors.clear()
        if args.instructions:
            counts += [(name, case, instructions(argv)) for case, argv in cases.items()
                       if case != "transformers on meta"]

    print(f"machine: {os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}; "
          f"median of {args.rounds} interleaved rounds\n")
    print("| model | command | median | x the floor | faster than transformers |")
    print("|---|---|---:|---:|---:|")
    for model, case, median, floor_ratio, ratio, total in rows:
        print(f"| {model} ({total:,}) | {case} | {median * 1000:,.0f} ms | {floor_ratio} | {ratio} |")

    if counts:
        floor = instructions(FLOOR)
        print(f"\nInstructions (callgrind), the floor {floor / 1e6:,.0f} M:\n")
        print("| model | command | instructions | x the floor |")
        print("|---|---|---:|---:|")
        for model, case, count in counts:
            print(f"| {model} | {case} | {count / 1e6:,.0f} M | {count / floor:.2f}x |")

    first = folder / args.models[0] / "config.json"
    out = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import sys; from archgraph.cli import main; sys.exit(main())",
                          "params", str(first), "--json"], capture_output=True, text=True)
    entries = []
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            entries.append((int(parts[1]), parts[2].rstrip()))
    print("\n`python -X importtime` of `archgraph params config.json --json`, slowest (cumulative, ms):\n")
    for micros, module in sorted(entries, reverse=True)[:12]:
        print(f"    {micros / 1000:6.1f}  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
