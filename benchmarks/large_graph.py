"""Large flat graphs: declare, build, count and shape a chain of N distinct `linear` nodes.

Run from anywhere, with the Python that has archgraph installed:

    python benchmarks/large_graph.py                    # 10k, 100k and 1M nodes
    python benchmarks/large_graph.py --sizes 200000     # other sizes
    python benchmarks/large_graph.py --repeats 3        # median of 3 runs per size

Each run is a fresh process, so its peak memory is its own.  It declares the chain with
`ModelBuilder` (one `node()` call per node, as a script that generates a graph would), builds
it (`build()`: the spec interpreter and the shape check every command makes), then asks
`params()` and `shapes()`, and checks the answers (N x (64 x 64 + 64) parameters; the last
node's shape).  Then it asks for the diagram, which is refused before Graphviz is called (a
graph this flat has no blocks to collapse).  It prints a Markdown table: seconds per phase,
the total, and the peak resident memory.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
n = int(sys.argv[1])
t0 = time.perf_counter()
from archgraph import ArchgraphError, ModelBuilder
b = ModelBuilder("chain", H=64)
b.input("x", ["B", "H"])
for i in range(n):
    b.node(f"fc{i}", "linear", in_features="H", out_features="H")
t1 = time.perf_counter()
model = b.build()
t2 = time.perf_counter()
total = model.params().total
t3 = time.perf_counter()
shape = model.shapes().outputs[model.output_names[0]]
t4 = time.perf_counter()
assert total == n * (64 * 64 + 64), total
assert tuple(map(str, shape)) == ("B", "64"), shape
from archgraph.render.diagram import diagram_dot
try:
    diagram_dot(model)
    refused = ""
except ArchgraphError as exc:
    refused = exc.message
t5 = time.perf_counter()
print(json.dumps({"declare": t1 - t0, "build": t2 - t1, "params": t3 - t2, "shapes": t4 - t3,
                  "total": t4 - t0, "render": t5 - t4, "refused": refused,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

PHASES = ("declare", "build", "params", "shapes", "total", "render")


def run(n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(n)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--repeats", type=int, default=1, help="runs per size; the table shows medians")
    args = p.parse_args()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"median of {args.repeats} run(s)\n")
    print("| nodes | declare s | build s | params s | shapes s | total s | peak MB | render |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in args.sizes:
        runs = [run(n) for _ in range(args.repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in (*PHASES, "rss_mb")}
        render = f"refused in {med['render']:.2f} s" if runs[0]["refused"] else f"drawn in {med['render']:.2f} s"
        print(f"| {n:,} | {med['declare']:.2f} | {med['build']:.2f} | {med['params']:.2f} | "
              f"{med['shapes']:.2f} | {med['total']:.2f} | {med['rss_mb']:,.0f} | {render} |")
    print(f"\nrender's message: {runs[0]['refused'] or '(drawn)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
