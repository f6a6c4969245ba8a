"""Mutate the built-in specs and the reference config.json files and check that archgraph refuses
every broken one with an ArchgraphError: never another exception, never a hang, never unbounded
memory (run it under a memory cap: tests/test_hostile.py does, with RLIMIT_AS).

    python tools/fuzz_inputs.py --seed 1 --cases 300     # prints one JSON object: cases, failures

Each mutant is one to three random edits of a spec's YAML data or a config's JSON data: a value
replaced by a nasty one (huge, NaN, a 5,000-character word, a list of a billion items, a fullwidth
name, rich markup, HTML, ESC...), a key deleted, or, for a config, a key written twice.  A case fails when anything but an
ArchgraphError escapes, or when it runs longer than --seconds.
"""
from __future__ import annotations

import argparse
import copy
import io
import json
import random
import signal
import sys
import traceback
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPECS = ["gpt2", "bert-base-uncased", "t5-small", "resnet-50", "albert-base-v2", "llama-2-7b"]
NASTY = [None, [], {}, "", "abc", -1, 0, 1, 3, 0.5, True, 10 ** 9, 10 ** 30, 10 ** 40, 1e300, float("nan"),
         float("inf"), -1e200, "x" * 5000, "Ｈ", "H / 0", "len([0] * 300000000)", "[0] * 1000000000", "exp(700)",
         "10**9", "10**30", "9**9**9", "__import__('os')", "1e999", [1, "a"], {"a": 1}, [[[[]]]], "L * 10**6",
         # names each output escapes (tools/fuzz_names.py runs them through every command)
         "[/]", "<!--<script>", 'a" [URL="javascript:x"]', "$\\frac{$", "a:b", "back\\", "a\x1b[2Jb", "\u202e"]


class TimedOut(Exception):
    pass


def paths(obj, prefix=()):
    """Every path into nested dicts and lists, the empty path (the whole) first."""
    yield prefix
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from paths(value, prefix + (key,))


def value_at(obj, path):
    """The value at `path` (keys and indices) in nested dicts and lists."""
    for key in path:
        obj = obj[key]
    return obj


def mutate(rng: random.Random, data) -> None:
    """One random edit of `data` in place: replace a value by a nasty one, or delete it."""
    every = [p for p in paths(data) if p]
    leaves = [p for p in every if not isinstance(value_at(data, p), (dict, list))] or every
    path = rng.choice(leaves if rng.random() < 0.8 else every)
    holder = value_at(data, path[:-1])
    if rng.random() < 0.15:
        del holder[path[-1]]
    else:
        holder[path[-1]] = copy.deepcopy(rng.choice(NASTY))


def _spec_case(rng: random.Random, folder: Path, case: int) -> Path:
    from archgraph.spec.sources import builtin_specs
    data = yaml.safe_load(builtin_specs()[rng.choice(SPECS)].read_text())
    for _ in range(rng.choice([1, 1, 2, 3])):
        mutate(rng, data)
    path = folder / f"case{case}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10 ** 6))
    return path


def _configs() -> list[dict]:
    out = [json.loads(p.read_text()) for p in sorted(ROOT.glob("examples/*/config.json"))]
    for p in sorted((ROOT / "tests" / "data" / "reference" / "hf").glob("*.json"))[:40]:
        record = json.loads(p.read_text())
        if isinstance(record.get("config"), dict):
            out.append(record["config"])
    return out


def _config_case(rng: random.Random, configs: list[dict], folder: Path, case: int) -> Path:
    data = copy.deepcopy(rng.choice(configs))
    for _ in range(rng.choice([1, 1, 2, 3])):
        mutate(rng, data)
    text = json.dumps(data)
    if rng.random() < 0.1 and data:  # a key written twice
        key = rng.choice(list(data))
        text = text[:-1] + f", {json.dumps(key)}: 1}}"
    if rng.random() < 0.05:  # a number too long to convert
        text = text[:-1] + ', "hidden_size": ' + "7" * 5000 + "}"
    folder = folder / f"case{case}"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(text)
    return path


def exercise(path: Path) -> None:
    """What `params` and `shapes` do with a model: counts, shapes, their JSON and their tables."""
    import archgraph
    from archgraph.render.data import params_json, shapes_json
    from archgraph.render.terminal import TerminalConsole
    from archgraph.render.text import params_table, shapes_table
    console = TerminalConsole(file=io.StringIO(), width=120)
    model = archgraph.load(str(path))
    report = model.params()
    params_json(report)
    console.print(params_table(report))
    shapes = model.shapes()
    shapes_json(shapes)
    console.print(shapes_table(shapes))


def run(seed: int, cases: int, folder: Path, seconds: float) -> list[str]:
    """The failures of `cases` mutants made from `seed` (written into `folder`)."""
    from archgraph import ArchgraphError

    def on_alarm(signum, frame):
        raise TimedOut(f"still running after {seconds} s")

    signal.signal(signal.SIGALRM, on_alarm)
    rng = random.Random(seed)
    configs = _configs()
    failures = []
    for case in range(cases):
        path = _spec_case(rng, folder, case) if rng.random() < 0.5 else _config_case(rng, configs, folder, case)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            exercise(path)
        except ArchgraphError as exc:
            text = str(exc)
            if len(text) > 2000 or "Traceback" in text:
                failures.append(f"case {case} ({path.name}): an error of {len(text):,} characters")
        except (Exception, RecursionError, MemoryError, TimedOut) as exc:  # noqa: BLE001 - the bug
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            failures.append(f"case {case} ({path}): {type(exc).__name__} at {Path(frame.filename).name}:"
                            f"{frame.lineno}: {str(exc)[:200]}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=20, help="the time one mutant may take")
    parser.add_argument("--folder", type=Path, help="where the mutants are written (default: a temporary one)")
    args = parser.parse_args()
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        failures = run(args.seed, args.cases, folder, args.seconds)
    print(json.dumps({"seed": args.seed, "cases": args.cases, "failures": failures}))


if __name__ == "__main__":
    main()
