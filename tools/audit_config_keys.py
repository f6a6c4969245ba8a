"""Audit the key tables: which config keys change what transformers computes while archgraph's key
table (specs/hf/<model_type>.keys.yaml) never reads them.  Such a key is silently dropped: it must be
honoured (a variable of the template) or refused by name (`{key: k, error: why}`).

    OMP_NUM_THREADS=1 .venv/bin/python tools/audit_config_keys.py [MODEL_TYPE ...] [--cases N] [--fixtures]
                                                                  [--length S] [-v] [--json out.json]

Needs torch and transformers (the test extras).  For each model_type with a key table it takes one
or two tiny configs of tests/test_torch_hf.py's CASES (the smallest recorded fixture of
tests/data/hf where CASES has none), builds transformers' model as that test does (eval, float32,
eager attention, random weights) and its outputs on the test's inputs.  The keys the key table
reads are found by running `archgraph.hf.import_config` with its lookups recorded.  Every other
attribute of the config class (`to_dict()`, and the sub-configs' attributes as `text_config.key`)
is changed in turn (a bool flipped; a number x2, +1, /2; a word to another word the modeling file
compares it with; a list's first element changed), the model rebuilt and loaded with the base
model's weights, and its outputs compared.  A key is reported when it changes

    shapes   the state_dict's names or shapes (the parameter count: archgraph must read the key)
    outputs  the outputs (more than 1e-5), with the same weights
    alias    the key written under its alias (the config class's attribute_map: Swin's
             num_attention_heads for num_heads) gives transformers the same config and archgraph
             other variables

Keys whose every change made transformers fail are listed as `refused by transformers`; keys
another piece of work owns (rope settings, pad_token_id's masks) are marked `(owned elsewhere)`.
A family takes 5 to 60 s on one core.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import torch  # noqa: E402

import test_torch_hf as cases  # noqa: E402  the parity tests' configs, model builder and inputs
from archgraph import hf  # noqa: E402
from archgraph.load import load_config  # noqa: E402
from archgraph.outfile import write_output  # noqa: E402
from archgraph.torch import to_module  # noqa: E402

transformers = cases.transformers

# attributes that cannot change a forward's values (or that say which outputs to return)
NEVER = {"transformers_version", "architectures", "model_type", "_name_or_path", "output_hidden_states",
         "output_attentions", "return_dict", "dtype", "torch_dtype", "use_cache", "id2label", "label2id",
         "num_labels", "problem_type", "initializer_range", "initializer_factor", "init_std",
         "chunk_size_feed_forward", "tokenizer_class", "_attn_implementation", "_experts_implementation",
         "layer_norm_init", "use_return_dict", "tie_encoder_decoder", "output_router_logits",
         "router_aux_loss_coef", "auxiliary_loss", "stage_names"}  # stage_names: derived from depths
DROPOUT = re.compile(r"(dropout|drop_path|_drop|dropout_rate|layerdrop)")  # eval mode
# keys another helper owns (issue 23): rope settings; pad_token_id (masks, pooling)
OWNED = re.compile(r"^(rope_scaling|rope_parameters|rope_theta|partial_rotary_factor|rotary_pct|rotary_emb_base"
                   r"|pad_token_id)(\.|$)")
VERBOSE = False
LENGTH = 0  # --length: tokens per row (0: the parity tests' 7)
MEMORY_LIMIT = 6 << 30  # bytes of address space
ACTIVATIONS = ["relu", "gelu", "silu", "gelu_new"]


def read_keys(config: dict) -> set[str]:
    """The config keys `import_config` looks at (dotted: 'text_config.hidden_size')."""
    seen: set[str] = set()
    prefix: list[str] = []
    lookup, present, sub_config = hf._lookup, hf._present, hf._sub_config

    def strip(key: str) -> str:
        return re.sub(r"\[-?\d+\]", "", key)

    def rec_lookup(cfg, key):
        seen.add(".".join(prefix + [strip(key)]))
        return lookup(cfg, key)

    def rec_present(cfg, key):
        seen.add(".".join(prefix + [strip(key)]))
        return present(cfg, key)

    def rec_sub(cfg, key, *args):
        prefix.append(key)
        try:
            return sub_config(cfg, key, *args)
        finally:
            prefix.pop()

    hf._lookup, hf._present, hf._sub_config = rec_lookup, rec_present, rec_sub
    try:
        hf.import_config(config)
    finally:
        hf._lookup, hf._present, hf._sub_config = lookup, present, sub_config
    for entry in (hf.family(config["model_type"]).get("overrides") or {}):
        seen.add(entry)
    return seen


def _compared_words(cfg, key: str) -> list[str]:
    """Quoted words on the lines of the config's modeling and configuration files that name `key`."""
    module = type(cfg).__module__
    words: list[str] = []
    for name in (module, module.replace(".configuration_", ".modeling_")):
        try:
            source = Path(sys.modules[name].__file__ if name in sys.modules else
                          __import__(name, fromlist=["_"]).__file__).read_text()
        except (ImportError, AttributeError, OSError):
            continue
        for line in source.splitlines():
            if re.search(rf"\b{re.escape(key)}\b", line):
                words += [w for w in re.findall(r"[\"']([A-Za-z][A-Za-z0-9_\-.]*)[\"']", line)
                          if w != key and w not in words]
    return words


