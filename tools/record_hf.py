"""Record what Hugging Face transformers builds for configs, as test fixtures.

Needs torch and transformers (not archgraph's dependencies): run it with a Python
that has them, e.g. a separate virtual environment with `pip install torch==2.13.0
transformers`.  For each config (a JSON file holding one config, or a list of
{"name": ..., "config": {...}}), builds `getattr(transformers, architectures[0])`
on PyTorch's meta device and writes tests/data/hf/NAME.json in the format of
../shared/reference/hf: config, expected_params, params_if_tied_counted_twice,
param_shapes, and buffers (name -> shape, whether state_dict() saves it and dtype).  tests/test_hf_configs.py then checks archgraph against every file.

    /tmp/torchenv/bin/python tools/record_hf.py configs.json [--out tests/data/hf]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def record(name: str, config: dict) -> dict:
    import torch
    import transformers

    cfg = transformers.AutoConfig.for_model(**config)
    in_float32(cfg)
    arch = (config.get("architectures") or [None])[0]
    cls = getattr(transformers, arch) if arch else transformers.AutoModel._model_mapping[type(cfg)]
    with torch.device("meta"):
        model = build(cls, cfg)
    named = list(model.named_parameters(remove_duplicate=False))
    return {
        "name": name,
        "config": config,
        "expected_params": sum(p.numel() for p in model.parameters()),
        "params_if_tied_counted_twice": sum(p.numel() for _, p in named),
        "param_shapes": {n: list(p.shape) for n, p in named},
        "buffers": buffers(model),
        "transformers_version": transformers.__version__,
    }


def in_float32(cfg) -> None:
    """Build as `cls(cfg)` builds a top-level model, in the default float32: without the config's dtype
    (and its sub-configs'), which from_config makes the default dtype while it builds a sub-model, so a
    floating buffer made in the default dtype would be recorded in it (a tower's embed_scale in bfloat16)."""
    cfg.dtype = None
    for key in getattr(cfg, "sub_configs", None) or {}:
        sub = getattr(cfg, key, None)
        if sub is not None and hasattr(sub, "to_dict"):
            in_float32(sub)


def build(cls, cfg):
    """`cls(cfg)`, or, for a class of a composite config's text model (Qwen3_5ForCausalLM for a qwen3_5
    config, which AutoModelForCausalLM maps for "VLM compatibility"), the model that Auto class builds:
    the class on the config's text_config, as transformers' from_config does."""
    import transformers

    text = (getattr(cfg, "sub_configs", None) or {}).get("text_config")
    if text is not None and getattr(cls, "config_class", None) is text and \
            transformers.AutoModelForCausalLM._model_mapping.get(type(cfg), None) is cls:
        return transformers.AutoModelForCausalLM.from_config(cfg)
    return cls(cfg)


def buffers(model) -> dict:
    """Every buffer by name: its shape, whether state_dict() saves it (register_buffer's persistent) and
    its dtype as torch names it without the prefix (float32, int64, bool, complex64)."""
    out = {}
    for module_name, module in model.named_modules():
        for name, buf in module.named_buffers(recurse=False):
            if buf is None:
                continue
            full = f"{module_name}.{name}" if module_name else name
            out[full] = {"shape": list(buf.shape), "persistent": name not in module._non_persistent_buffers_set,
                         "dtype": str(buf.dtype).removeprefix("torch.")}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("configs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests" / "data" / "hf")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for path in args.configs:
        data = json.loads(path.read_text())
        items = data if isinstance(data, list) else [{"name": path.stem, "config": data}]
        for item in items:
            try:
                fixture = record(item["name"], item["config"])
            except Exception as exc:  # report and go on: one bad config should not stop the rest
                print(f"{item['name']}: transformers refused it: {type(exc).__name__}: {exc}", file=sys.stderr)
                failed += 1
                continue
            (args.out / f"{item['name']}.json").write_text(json.dumps(fixture, indent=1) + "\n")
            print(f"{item['name']}: {fixture['expected_params']:,}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
