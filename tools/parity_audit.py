"""Audit archgraph's Hugging Face templates against transformers on random configs, by their outputs.

    .venv/bin/python tools/parity_audit.py SEED COUNT [FAMILY ...] [--json out.json] [--show]

Needs torch and transformers (the test extra).  For each case it takes a recorded config of a family
(tests/data/hf/FAMILY-*.json) and mutates it as tools/crosscheck_hf.py does (random small sizes, switches
the config class accepts, a random class of the family), draws more switches (GENERIC, and the ones issue 35
found refused or wrong), then, as tests/test_torch_hf.py does:
transformers builds the model in eval mode, every weight perturbed (normal 0.5 for vectors, 0.2 for
matrices); archgraph's module of the same config.json loads its state_dict strictly; both read a
padded batch (row 0 padded on the left, row 1 on the right, where the family takes an attention_mask)
and every output is compared at the positions that are not padding, to 1e-4 of its scale.  A case that
matches is then checked to fail when one of archgraph's parameters is nudged (so the comparison can
see a difference).  A config transformers refuses to build or to run is dropped; one archgraph refuses
while transformers runs it is a gap.  Prints one line per case and the totals by family and verdict;
exit status 1 when any case differs, is a gap or errs.

FAMILY defaults to the families added by issue 29 (`ISSUE_29`).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import io
import json
import os
import random
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ISSUE_29 = ["deepseek_v2", "phimoe", "ernie4_5_moe", "dbrx", "cohere2", "exaone4", "lfm2", "t5gemma", "llama4",
            "llama4_text", "qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text", "bamba",
            "granitemoehybrid", "falcon_h1", "zamba2", "gemma4", "gemma4_text", "gemma3n_text", "mistral3",
            "paligemma", "idefics3", "smolvlm", "internvl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "mllama",
            "dinov3_vit", "llava_next", "llava_onevision", "olmoe", "qwen2_moe", "granitemoe", "glm4_moe",
            "ernie4_5", "gpt_neo", "olmo3", "mt5", "mbart", "wav2vec2", "hubert", "siglip2", "gemma3"]
MAX_PARAMS = 3_000_000   # a mutated config bigger than this is skipped (the audit is about switches, not size)
TOLERANCE = 1e-4         # of the output's scale (its largest magnitude, at least 1)
NUDGE = 0.05             # added to one parameter of archgraph's module (times a normal draw) to see the check fail


# switches the config classes accept, drawn at random on top of crosscheck_hf's mutation: each with probability
# 0.3, at the top level and in text_config, where the config class has the attribute
GENERIC = {"tie_word_embeddings": [True, False], "attention_bias": [True, False], "mlp_bias": [True, False],
           "hidden_act": ["silu", "gelu", "gelu_pytorch_tanh", "relu"], "use_qk_norm": [True, False]}


def _rope(rng: random.Random, head_dim: int, length: int) -> dict:
    """A random rope_parameters of a scaling transformers computes alike for every family that reads it."""
    half = max(1, head_dim // 2)
    kind = rng.choice(["linear", "dynamic", "yarn", "longrope", "llama3"])
    out = {"rope_type": kind, "rope_theta": rng.choice([100.0, 10000.0])}
    if kind in ("linear", "dynamic", "llama3", "yarn"):
        out["factor"] = rng.choice([2.0, 4.0])
    if kind in ("yarn", "longrope", "llama3"):
        out["original_max_position_embeddings"] = rng.choice([4, length])
    if kind == "llama3":
        out.update(low_freq_factor=1.0, high_freq_factor=4.0)
    if kind == "longrope":
        out.update(short_factor=[rng.choice([1.0, 1.5]) for _ in range(half)],
                   long_factor=[rng.choice([2.0, 3.0]) for _ in range(half)])
    return out


def _special(rng: random.Random, config: dict) -> dict:
    """Switches of the families issue 35 found refused or wrong (their parity besides crosscheck_hf's sizes)."""
    mt, out = config["model_type"], dict(config)
    if mt == "olmoe" and rng.random() < 0.5:
        out["clip_qkv"] = rng.choice([0.3, 1.0, 4.0])
    if mt == "phimoe" and rng.random() < 0.5:
        head = out.get("head_dim") or out["hidden_size"] // out["num_attention_heads"]
        out["rope_scaling"] = {"rope_type": "longrope", "short_factor": [1.0 + 0.1 * i for i in range(head // 2)],
                               "long_factor": [2.0 + 0.2 * i for i in range(head // 2)],
                               "short_mscale": rng.choice([1.0, 1.2]), "long_mscale": rng.choice([0.8, 1.3]),
                               "original_max_position_embeddings": rng.choice([4, 16])}
    if mt == "internvl" and rng.random() < 0.6:
        layers = (out.get("vision_config") or {}).get("num_hidden_layers", 24)
        out["vision_feature_layer"] = rng.choice([-1, -2, 1, layers, -layers - 1])
    if mt in ("wav2vec2", "hubert") and rng.random() < 0.5:
        out["use_weighted_layer_sum"] = True
    if mt == "wav2vec2" and rng.random() < 0.4:
        out.update(add_adapter=True, output_hidden_size=rng.choice([out.get("hidden_size", 768), 12]),
                   num_adapter_layers=rng.randint(1, 3), adapter_kernel_size=rng.choice([2, 3]),
                   adapter_stride=rng.choice([1, 2]))
    if mt == "t5gemma":
        for stack in ("encoder", "decoder"):
            sub = out.get(stack)
            if isinstance(sub, dict) and rng.random() < 0.5:
                out[stack] = {**sub, "rope_parameters": _rope(rng, sub.get("head_dim", 256), 7)}
    return out


def _switches(rng: random.Random, config: dict) -> dict:
    """GENERIC switches where the config class (or its text_config's) has them, then _special's."""
    import transformers
    out = dict(config)
    try:
        cls = type(transformers.AutoConfig.for_model(config["model_type"]))
    except Exception:  # noqa: BLE001 - a model_type transformers does not know: no switches
        return out
    holders = [(out, cls())]
    if isinstance(out.get("text_config"), dict) and "text_config" in getattr(cls, "sub_configs", {}):
        text = dict(out["text_config"])
        out["text_config"] = text
        try:
            holders.append((text, transformers.AutoConfig.for_model(text.get("model_type") or
                                                                     cls.sub_configs["text_config"].model_type)))
        except Exception:  # noqa: BLE001
            pass
    for holder, defaults in holders:
        for key, values in GENERIC.items():
            if hasattr(defaults, key) and rng.random() < 0.3:
                holder[key] = rng.choice(values)
    return _special(rng, out)


def _machinery():
    """tests/test_torch_hf.py's helpers (the model, the inputs, the settings) and crosscheck_hf's mutation."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT / "tools"))
    import crosscheck_hf
    import test_torch_hf
    return test_torch_hf, crosscheck_hf


def seeds_of(family: str) -> list[dict]:
    """The recorded configs of a family (tests/data/hf/FAMILY-*.json) small enough to mutate quickly."""
    out = []
    for path in sorted(glob.glob(str(ROOT / "tests" / "data" / "hf" / f"{family}-*.json"))):
        recorded = json.loads(Path(path).read_text())
        if recorded["config"].get("model_type") == family:
            out.append(recorded["config"])
    return out


def _compare(got: dict, want, mask) -> tuple[float, str]:
    """The largest difference of any output at the positions that are not padding, relative to its scale."""
    import torch
    worst, where = 0.0, ""
    for key, value in got.items():
        expected = getattr(want, key, None)
        if expected is None or not torch.is_tensor(expected):
            return float("inf"), f"transformers gives no '{key}'"
        if tuple(value.shape) != tuple(expected.shape):
            return float("inf"), f"{key}: shape {list(value.shape)}, transformers {list(expected.shape)}"
        if expected.dtype == torch.bool:
            if not torch.equal(value.bool(), expected):
                return float("inf"), f"{key}: another mask"
            continue
        keep = mask.bool() if mask is not None and tuple(value.shape[:2]) == tuple(mask.shape) else \
            torch.ones(value.shape[0], dtype=torch.bool)
        a, b = value[keep].double(), expected[keep].double()
        scale = max(1.0, b.abs().max().item()) if b.numel() else 1.0
        diff = (a - b).abs().max().item() / scale if b.numel() else 0.0
        if not diff <= worst:   # NaN too
            worst, where = diff, key
    return worst, where


def run_case(config: dict, rng: random.Random, tmp: Path) -> tuple[str, str]:
    """(verdict, detail): match, differs, gap (archgraph refuses what transformers runs), error, or a
    reason the case was dropped (skip)."""
    import torch
    import transformers
    from archgraph.errors import ArchgraphError
    from archgraph.load import load_config
    from archgraph.torch import to_module
    t, _ = _machinery()
    path = tmp / "config.json"
    path.write_text(json.dumps(config))
    if _too_big(t, config, path):   # before transformers allocates it (a 2B-parameter stack takes 20 GB)
        return "skip", "too big"
    try:
        reference = t._hf_model(config)
    except BaseException as exc:  # noqa: BLE001 - transformers refuses many random configs
        return "skip", f"transformers cannot build it: {type(exc).__name__}: {str(exc)[:120]}"
    if sum(p.numel() for p in reference.parameters()) > MAX_PARAMS:
        return "skip", "too big"
    try:
        model = load_config(path, t._settings(config))
        module = to_module(model).eval()
    except ArchgraphError as exc:
        refused = str(exc).splitlines()[0]
    else:
        refused = None
    try:   # transformers' own forward on the padded batch (a config it cannot run is dropped)
        inputs, mask = _padded_inputs(t, module if refused is None else None, config, reference)
        with torch.no_grad():
            want = reference(**inputs, **t._hf_only(config, inputs))
    except BaseException as exc:  # noqa: BLE001
        if refused is not None:
            return "skip", f"refused, and transformers cannot run it either: {refused[:160]}"
        return "skip", f"transformers cannot run it: {type(exc).__name__}: {str(exc)[:120]}"
    if refused is not None:
        return "gap", refused[:300]
    try:
        module.load_state_dict(reference.state_dict(), strict=True)
        with torch.no_grad():
            got = module(**inputs)
    except BaseException as exc:  # noqa: BLE001
        return "error", f"{type(exc).__name__}: {str(exc)[:300]}"
    diff, where = _compare(got, want, mask)
    if not diff < TOLERANCE:
        return "differs", f"{where}: {diff:.3g} of its scale"
    return _nudged(module, inputs, want, mask, rng, diff)


def _too_big(t, config: dict, path: Path) -> bool:
    """Whether the model has more than MAX_PARAMS parameters, by archgraph's count, or else by transformers'
    model on the meta device (no memory); when neither can tell, the real build decides."""
    import torch
    from archgraph.load import load_config
    try:
        return load_config(path, t._settings(config)).params().total > MAX_PARAMS
    except Exception:  # noqa: BLE001 - archgraph refuses it: ask transformers
        pass
    try:
        with torch.device("meta"):
            return sum(p.numel() for p in t._hf_model(config).parameters()) > MAX_PARAMS
    except BaseException:  # noqa: BLE001
        return False


def _padded_inputs(t, module, config: dict, reference):
    """The test's inputs for `module` (or, when archgraph refused the config, for transformers' forward
    alone), row 0 padded on the left and row 1 on the right when the family reads an attention_mask."""
    import inspect
    if module is None:
        module = _Inputs(reference)
    inputs = t._inputs(module, config)
    mask = None
    ids = inputs.get("input_ids")
    takes_mask = "attention_mask" in inspect.signature(reference.forward).parameters and \
        (getattr(module, "inputs", None) is None or "attention_mask" in module.inputs)
    if ids is not None and ids.shape[0] == 2 and takes_mask:
        mask = t.padding_mask(ids)
        pad = (config.get("text_config") or config).get("pad_token_id")
        if isinstance(pad, int) and pad < t.torch.iinfo(ids.dtype).max:
            ids[mask == 0] = pad
        inputs["attention_mask"] = mask
    return inputs, mask


class _Inputs:
    """Stands in for archgraph's module when it refused the config: transformers' forward's inputs."""

    def __init__(self, reference) -> None:
        import inspect
        params = inspect.signature(reference.forward).parameters
        self.required_inputs = [n for n in ("input_ids", "pixel_values", "input_values", "input_features",
                                            "decoder_input_ids") if n in params][:2]
        self.inputs = None


def _nudged(module, inputs, want, mask, rng, before: float) -> tuple[str, str]:
    """Nudge one of archgraph's parameters (a random one among those whose nudge shows): the comparison
    must fail, else the case checked nothing."""
    import torch
    params = [(n, p) for n, p in module.named_parameters() if p.numel()]
    rng.shuffle(params)
    for name, param in params[:8]:
        saved = param.detach().clone()
        with torch.no_grad():
            param.add_(NUDGE * torch.randn_like(param))
            got = module(**inputs)
            param.copy_(saved)
        diff, _ = _compare(got, want, mask)
        if diff >= TOLERANCE:
            return "match", f"{before:.2g}; nudging {name} gives {diff:.2g}"
    return "insensitive", f"{before:.2g}, and nudging 8 parameters changed no output past {TOLERANCE}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("count", type=int, help="cases per family")
    ap.add_argument("families", nargs="*", default=ISSUE_29)
    ap.add_argument("--json", type=Path, help="write every case (config, verdict, detail) here")
    ap.add_argument("--show", action="store_true", help="print each case's config when it is not a match")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    warnings.filterwarnings("ignore")
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    _, crosscheck = _machinery()
    rng = random.Random(args.seed)
    tally: dict = collections.defaultdict(collections.Counter)
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for family in args.families:
            seeds = seeds_of(family)
            if not seeds:
                print(f"{family}: no recorded configs in tests/data/hf", file=sys.stderr)
                continue
            for i in range(args.count):
                config = {k: v for k, v in _switches(rng, crosscheck.mutate(rng, rng.choice(seeds))).items()
                          if k not in ("torch_dtype", "dtype")}   # float32, as the module
                with contextlib.redirect_stderr(io.StringIO()):
                    try:
                        verdict, detail = run_case(config, random.Random(rng.random()), Path(tmp))
                    except Exception:  # noqa: BLE001 - the audit reports, never stops
                        verdict, detail = "error", traceback.format_exc().splitlines()[-1][:300]
                tally[family][verdict] += 1
                arch = (config.get("architectures") or ["?"])[0]
                print(f"{family:18s} {i:3d} {arch:42s} {verdict:11s} {detail}", flush=True)
                if args.show and verdict not in ("match", "skip"):
                    print(json.dumps(config), flush=True)
                cases.append({"family": family, "config": config, "verdict": verdict, "detail": detail})
    totals = collections.Counter()
    for family, counts in tally.items():
        totals.update(counts)
        print(f"{family:18s} " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    ran = sum(v for k, v in totals.items() if k != "skip")
    print(f"{ran} cases ran: " + ", ".join(f"{v} {k}" for k, v in sorted(totals.items())))
    if args.json:
        from archgraph.outfile import write_output
        write_output(str(args.json), json.dumps(cases, indent=1))
    return 1 if any(totals[k] for k in ("differs", "gap", "error", "insensitive")) else 0


if __name__ == "__main__":
    sys.exit(main())