def mutations(cfg, key: str, value) -> list:
    """Values to try for `key` in place of `value`, the likeliest to build first."""
    if isinstance(value, bool):
        return [not value]
    stages = getattr(cfg, "stage_names", None)
    if key in ("out_features", "out_indices") and isinstance(stages, list):  # a backbone's other stages
        picks = [[stages[i]] for i in range(len(stages))] if key == "out_features" else [[i] for i in range(len(stages))]
        return [p for p in picks if p != value][:4]
    if isinstance(value, int):
        if key.endswith("token_id") or key.endswith("token_index"):
            return [value + 5 if value < 50 else 4]
        small = 2  # a window or a length the test's 7 tokens reach
        return list(dict.fromkeys(v for v in (value + 1, value * 2, max(value // 2, 1), small, 1 if value == 0 else 0)
                                  if v != value))
    if isinstance(value, float):
        return [value * 2, value * 0.5] if value else [0.5, 0.1]
    if isinstance(value, str):
        words = _compared_words(cfg, key)
        if value in transformers.activations.ACT2FN:
            words = ACTIVATIONS + words
        return [w for w in words if w != value][:4]
    if value is None:
        return [3, 0.5, True, "gelu"] + _compared_words(cfg, key)[:3]
    if isinstance(value, list) and value and not any(isinstance(v, (dict, list)) for v in value):
        out = []
        for first in mutations(cfg, key, value[0]):
            out.append([first, *value[1:]])
        if len(set(map(str, value))) > 1:
            out.append(list(reversed(value)))
        return out[:4]
    return []


def _tensors(output) -> dict[str, torch.Tensor]:
    found = {}
    for name, value in output.items():
        if isinstance(value, torch.Tensor):
            found[name] = value
        elif isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                if isinstance(v, torch.Tensor):
                    found[f"{name}[{i}]"] = v
    return found


class Case:
    """One config: transformers' model with fixed weights and its outputs on fixed inputs."""

    def __init__(self, name: str, config: dict):
        self.name, self.config = name, config
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "config.json"
            path.write_text(json.dumps(config))
            module = to_module(load_config(path, cases._settings(config)))
        self.inputs = cases._inputs(module, config)
        if LENGTH and not any(k in config for k in ("image_seq_length", "image_token_id")):
            self.inputs = _longer(self.inputs, LENGTH)
        self.extra = cases._hf_only(config, self.inputs)
        self.model = cases._hf_model(config)
        self.weights = self.model.state_dict()
        self.outputs = self.run(self.model)

    def run(self, model) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            return _tensors(model(**self.inputs, **self.extra))

    def verdict(self, changed: dict) -> str | None:
        """'shapes', 'outputs', None (no difference), or raises when transformers fails."""
        model = cases._hf_model(changed)
        weights = model.state_dict()
        if {k: tuple(v.shape) for k, v in weights.items()} != {k: tuple(v.shape) for k, v in self.weights.items()}:
            return "shapes"
        model.load_state_dict(self.weights)
        got = self.run(model)
        if not self.outputs.keys() <= got.keys():
            return "outputs"
        for key, want in self.outputs.items():  # outputs a switch adds (aux_outputs) are not compared
            value = got[key]
            if value.shape != want.shape or not torch.allclose(value, want, atol=1e-5, rtol=0):
                return "outputs"
        return None


def _longer(inputs: dict, length: int) -> dict:
    """The test's token inputs redrawn `length` long (a window, a position table, a dynamic rope
    the 7 tokens of the test never reach); other inputs as they are."""
    torch.manual_seed(2)
    out = dict(inputs)
    for name in ("input_ids", "decoder_input_ids", "token_type_ids"):
        ids = inputs.get(name)
        if ids is not None and ids.dim() == 2:
            low = 0 if name == "token_type_ids" else int(ids.min())
            out[name] = torch.randint(low, int(ids.max()) + 1, (ids.shape[0], length))
    return out


def _changed(config: dict, dotted: str, value, cfg=None) -> dict:
    """`config` with the (dotted) key set to `value`; a sub-config the config leaves out (its keys
    flat at the top, Qwen2-VL's) is written whole from the config class's, not with one key."""
    head, _, rest = dotted.partition(".")
    if not rest:
        other = {"out_features": "out_indices", "out_indices": "out_features"}.get(head)  # derived from it
        return {**{k: v for k, v in config.items() if k != other}, head: value}
    sub = config.get(head)
    if sub is None:
        held = getattr(cfg, head, None)
        sub = held.to_dict() if hasattr(held, "to_dict") else {}
    return {**config, head: _changed(dict(sub), rest, value, getattr(cfg, head, None))}


def attributes(cfg, config: dict, prefix: str = "") -> dict[str, object]:
    """The config class's attributes (dotted for sub-configs) with their values."""
    out = {}
    subs = getattr(cfg, "sub_configs", {}) or {}
    for key, value in cfg.to_dict().items():
        if key in NEVER or key.startswith("_") or DROPOUT.search(key):
            continue
        if key in subs or isinstance(value, dict) and hasattr(getattr(cfg, key, None), "to_dict"):
            sub = getattr(cfg, key, None)
            if sub is not None and hasattr(sub, "to_dict"):
                out.update(attributes(sub, config.get(key) or {}, f"{prefix}{key}."))
            continue
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(v, (dict, list)):
                    out[f"{prefix}{key}.{k}"] = v
            continue
        out[prefix + key] = value
    return out


def audit(name: str, config: dict, log=print) -> list[dict]:
    cfg = transformers.AutoConfig.for_model(**config)
    read = read_keys(config)
    aliases = {}
    for holder, pre in [(cfg, "")] + [(getattr(cfg, k), f"{k}.") for k in (getattr(cfg, "sub_configs", {}) or {})
                                      if hasattr(getattr(cfg, k, None), "attribute_map")]:
        for alias, real in holder.attribute_map.items():
            aliases[pre + alias] = pre + real
    read |= {aliases.get(k, k) for k in read}
    case = Case(name, config)
    found = []
    for key, value in attributes(cfg, config).items():
        top = key.split(".")[0]
        if key in read or top in read and not isinstance(getattr(cfg, top, None), transformers.PretrainedConfig):
            continue
        sub_obj = cfg
        for part in key.split(".")[:-1]:
            sub_obj = getattr(sub_obj, part, sub_obj)
        tried, verdict, errors = [], None, []
        candidates = mutations(sub_obj, key.split(".")[-1], value)
        if not candidates:
            found.append({"case": name, "key": key, "value": value, "tried": [], "verdict": None, "owned": False,
                          "untried": True})
        for new in candidates:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    verdict = case.verdict(_changed(config, key, new, cfg))
            except Exception as exc:  # noqa: BLE001 - transformers refuses this value; try the next
                errors.append(f"{new!r}: {type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}")
                continue
            tried.append(new)
            if VERBOSE:
                print(f"    {key} = {value!r} -> {new!r}: {verdict}")
            if verdict:
                break
        row = {"case": name, "key": key, "value": value, "tried": tried, "verdict": verdict,
               "owned": bool(OWNED.search(key.split(".", 1)[-1] if "." in key and key.split(".")[0].endswith("config")
                                         else key)) or (config["model_type"] == "mixtral" and key == "sliding_window")}
        if verdict:
            row["by"] = tried[-1]
            found.append(row)
            log(f"  {key} = {value!r} -> {tried[-1]!r}: changes {verdict}{'  (owned elsewhere)' if row['owned'] else ''}")
        elif not tried and errors:
            row["errors"] = errors
            found.append(row)
            log(f"  {key} = {value!r}: refused by transformers ({errors[0]})")
    return found


def dropped_aliases(name: str, config: dict, log=print) -> list[dict]:
    """A config may name a key by its alias (the config class's attribute_map: num_attention_heads
    for Swin's num_heads).  The keys whose alias gives transformers the same config but archgraph
    other variables: the key table reads the key by one name only."""
    cfg = transformers.AutoConfig.for_model(**config)
    read, base = read_keys(config), hf.import_config(config).variables
    found = []
    holders = [("", config, cfg)] + [(f"{k}.", config[k], getattr(cfg, k)) for k in (cfg.sub_configs or {})
                                     if isinstance(config.get(k), dict) and hasattr(getattr(cfg, k, None), "to_dict")]
    for prefix, held, alias, real in [(p, h, a, r) for p, h, c in holders for a, r in c.attribute_map.items()]:
        if prefix + real not in read or real not in held or alias in held:
            continue
        sub = {**{k: v for k, v in held.items() if k != real}, alias: held[real]}
        renamed = {**config, prefix[:-1]: sub} if prefix else sub
        if transformers.AutoConfig.for_model(**renamed).to_dict() != cfg.to_dict():
            continue  # transformers reads the alias otherwise (T5's num_decoder_layers follows num_layers only)
        try:
            got = hf.import_config(renamed).variables
        except Exception as exc:  # noqa: BLE001 - refused by name: not dropped
            got = {"error": str(exc)}
        if got != base:
            found.append({"case": name, "key": prefix + alias, "value": held[real], "verdict": "alias", "by": real,
                          "tried": [], "owned": False})
            log(f"  {prefix}{alias} (transformers' alias of {real}) is not read: other variables")
    return found


def _fixture_case(model_type: str) -> tuple[str, dict] | None:
    best = None
    for path in sorted((ROOT / "tests" / "data" / "hf").glob("*.json")):
        recorded = json.loads(path.read_text())
        if recorded["config"].get("model_type") == model_type and path.stem not in cases.CANNOT_RUN:
            if best is None or recorded["expected_params"] < best[0]:
                best = recorded["expected_params"], path.stem, recorded["config"]
    return None if best is None or best[0] > 5_000_000 else best[1:]


def fixture_cases(model_type: str, limit: int = 2_000_000) -> list[tuple[str, dict]]:
    """Every recorded fixture of the family with at most `limit` parameters that transformers runs."""
    out = []
    for path in sorted((ROOT / "tests" / "data" / "hf").glob("*.json")):
        recorded = json.loads(path.read_text())
        if recorded["config"].get("model_type") == model_type and path.stem not in cases.CANNOT_RUN \
                and recorded["expected_params"] <= limit:
            out.append((path.stem, recorded["config"]))
    return out


def chosen_cases(model_type: str, count: int, fixtures: bool = False) -> list[tuple[str, dict]]:
    if fixtures:
        return fixture_cases(model_type)
    mine = [(n, c) for n, c in cases.CASES.items() if c["model_type"] == model_type]
    if not mine:
        fixture = _fixture_case(model_type)
        return [fixture] if fixture else []
    return mine[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_types", nargs="*", help="families to audit (default: every key table)")
    parser.add_argument("--cases", type=int, default=1, help="configs per family (default 1)")
    parser.add_argument("--fixtures", action="store_true",
                        help="audit the recorded fixtures (tests/data/hf, up to 2M parameters) instead of CASES")
    parser.add_argument("--json", help="write the findings to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every change tried")
    parser.add_argument("--length", type=int, default=0,
                        help="tokens per row (default: the parity tests' 7; a longer run reaches windows)")
    args = parser.parse_args(argv)
    global VERBOSE, LENGTH
    VERBOSE, LENGTH = args.verbose, args.length
    torch.set_num_threads(1)
    # a change that makes a model of real size fails here instead of taking the shared machine's memory
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, resource.getrlimit(resource.RLIMIT_AS)[1]))
    model_types = args.model_types or hf.family_names()
    findings = []
    for model_type in model_types:
        for name, config in chosen_cases(model_type, args.cases, args.fixtures):
            print(f"{model_type}: {name}", flush=True)
            try:
                findings += audit(name, config) + dropped_aliases(name, config)
            except (Exception, cases.pytest.skip.Exception) as exc:  # noqa: BLE001 - one family's failure
                print(f"  cannot audit: {type(exc).__name__}: {exc}")
    if args.json:
        write_output(args.json, json.dumps(findings, indent=1, default=repr))  # atomic, a regular file
    dropped = [f for f in findings if f.get("verdict") and not f["owned"]]
    print(f"\n{len(dropped)} keys change transformers' model while the key table never reads them (or reads them "
          "under one name of two)")
    for f in dropped:
        print(f"  {f['case']}: {f['key']} (transformers' alias of {f['by']}) is not read" if f["verdict"] == "alias"
              else f"  {f['case']}: {f['key']} ({f['value']!r} -> {f['by']!r}) changes {f['verdict']}")
    untried = sorted({f"{f['case'].split('-')[0]}: {f['key']}={f['value']!r}" for f in findings if f.get("untried")})
    print(f"\nnot tried (no other value known): {'; '.join(untried) or 'none'}")
    return 1 if dropped else 0


if __name__ == "__main__":
    sys.exit(main())
