"""Count the runs of every family's stacks: how many block-call rows each model's tree holds.

For every model_type with a key table (specs/hf/*.keys.yaml), the default config of its transformers config
class is saved as a config.json and loaded as a user would (`archgraph params config.json`); the
built-in specs are loaded by name.  For each model it prints the block calls (rows of the block
table, a repeated call once), the repeated calls, and the largest number of runs one call made
(a schedule's kinds): issue 38's 'GPT-2 from its config.json is twelve boxes' is 12 runs of h.

    .venv/bin/python tools/fold_runs.py [--json OUT] [model_type ...]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent


def runs(graph, prefix="", out=None, seen=None):
    """{call path: number of BlockNodes (runs) it made} over the tree of calls, each body once."""
    from archgraph.graph import BlockNode, join
    out = {} if out is None else out
    for node in graph.nodes.values():
        if isinstance(node, BlockNode):
            key = join(prefix, node.segment or node.name)
            out[key] = out.get(key, 0) + 1
            runs(node.body, key, out)
    return out


def summary(model) -> dict:
    counted = runs(model.graph)
    return {"calls": sum(counted.values()), "most_runs": max(counted.values(), default=0),
            "worst": max(counted, key=counted.get, default="")}


def families() -> list[str]:
    from archgraph.hf import family_names
    return family_names()


def config_file(model_type: str, folder: Path) -> Path | None:
    from transformers import CONFIG_MAPPING
    try:
        config = CONFIG_MAPPING[model_type]()
    except Exception:
        return None
    path = folder / model_type / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config.to_json_file(str(path))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("types", nargs="*")
    parser.add_argument("--json")
    args = parser.parse_args()
    import archgraph
    from archgraph.errors import ArchgraphError
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        names = args.types or families()
        for model_type in names:
            path = config_file(model_type, Path(tmp))
            if path is None:
                results[model_type] = "no transformers config class"
                continue
            try:
                results[model_type] = summary(archgraph.load(path))
            except ArchgraphError as exc:
                results[model_type] = f"refused: {exc.message[:70]}"
        if not args.types:
            for name in archgraph.builtin_specs():
                results[f"builtin:{name}"] = summary(archgraph.load(name))
    for name, result in results.items():
        if isinstance(result, dict):
            print(f"{name:32} calls {result['calls']:4}  most runs {result['most_runs']:3}  ({result['worst']})")
        else:
            print(f"{name:32} {result}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
