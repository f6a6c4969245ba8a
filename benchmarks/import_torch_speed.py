"""How long `archgraph import-torch config.json` takes, and how much memory, on models of 7B to 70B.

    python benchmarks/import_torch_speed.py [--rounds 3] [MODEL ...]

Each round runs `archgraph import-torch CONFIG.json -o spec.yaml` in a fresh process on a real
config (tests/data/reference/hf: Llama-2-7B, Llama-2-70B, Mixtral-8x7B, BERT-base), as a user
does: transformers builds the model on the meta device, torch.export traces it, the spec is
written and checked.  The table shows, per model, the median wall time, the median CPU time of
the process (user + system: the figure that moves least on a busy machine) and its peak resident
memory (which the graph bounds, not the weights: 70B parameters would be 280 GB in float32), and
the parameters the written spec counts.  The load average at the start is printed: on a machine
shared with other work, wall time exceeds CPU time by about that factor.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "data" / "reference" / "hf"
MODELS = ["llama-2-7b", "llama-2-70b", "mixtral-8x7b", "bert-base-uncased"]


def one_run(config: Path, folder: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one import in a fresh process."""
    out, log = folder / "spec.yaml", folder / "stderr.txt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TRANSFORMERS_VERBOSITY": "error"}
    start = time.perf_counter()
    with open(log, "w") as err:
        child = subprocess.Popen([sys.executable, "-m", "archgraph.cli", "import-torch", str(config), "-o", str(out)],
                                 stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own CPU time and peak memory
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"import-torch {config.name} failed:\n{log.read_text()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss: KB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=MODELS, help=f"reference configs (default: {', '.join(MODELS)})")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from archgraph.load import load
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.rounds} rounds each")
    print(f"{'model':<20} {'parameters':>16} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
    for name in args.models:
        record = json.loads((REFERENCE / f"{name}.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            config = folder / "config.json"
            config.write_text(json.dumps(record["config"]))
            runs = [one_run(config, folder) for _ in range(args.rounds)]
            total = load(str(folder / "spec.yaml")).params().total
        walls, cpus, peaks = zip(*runs)
        print(f"{name:<20} {total:>16,} {statistics.median(walls):>8.1f} {statistics.median(cpus):>8.1f} "
              f"{max(peaks):>8.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
