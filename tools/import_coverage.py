"""How many of transformers' model types `archgraph import-torch config.json` imports.

    .venv/bin/python tools/import_coverage.py [-j 2] [--timeout 600] [--json coverage.json] [--sample N] [TYPE ...]

For every model type of transformers 5.23 that archgraph has no template for
(`CONFIG_MAPPING_NAMES` minus the key tables `specs/hf/*.keys.yaml`), or the TYPEs given: a config.json of
its default config (`{"model_type": TYPE}`: transformers fills in every default) goes through
`archgraph import-torch` as a user runs it, each in its own process with a memory cap and a time
limit; an imported spec is then loaded and compared with the model transformers builds on the
meta device: the parameter count and every state_dict name and shape.  It prints the share
imported and every other type with its reason (the first line of archgraph's refusal), grouped;
a traceback, a timeout, a killed process or a spec that differs from transformers' model is a
failure of archgraph, listed apart.  A type whose config configures only a part of another model
(transformers defines no model class for it alone: SAM's prompt encoder) is no model type a user
can import: it is listed apart with that reason and left out of the share.  A default config that
leaves unset a field the model needs and documents without a default (Informer's prediction_length)
is refused by archgraph naming it; the tool then sets the value the config class's own example sets
(InformerConfig(prediction_length=12)), imports again and says so in the row and the summary.  `--json` keeps every row.  `--sample N` takes N of the
types, drawn with a fixed seed (`--seed`, default 0) from the sorted list, so a figure measured on
a sample can be measured again on the same types.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEMORY = 8 * 1024 ** 3  # address space of one import (torch alone reserves about 2 GB)
WALL = 20  # a worker silent for this many times its CPU limit in wall time is killed


def untemplated_types() -> list[str]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    sys.path.insert(0, str(ROOT))
    from archgraph.hf import family_names
    known = set(family_names())
    return [t for t in CONFIG_MAPPING_NAMES if t not in known]


def one(model_type: str, folder: Path, quick: bool = False) -> dict:
    """Import `model_type`'s default config in this process; the row of the result.  A field the default
    config leaves unset that import-torch refuses naming, documented without a default, is set at
    the value its config class's own example sets and the import run again (`_example`), the row
    saying so (`supplied`)."""
    sys.path.insert(0, str(ROOT))
    from archgraph.cli import main
    config = folder / "config.json"
    raw = _shallow(model_type) if quick else {"model_type": model_type}
    config.write_text(json.dumps(raw))
    spec = folder / "model.yaml"
    start, cpu = time.perf_counter(), time.process_time()
    code, text = _import(main, config, spec)
    supplied = _example(model_type, text) if code != 0 else None
    if supplied is not None:  # a field the default config leaves unset, at its class's own example
        config.write_text(json.dumps({**raw, **supplied}))
        code, text = _import(main, config, spec)
    row = {"type": model_type, "seconds": round(time.perf_counter() - start, 1),
           "cpu": round(time.process_time() - cpu, 1), **({"supplied": supplied} if supplied else {})}
    if code != 0:
        return {**row, "status": "traceback" if "Traceback" in text else "refused", "reason": _reason(text, config)}
    return {**row, **_compare(config, spec)}


def _import(main, config: Path, spec: Path) -> tuple[int, str]:
    """`archgraph import-torch CONFIG -o SPEC`: its exit status and what it wrote on stderr."""
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["import-torch", str(config), "-o", str(spec)])
    return code, err.getvalue()


def _example(model_type: str, refusal: str) -> dict | None:
    """Where import-torch refused a field the default config leaves unset and documents no default for
    (`the config leaves prediction_length unset`), the value its config class's own docstring example
    sets ({'prediction_length': 12}: InformerConfig(prediction_length=12)); else None."""
    import transformers

    from archgraph.fromtorch import hfdefaults
    m = re.search(r"the config leaves (\w+) unset, and \w+ documents no default", refusal)
    if m is None:
        return None
    value = hfdefaults.example(transformers.CONFIG_MAPPING[model_type], m.group(1))
    return {m.group(1): value} if value is not None else None


def _shallow(model_type: str) -> dict:
    """The default config with at most two layers of each stack (--quick: the same refusals, sooner)."""
    import transformers
    try:
        full = transformers.AutoConfig.for_model(model_type).to_dict()
    except Exception:  # noqa: BLE001  the import says why
        return {"model_type": model_type}
    return shallow(full)


def shallow(config: dict) -> dict:
    """`config` with every layer count above 2 (a key configcheck.LAYERS matches) made 2, and the
    lists of one entry per layer cut with it to their first and last entries: `layer_types` always,
    any other list as long as a count of its own config that was cut (DeepSeek-V3.2's 61
    `mlp_layer_types`, ['dense', ..., 'sparse'] -> ['dense', 'sparse'], for its 61 layers; wav2vec's
    7 `conv_dim`, `conv_stride` and `conv_kernel` for its 7 `num_feat_extract_layers`), so that
    transformers' checks of one entry per layer hold and both ends' kinds stay; a per_layer_config
    keyed by layer index likewise (Gemma's '05' ... '23': layer 23's entry is layer 1's), a
    backbone's out_features and out_indices cut to its stages left (TIPSv2's stage12 -> stage2),
    and the layers a tower's features are read from (vision_feature_layer) within the two."""
    from archgraph.configcheck import LAYERS
    cut_from = {v for k, v in config.items() if _count(v) and LAYERS.search(str(k)) and v > 2}
    out = {}
    for k, v in config.items():
        if k == "per_layer_config" and isinstance(v, dict) and cut_from:
            v = _ends(v, max(cut_from))
        elif isinstance(v, dict):
            v = shallow(v)
        elif _count(v) and LAYERS.search(str(k)) and v > 2:
            v = 2
        elif isinstance(v, list) and len(v) > 2 and (k == "layer_types" or len(v) in cut_from):
            v = [v[0], v[-1]]
        elif str(k).endswith(("feature_layer", "feature_layers")):
            v = [_within(i) for i in v] if isinstance(v, list) else _within(v)
        out[k] = v
    if cut_from and isinstance(out.get("stage_names"), list):
        _stages(out)
    return out


