"""How long `archgraph sweep` takes at its limits (archgraph/limits.py), each run a fresh process:

    python benchmarks/sweep_speed.py              # 3 rounds of each case, medians
    python benchmarks/sweep_speed.py --rounds 1 --points 1000000   # a grid past the limit, as it was

Cases: MAX_SWEEP_POINTS points of llama-2-7b counted from the formula (L x V), printed as CSV and
as JSON; a terminal table of MAX_SWEEP_TABLE rows (at 120 columns, into a pipe); MAX_SWEEP_BUILDS
points built one by one (`--check`, gpt2 over L x V).  It prints seconds, points per second and
the peak resident memory of each.  `--points N` asks for a CSV grid of N points instead of the
limit (past it, the command refuses in a fraction of a second: the figure is the refusal's).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archgraph.limits import MAX_SWEEP_BUILDS, MAX_SWEEP_POINTS, MAX_SWEEP_TABLE  # noqa: E402


def values(start: int, step: int, count: int) -> str:
    return ",".join(str(start + step * i) for i in range(count))


def grid(points: int) -> list[str]:
    """--vary arguments for `points` points of llama-2-7b, all counted from the formula (L >= 2)."""
    layers = 100 if points >= 100 else points
    return ["--vary", f"L={values(2, 1, layers)}", "--vary", f"V={values(1000, 1000, points // layers)}"]


def cases(points: int | None) -> dict[str, tuple[int, list[str]]]:
    n = points or MAX_SWEEP_POINTS
    built = ["--vary", f"L={values(1, 1, 100)}", "--vary", f"V={values(50257, 1, MAX_SWEEP_BUILDS // 100)}"]
    out = {f"{n:,} points, CSV": (n, ["llama-2-7b", *grid(n), "--csv"])}
    if points is None:
        out[f"{n:,} points, JSON"] = (n, ["llama-2-7b", *grid(n), "--json"])
        out[f"{MAX_SWEEP_TABLE:,} rows, table"] = (MAX_SWEEP_TABLE, ["llama-2-7b", *grid(MAX_SWEEP_TABLE)])
        out[f"{MAX_SWEEP_BUILDS:,} built, --check"] = (MAX_SWEEP_BUILDS, ["gpt2", *built, "--csv", "--check"])
    return out


CHILD = """import resource, sys
from archgraph.cli import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)"""


def run(args: list[str]) -> tuple[float, float, int]:
    """(seconds, peak MB, exit status) of `archgraph sweep ARGS` in a fresh process."""
    env = {**os.environ, "COLUMNS": "120", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, "sweep", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=env)
    seconds = time.perf_counter() - start
    return seconds, int(done.stderr.split()[-1]) / 1024, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--points", type=int, help="a CSV grid of this many points instead of the limits' cases")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, median of {args.rounds}\n")
    print("| case | seconds | points/s | peak MB | status |")
    print("|---|---:|---:|---:|---:|")
    for case, (points, argv) in cases(args.points).items():
        runs = [run(argv) for _ in range(args.rounds)]
        seconds = statistics.median(r[0] for r in runs)
        print(f"| {case} | {seconds:.2f} | {points / seconds:,.0f} | {max(r[1] for r in runs):,.0f} | "
              f"{runs[0][2]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
