"""How fast `archgraph plan` answers: one plan of a 1,000-layer model, and searches of over a
thousand layouts.

    python benchmarks/plan_speed.py                 # median of 5 runs of each case
    python benchmarks/plan_speed.py --repeats 9

Each case runs the command in a fresh process (`archgraph plan ... --json`, the interpreter's
start included) and also in-process (the model loaded, walked and planned: `plan` itself), and
prints a Markdown table of medians, wall clock and the process's CPU time (which another job
on a shared machine does not inflate).
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

CASES = [
    ("one plan, Llama-2-7B at 1,000 layers", ["llama-2-7b", "--set", "L=1000", "--gpus", "64", "--tp", "8",
                                               "--pp", "8", "--zero", "1", "--global-batch", "64", "--seq", "4096"]),
    ("one plan, GPT-3 175B (eager, tp 8, sp, selective)", ["gpt3-175b", "--attention", "eager", "--gpus", "1024",
                                                          "--tp", "8", "--sp", "--pp", "16", "--recompute",
                                                          "selective", "--global-batch", "1536"]),
    ("search, Llama-2-70B on 64 A100s", ["llama-2-70b", "--gpus", "64", "--search", "--seq", "4096"]),
    ("search, Llama-2-7B at 1,000 layers on 512 GPUs", ["llama-2-7b", "--set", "L=1000", "--gpus", "512",
                                                         "--search", "--seq", "4096"]),
    ("serve, Llama-2-70B int4 on 2 GPUs", ["llama-2-70b", "--serve", "--dtype", "int4", "--tp", "2",
                                           "--batch", "16", "--context", "4096"]),
]


def in_process(args: list[str]) -> tuple[float, float, int]:
    """(wall, CPU seconds, layouts planned) of `main(["plan", *args, "--json"])` in this process."""
    import contextlib
    import io

    from archgraph.cli import main
    out = io.StringIO()
    wall, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out):
        code = main(["plan", *args, "--json"])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if code:
        raise SystemExit(f"plan {' '.join(args)} failed")
    data = json.loads(out.getvalue())
    return wall, cpu, data.get("tried", 1)


def fresh(args: list[str]) -> tuple[float, float]:
    """(wall, CPU seconds of the child) of the command in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run([sys.executable, "-m", "archgraph.cli", "plan", *args, "--json"], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    print("| case | layouts | in process: wall s | CPU s | fresh process: wall s | CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, args in CASES:
        inner = [in_process(args) for _ in range(repeats)]
        outer = [fresh(args) for _ in range(repeats)]
        med = lambda xs: statistics.median(xs)  # noqa: E731
        print(f"| {label} | {inner[0][2]:,} | {med([w for w, _, _ in inner]):.3f} | {med([c for _, c, _ in inner]):.3f} "
              f"| {med([w for w, _ in outer]):.3f} | {med([c for _, c in outer]):.3f} |", flush=True)


if __name__ == "__main__":
    main()