def _within(index):
    """A layer a tower's features are read from (LLaVA's vision_feature_layer -2, VipLLaVA's 6, Molmo2's
    24), within the two layers left (-2..1)."""
    return max(-2, min(index, 1)) if _count(index) else index


def _ends(per_layer: dict, layers: int) -> dict:
    """A per_layer_config keyed by layer index ('05', '23': Gemma's global layers), cut as lists are:
    the first layer's entry stays layer 0, the last layer's becomes layer 1, in the keys' own width."""
    out = {}
    for key, value in per_layer.items():
        index = int(key) if str(key).isdigit() else None
        if index in (0, layers - 1):
            out[str(int(index > 0)).zfill(len(str(key)))] = value
    return out


def _stages(config: dict) -> None:
    """A backbone's stages cut with its layers (TIPSv2's stem, stage1..stage12 -> stem, stage1, stage2):
    out_features and out_indices beyond the last stage name the last one."""
    config["stage_names"] = config["stage_names"][:3]
    last = len(config["stage_names"]) - 1
    if isinstance(config.get("out_indices"), list):
        config["out_indices"] = list(dict.fromkeys(min(i, last) if _count(i) else i for i in config["out_indices"]))
    if isinstance(config.get("out_features"), list):
        names = config["stage_names"]
        config["out_features"] = list(dict.fromkeys(f if f in names else names[-1] for f in config["out_features"]))


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _reason(text: str, config: Path) -> str:
    lines = [ln for ln in text.splitlines() if ln.startswith("archgraph: error:")]
    first = lines[-1] if lines else (text.strip().splitlines() or ["(no message)"])[-1]
    return first.removeprefix("archgraph: error: ").replace(f"{config}: ", "")


def _compare(config: Path, spec: Path) -> dict:
    """The spec against the model transformers builds on the meta device: count, names, shapes."""
    import torch

    from archgraph.fromtorch import hfbuild, hfconfig, hfdefaults
    from archgraph.load import load
    from archgraph.passes.params import named_tensors
    raw = hfconfig.read(config)
    hf_config = hfconfig.config_object(raw, config)
    cls = hfbuild.model_class(hf_config, [], config)
    kwargs = {"experts_implementation": "batched_mm"} if cls._can_set_experts_implementation() else {}
    try:
        with torch.device("meta"):
            hf = cls._from_config(hf_config, dtype=torch.float32, **kwargs)
    except Exception as exc:  # noqa: BLE001  a field the default leaves unset: set as import-torch set it (its spec says so)
        if not hfdefaults.fill(hf_config, cls.__name__, str(exc)):
            raise
        with torch.device("meta"):
            hf = cls._from_config(hf_config, dtype=torch.float32, **kwargs)
    want = {k: list(v.shape) for k, v in hf.state_dict().items()}
    model = load(str(spec))
    got = {name: [int(d) for d in t.shape] for name, t in named_tensors(model, buffers="persistent")}
    count, total = model.params().total, sum(p.numel() for p in hf.parameters())
    row = {"class": cls.__name__, "params": total}
    if count != total or got != want:
        missing = sorted(set(want) - set(got))[:3]
        extra = sorted(set(got) - set(want))[:3]
        shapes = sorted(k for k in set(got) & set(want) if got[k] != want[k])[:3]
        return {**row, "status": "differs", "reason": f"count {count:,} vs {total:,}; missing {missing}, "
                                                       f"extra {extra}, shapes {shapes}"}
    return {**row, "status": "imported"}


class Worker:
    """A process importing one type after another (torch and transformers imported once), with an
    address-space cap; one that crashes or outlives its time limit is killed and replaced."""

    def __init__(self, memory: int, quick: bool):
        self.memory, self.quick, self.process = memory, quick, None

    def start(self) -> None:
        import resource

        def cap() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TRANSFORMERS_VERBOSITY": "error"}
        self.process = subprocess.Popen([sys.executable, __file__, "--worker", *(["--quick"] if self.quick else [])],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, preexec_fn=cap, env=env)

    def run(self, model_type: str, timeout: float) -> dict:
        import queue
        import threading
        if self.process is None or self.process.poll() is not None:
            self.start()
        start = time.perf_counter()
        self.process.stdin.write(f"{model_type} {timeout}\n")
        self.process.stdin.flush()
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: lines.put(self.process.stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=WALL * timeout)  # the worker's own CPU limit comes first
        except queue.Empty:
            line = None
        if line and line.startswith("{"):
            return json.loads(line)
        status = "timeout" if line is None else "crashed"
        self.stop()
        return {"type": model_type, "status": status, "seconds": round(time.perf_counter() - start, 1),
                "reason": f"still running after {WALL * timeout:.0f} s of wall time" if line is None else
                "the process died (killed for memory, or a crash in native code)"}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None


def worker(quick: bool) -> None:
    """Read `TYPE TIMEOUT` lines, print one JSON row each.  The limit is CPU seconds of this
    process (SIGPROF), not wall time: on a shared machine a type is not counted out because
    others were running.  archgraph turns whatever a trace raises into a refusal, so a type whose
    time ran out is a timeout even when the import returned a refusal."""
    import signal
    expired = []

    def out_of_time(*_):
        expired.append(True)
        raise TimeoutError
    signal.signal(signal.SIGPROF, out_of_time)
    for line in sys.stdin:
        model_type, timeout = line.split()
        expired.clear()
        with tempfile.TemporaryDirectory() as folder:
            signal.setitimer(signal.ITIMER_PROF, float(timeout))
            start = time.perf_counter()
            try:
                row = one(model_type, Path(folder), quick)
            except BaseException as exc:  # noqa: BLE001  a row for anything the comparison raises
                row = {"type": model_type, "status": "crashed", "reason": f"{type(exc).__name__}: {exc}"[:300]}
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            if expired:
                row = {"type": model_type, "status": "timeout", "reason": f"still running after {timeout} CPU s"}
            row.setdefault("seconds", round(time.perf_counter() - start, 1))
        print(json.dumps(row), flush=True)


def kind(reason: str) -> str:
    """A refusal's reason without its particulars (sizes, names of modules), to group alike ones."""
    m = re.match(r"cannot import '([^']+)' at module '[^']*' \(([^)]*)\): (.*)", reason)
    if m:
        return f"cannot import '{m.group(1)}': {m.group(3)[:80]}"
    m = re.match(r"transformers cannot build \w+ without a package it needs: (\S+)", reason)
    if m:
        return f"needs the package {m.group(1)}"
    reason = re.sub(r"\b\d[\d,.]*\b", "N", reason)
    reason = re.sub(r"\b[A-Z]\w*(Model|ForCausalLM|ForConditionalGeneration|Encoder|Decoder|Transformer)\w*",
                    "MODEL", reason)
    return reason[:140]


PART = "transformers defines no model class for a "  # archgraph's refusal of a part's config


def is_part(row: dict) -> bool:
    """Whether a row's type is no model type a user can import: transformers defines no model class
    for its config alone (SAM's prompt encoder, SAM 2's video mask decoder configure parts of other
    models), so no import-torch could build it; such types are left out of the share, and listed."""
    return row["status"] == "refused" and row.get("reason", "").startswith(PART)


def _why_part(reason: str) -> str:
    """'SamPromptEncoderConfig configures a part of another model', from the refusal's parenthesis."""
    m = re.search(r"\(([^()]*)\)$", reason)
    return m.group(1) if m else reason


def _supplied(row: dict) -> str:
    """' (with prediction_length = 12, InformerConfig's example: the default config leaves it unset)'."""
    if not row.get("supplied"):
        return ""
    values = ", ".join(f"{k} = {v}" for k, v in row["supplied"].items())
    return f" (with {values}, its config class's own example: the default config leaves it unset)"


def summary(rows: list[dict]) -> str:
    parts = [r for r in rows if is_part(r)]
    rows = [r for r in rows if not is_part(r)]
    done = [r for r in rows if r["status"] == "imported"]
    own = [r for r in rows if r["status"] in ("traceback", "timeout", "crashed", "differs")]
    package = [r for r in rows if r["status"] == "refused" and "without a package it needs" in r["reason"]]
    lines = [f"imported {len(done)} of {len(rows)} model types ({100 * len(done) / max(len(rows), 1):.1f} %)",
             f"  of the {len(rows) - len(package)} transformers builds without extra packages: "
             f"{100 * len(done) / max(len(rows) - len(package), 1):.1f} %"]
    given = [r for r in rows if r.get("supplied")]
    if given:
        lines += ["", f"imported with a value the default config leaves unset ({len(given)}: its config class's "
                      "own example, set by this tool):"]
        lines += [f"  {r['type']}: {r['status']}{_supplied(r)}" for r in given]
    if parts:
        lines += ["", f"not model types, left out of the {len(rows)} ({len(parts)}: transformers defines no model "
                      "class for the config alone):"]
        lines += [f"  {r['type']}: {_why_part(r['reason'])}" for r in parts]
    if own:
        lines += ["", f"failures of archgraph ({len(own)}: traceback, timeout, crash or a spec that differs):"]
        lines += [f"  {r['type']}: {r['status']}: {r['reason']}" for r in own]
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for r in rows:
        if r["status"] == "refused":
            groups[kind(r["reason"])].append(r["type"])
    if groups:
        lines += ["", "refused, by reason:"]
        for reason, types in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {len(types):3d}  {reason}")
            lines.append(f"       {', '.join(sorted(types))}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("types", nargs="*", help="model types (default: every one archgraph has no template for)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0, help="CPU seconds for one type (default 600)")
    parser.add_argument("--memory", type=float, default=MEMORY / 1024 ** 3, help="GB of address space for one type")
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--quick", action="store_true",
                        help="at most two layers of each stack (to see refusals sooner; not the figure)")
    parser.add_argument("--sample", type=int, help="N of the types, drawn with --seed (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of --sample (default 0)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.quick)
        return 0
    types = args.types or untemplated_types()
    if args.sample is not None and args.sample < len(types):
        import random
        types = sorted(random.Random(args.seed).sample(sorted(types), args.sample))
    rows: list[dict] = []
    todo = list(reversed(types))
    lock = __import__("threading").Lock()

    def serve() -> None:
        w = Worker(int(args.memory * 1024 ** 3), args.quick)
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    model_type = todo.pop()
                row = w.run(model_type, args.timeout)
                with lock:
                    rows.append(row)
                    print(f"{row['type']}: {row['status']} ({row['seconds']} s, {row.get('cpu', '?')} CPU s) "
                          f"{row.get('reason', '')[:160]}{_supplied(row)}", flush=True)
                    if args.json:
                        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
        finally:
            w.stop()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in [pool.submit(serve) for _ in range(args.jobs)]:
            future.result()
    rows.sort(key=lambda r: types.index(r["type"]))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    print()
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
