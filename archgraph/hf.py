"""Hugging Face `config.json` files as archgraph models (`archgraph.load` builds them).

Each supported `model_type` has a template spec in `specs/hf/` (an ordinary
spec whose variables carry a typical checkpoint's values) and, beside it, its key
table `specs/hf/<model_type>.keys.yaml`: which template, which model classes
(heads) it builds, and which config key sets which template variable::

    # specs/hf/llama.keys.yaml
    template: llama.yaml
    heads: [base, causal_lm, seq_cls]
    variables:
      V: vocab_size                # required: an error names the key when it is missing
      KV: num_key_value_heads?     # '?': optional; absent or null keeps the template's value
      I: n_inner|intermediate_size # '|': the first key present
      D1: depths[0]                # an element of a list; a.b reads a nested key
      gated: {key: feed_forward_proj, map: {relu: false, gated-gelu: true}}  # keys are words: "true"
      qkv_bias: {value: true}      # a constant for this model_type
      stages: {key: depths[6], error: "the template builds at most 6 stages"}  # refuse a config
      bias: {key: bias?, if_null: false}  # an explicit null means false
      R: {key: rotary_dim, if_null: {error: "..."}}  # refuse an explicit null
      P: {key: pattern?, if_word: {error: "..."}, unless: layer_types}  # refuse a word, unless layer_types
      timm: {key: use_timm_backbone, default: true, unless: backbone_config, error: "..."}  # and absent
      orig: {key: rope_parameters.original_max_position_embeddings, default: 4096, unless: rope_parameters}
      FLS: {key: vision_feature_layer, list: true}   # -2 reads as [-2]

Keys several families read alike live once under `groups:` of `specs/hf/keys.yaml` (with the
`maps:` they share and the rules) and an entry takes them with
`use: [rope]` (its own variables win): the rope_parameters / rope_scaling keys that set the
rotary op's scaling.  An entry's `configs:` reads a sub-config by its own model_type's table (LLaVA's text_config by
llama's, mistral's or qwen2's; `_sub_config`), on top of that table's `defaults:`.

Two variables come from the config itself rather than a key: `head`, the word
for `architectures[0]` (`LlamaForCausalLM` -> 'causal_lm', see HEADS), and
`num_labels` (the config's `num_labels`, else the size of `id2label`, else the
template's value: transformers' default differs by family).
Templates switch parts with `when: head == 'causal_lm'` and name the bare
model's tensors with a block call's `path:`.  Adding a family is a template and
a key-table entry, no Python.

>>> from archgraph.hf import head_of
>>> head_of("GPT2LMHeadModel"), head_of("BertModel"), head_of("T5ForConditionalGeneration")
('causal_lm', 'base', 'cond_gen')
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from types import MappingProxyType
from pathlib import Path
from typing import Any, Mapping

from . import expr
from .dtypes import check_dtypes
from .errors import ArchgraphError, Fallback, Loc, SpecError, shortened
from .jsonread import loads
from .limits import MAX_CONFIG_BYTES, read_file
from .spec.sources import missing_hint, spec_dir
from .record import Record

# architecture class suffix -> the head word templates test (longest suffix wins)
HEADS = {
    "Model": "base",
    "ModelWithProjection": "with_projection",
    "EncoderModel": "encoder",
    "DoubleHeadsModel": "double_heads",
    "ForCausalLM": "causal_lm",
    "LMHeadModel": "causal_lm",
    "ForMaskedLM": "masked_lm",
    "ForSequenceClassification": "seq_cls",
    "ForTokenClassification": "token_cls",
    "ForQuestionAnswering": "qa",
    "ForConditionalGeneration": "cond_gen",
    "ForCTC": "ctc",
    "ForImageClassification": "image_cls",
    "ForPreTraining": "pretraining",
    "ForMaskedImageModeling": "masked_im",
    "ForSemanticSegmentation": "semantic_seg",
    "ForObjectDetection": "object_detection",
    "ForSegmentation": "segmentation",
}
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[(-?\d+)\])?")  # a[-1]: the last element


# class endings that name a family's bare model though they end in none of HEADS' suffixes (not offered
# in hints: a family that has one says so in its own class name)
BARE_ENDINGS = ("AudioEncoder",)   # an audio tower built alone (Gemma3nAudioEncoder)


def head_of(architecture: str) -> str | None:
    """The head word for a model class name, or None when the suffix is not known."""
    if architecture.endswith(BARE_ENDINGS):
        return "base"
    for suffix in sorted(HEADS, key=len, reverse=True):
        if architecture.endswith(suffix):
            return HEADS[suffix]
    return None


class Imported(Record, frozen=True):
    """What a config turns into: the template to build and the values of its variables."""

    name: str
    model_type: str
    architecture: str
    template: Path
    variables: dict[str, Any]   # template variable -> value from the config
    sources: dict[str, str]     # template variable -> the config key it came from


SHARED = "keys.yaml"     # specs/hf/keys.yaml: the rules of the key tables, and the `maps:` and `groups:` they share
SUFFIX = ".keys.yaml"    # specs/hf/<model_type>.keys.yaml: one model_type's key table, beside its template


def _spec_dir() -> Path:
    folder = spec_dir()
    if folder is not None and (folder / "hf" / SHARED).is_file():
        return folder / "hf"
    raise ArchgraphError("the Hugging Face family templates (specs/hf/) are missing from this installation",
                         hint="reinstall archgraph")


@lru_cache(maxsize=1)
def _table_files() -> dict[str, Path]:
    """model_type -> the file of its key table, by listing specs/hf/ (no file is read)."""
    return {p.name[:-len(SUFFIX)]: p for p in sorted(_spec_dir().glob("*" + SUFFIX))}


def key_file(model_type: str) -> Path:
    """The file of a model_type's key table (`specs/hf/llama.keys.yaml`)."""
    return _spec_dir() / f"{model_type}{SUFFIX}"


@lru_cache(maxsize=1)
def _key_tables() -> dict[str, Any]:
    """Every key table, parsed (`zoo`, `families()`)."""
    return {name: _part(name) for name in family_names()}


@lru_cache(maxsize=None)
def _part(name: str) -> Any:
    """A model_type's key table (its file parsed alone: a config reads its own table, its `like:` base
    and keys.yaml, not the other tables), or keys.yaml's `maps` or `groups`; None when absent."""
    from .spec.yamlload import load_file
    if name in ("maps", "groups"):
        path = _spec_dir() / SHARED
        table = load_file(path)
        return table.get(name) if isinstance(table, Mapping) else None
    path = _table_files().get(name)
    if path is None:
        return None
    table = load_file(path)
    if not isinstance(table, Mapping):
        raise ArchgraphError(f"{path.name}: a key table is a mapping with 'template:' and 'variables:'",
                             loc=Loc(str(path), 0), hint="see the rules at the top of keys.yaml")
    return table


def family_names() -> list[str]:
    """The model types with a key table (`specs/hf/<model_type>.keys.yaml`), in the order of their names."""
    return list(_table_files())


def family(model_type: str) -> Mapping[str, Any] | None:
    """One key table (`like:` and `use:` applied, as in `families()`), reading only its own file (and
    its `like:` base's, and keys.yaml)."""
    entry = _part(model_type) if model_type not in ("maps", "groups") else None
    if entry is None:
        return None
    entry = _with_groups(model_type, entry)
    base_name = entry.get("like")
    if base_name is None:
        return entry
    base = _part(str(base_name)) if base_name not in ("maps", "groups") else None
    if base is None or "like" in base:
        raise ArchgraphError(f"{model_type}{SUFFIX}: '{model_type}' is like '{base_name}', which is not a key "
                             "table without 'like:'", loc=entry.key_loc("like"),
                             hint="make the family named by 'like:' a key table of its own (one without 'like:')")
    return _like(entry, _with_groups(str(base_name), base))


@lru_cache(maxsize=1)
def families() -> dict[str, Any]:
    """Every key table, model_type -> entry (`family` of each).  An entry with `like: other` takes
    other's heads and variables, its own winning (GLM-4's table is GLM's with another template);
    `use: [group]` takes a named group's variables, its own winning (the rope keys, keys.yaml's
    `groups: rope`)."""
    return {name: family(name) for name in family_names()}


def _like(entry: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**base, **{k: v for k, v in entry.items() if k not in ("like", "variables")}}
    merged["variables"] = {**(base.get("variables") or {}), **(entry.get("variables") or {})}
    return merged


def _with_groups(name: str, entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """The entry with the variables of the groups it `use`s (keys.yaml's `groups:`) before its own,
    which win: the rope_parameters keys every rotary family reads alike.  A use `{group: rope, under:
    encoder, prefix: e_}` reads the group's keys under `encoder` into variables named with the prefix
    (T5Gemma's stacks, each with its own rope_parameters)."""
    used = entry.get("use") or []
    if not used:
        return entry
    groups = _part("groups") or {}
    variables: dict[str, Any] = {}
    for use in [used] if isinstance(used, str) else used:
        group = use.get("group") if isinstance(use, Mapping) else use
        extra = sorted(set(use) - {"group", "under", "prefix"}) if isinstance(use, Mapping) else []
        if extra:
            raise ArchgraphError(f"{name}{SUFFIX}: '{name}' uses a group with the unknown key '{extra[0]}'",
                                 loc=entry.key_loc("use"), hint="a use is a group's name, or {group, under, prefix}")
        if group not in groups:
            raise ArchgraphError(f"{name}{SUFFIX}: '{name}' uses '{group}', which is not a group under 'groups:'",
                                 loc=entry.key_loc("use"), hint="known groups: " + (", ".join(groups) or "none"))
        under, prefix = (str(use.get("under") or ""), str(use.get("prefix") or "")) if isinstance(use, Mapping) \
            else ("", "")
        variables.update({prefix + var: _under(rule, under) for var, rule in groups[group].items()})
    variables.update(entry.get("variables") or {})
    merged = type(entry)({**entry, "variables": variables})
    merged.loc, merged.lines = entry.loc, entry.lines
    return merged


def _under(rule: Any, under: str) -> Any:
    """A key table rule reading its keys under the sub-config `under` ('a|b?' -> 'enc.a|enc.b?')."""
    if not under:
        return rule

    def keys(text: Any) -> str:
        text = str(text)
        optional = "?" if text.endswith("?") else ""
        return "|".join(f"{under}.{k}" for k in text.rstrip("?").split("|")) + optional
    if isinstance(rule, Mapping):
        return {**rule, **{k: keys(rule[k]) for k in ("key", "unless") if k in rule}}
    return keys(rule)


def named_map(name: str) -> Mapping[str, Any]:
    """A translation the key tables share by name (`map: activations`), from keys.yaml's `maps:`."""
    maps = _part("maps") or {}
    if name not in maps:
        raise ArchgraphError(f"{SHARED}: no map named '{name}' under 'maps:'",
                             loc=Loc(str(_spec_dir() / SHARED), 0),
                             hint="known maps: " + (", ".join(maps) or "none"))
    return maps[name]


def read_config(path: str | Path) -> dict[str, Any]:
    """A config.json as a dict, or a located error."""
    p = Path(path)
    try:
        data = loads(read_file(p, MAX_CONFIG_BYTES, "config.json").decode("utf-8"), p, "config.json")
    except FileNotFoundError:
        raise ArchgraphError(f"no config file '{p}'", hint=missing_hint(
            p.as_posix(), "pass the path of a Hugging Face config.json (from the checkpoint's folder)")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArchgraphError(f"cannot read {p}: {exc}",
                             hint='check the path, that you may read the file and that it is UTF-8 text') from None
    except json.JSONDecodeError as exc:
        raise ArchgraphError(f"{p}:{exc.lineno}: not valid JSON: {exc.msg}",
                             hint="a Hugging Face config.json is one JSON object") from None
    except RecursionError:
        raise ArchgraphError(f"{p}: objects or lists nest too deeply for a config.json",
                             hint="a Hugging Face config.json is one JSON object") from None
    if not isinstance(data, dict):
        raise ArchgraphError(f"{p}: a config.json holds one JSON object; this holds a {type(data).__name__}",
                             hint='give the model\'s config.json, which holds one JSON object {"model_type": ...}')
    return data


def is_config(path: str | Path) -> bool:
    """Whether `path` names a JSON file (which `load` then reads as a Hugging Face config)."""
    p = Path(str(path))
    return p.suffix.lower() == ".json" and not p.name.endswith(".safetensors.index.json")


def import_config(config: Mapping[str, Any], path: str | Path = "config.json") -> Imported:
    """Map a config's keys to its family template's variables."""
    loc = Loc(str(path), 0)
    model_type = config.get("model_type")
    supported = ", ".join(sorted(family_names()))
    if not isinstance(model_type, str) or not model_type:
        raise ArchgraphError("the config has no 'model_type', so its family is unknown", loc=loc,
                             hint=f"add \"model_type\"; supported: {supported}")
    entry = family(model_type)
    if entry is None:
        raise ArchgraphError(f"model_type '{model_type}' is not supported", loc=loc,
                             hint=f"supported model types: {supported}")
    check_dtypes(dict(config), loc)
    architecture = _architecture(config, model_type, entry, loc)
    overridden = {}
    for legacy, key in (entry.get("overrides") or {}).items():  # CLIPConfig's text_config_dict
        if isinstance(config.get(legacy), Mapping):
            config, overridden[key] = {**config, key: config[legacy]}, legacy
    variables: dict[str, Any] = {"head": head_of(architecture) or "base"}
    sources: dict[str, str] = {"head": f"architectures[0] {architecture.split(' ')[0]}"}
    labels = _num_labels(config, loc)
    if labels is not None:  # else the template's default (2 for most families, 3 for BART)
        variables["num_labels"] = labels
        sources["num_labels"] = "num_labels" if "num_labels" in config else "id2label"
    for var, rule in (entry.get("variables") or {}).items():
        found = _value(config, rule, var, model_type, loc)
        if found is not None:
            variables[var], sources[var] = found
            head, dot, rest = sources[var].partition(".")
            if dot and head in overridden:  # say where the value came from
                sources[var] = f"{overridden[head]}.{rest}"
    template = _spec_dir() / str(entry["template"])
    declared = _template_variables(template)
    for key, rule in (entry.get("configs") or {}).items():
        _sub_config(config, key, rule, model_type, loc, variables, sources)
    for var in [v for v in variables if v not in declared]:
        if var in ("head", "num_labels"):
            del variables[var], sources[var]
        else:
            raise SpecError(f"{model_type}{SUFFIX}: '{model_type}' sets variable '{var}', which template "
                            f"{template.name} does not declare", loc=Loc(str(key_file(model_type)), 0),
                            hint="declare it under the template's 'variables:' with a typical value")
    for var, value in variables.items():
        _check_kind(sources[var], value, declared[var], loc)
    return Imported(_model_name(config, path), model_type, architecture, template, variables, sources)


def _sub_config(config: Mapping[str, Any], key: str, rule: Mapping[str, Any], model_type: str, loc: Loc,
                variables: dict[str, Any], sources: dict[str, str]) -> None:
    """A sub-config (LLaVA's text_config, vision_config) read by the key table of its own model_type,
    its variables renamed with the rule's `prefix`.  The sub-config is the config class's defaults
    (that table's `defaults:`; a saved sub-config leaves them out) under the config's keys; a key
    the table leaves unset takes the value of that family's own template where it is a constant."""
    sub = config.get(key)
    if sub is None:
        sub = dict(rule.get("absent") or {})  # what the config class builds without it
    if not isinstance(sub, Mapping):
        raise ArchgraphError(f"'{key}' must be a JSON object; received {_shown(sub)}", loc=loc,
                             hint="write it as a JSON object of the sub-model's keys, as transformers saves it")
    types = list(rule.get("types") or [])
    # `own_class`: the config class builds this sub-config with its own class whatever model_type it names
    # (Idefics3's vision_config saved as "idefics3"): read by the default's key table
    sub_type = rule.get("default") if rule.get("own_class") else sub.get("model_type") or rule.get("default")
    if sub_type not in types:
        raise ArchgraphError(f"'{key}.model_type' is {_shown(sub_type)}, but archgraph's '{model_type}' "
                             f"template cannot build it", loc=loc, hint="known: " + ", ".join(types))
    entry = family(sub_type)
    merged = {**(entry.get("defaults") or {}), **sub}
    own = _template_variables(_spec_dir() / str(entry["template"]))
    prefix, ignore = str(rule.get("prefix") or ""), set(rule.get("ignore") or [])
    for var, var_rule in (entry.get("variables") or {}).items():
        if var in ignore:
            continue
        try:
            found = _value(merged, var_rule, var, sub_type, loc)
        except ArchgraphError as exc:
            raise ArchgraphError(f"in '{key}' ({sub_type}): {exc.message}", loc=loc, hint=exc.hint) from None
        if found is None:  # absent: the family template's value, when it is a constant
            value = own.get(var)
            if isinstance(value, str):  # an expression: a constant only when it names nothing ('silu', 1e-6)
                value = None if expr.names(value) else expr.evaluate(value, {})
            if isinstance(value, (bool, int, float, list, str)):
                keys = str(var_rule.get("key") if isinstance(var_rule, Mapping) else var_rule).rstrip("?")
                found = value, f"{keys} (absent: {sub_type}'s template)"
        if found is not None:
            source = f"{key}.{found[1]}"
            if found[1] in merged and _lookup(sub, found[1]) is None:  # from the class's defaults
                source += f" (absent: {sub_type}'s default)"
            variables[prefix + var], sources[prefix + var] = found[0], source
    if rule.get("type"):
        variables[str(rule["type"])], sources[str(rule["type"])] = sub_type, f"{key}.model_type"
    if rule.get("present"):  # whether the config has this sub-config at all (Gemma 4's optional towers)
        given = config.get(key) is not None
        variables[str(rule["present"])] = given
        sources[str(rule["present"])] = f"{key} ({'given' if given else 'absent or null'})"


def _architecture(config: Mapping[str, Any], model_type: str, entry: Mapping[str, Any], loc: Loc) -> str:
    archs = config.get("architectures") or []
    heads = list(entry.get("heads") or ["base"])
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise ArchgraphError("'architectures' must be a list of class names", loc=loc,
                             hint='write \'architectures\' as a list of class names: ["LlamaForCausalLM"]')
    if not archs:
        return f"{model_type} (no 'architectures': the bare model)"
    arch = archs[0]
    head = head_of(arch)
    if head not in heads:
        known = [s for s, h in HEADS.items() if h in heads]
        raise ArchgraphError(f"model class '{arch}' is not supported for model_type '{model_type}'", loc=loc,
                             hint=f"supported classes end in: {', '.join(known)}; or set "
                                  f"\"architectures\" to one of them")
    return arch


@lru_cache(maxsize=64)
def _template_variables(template: Path) -> dict[str, Any]:
    """The template's variables (through its `extends:` chain, the child's winning) with their
    values in the spec; only the `extends:` and `variables:` parts of each file are read."""
    from .limits import MAX_EXTENDS
    from .spec.sources import resolve
    from .spec.yamlload import load_keys

    chain = [load_keys(template, ("extends", "variables"))]
    while "extends" in chain[-1] and len(chain) <= MAX_EXTENDS:  # deeper: the build says why
        child = chain[-1]
        name, at = str(child["extends"]), child.key_loc("extends")
        chain.append(load_keys(resolve(name, Path(child.loc.file).parent, at), ("extends", "variables"), (name, at)))
    variables: dict[str, Any] = {}
    for level in reversed(chain):
        if isinstance(level.get("variables"), Mapping):
            variables.update(level["variables"])
    return variables


def _check_kind(source: str, value: Any, declared: Any, loc: Loc) -> None:
    """A config value has the kind of the template's value: a number for a number, a list for a list."""
    def kind(v: Any) -> str:
        return "true/false" if isinstance(v, bool) else "a number" if isinstance(v, (int, float)) \
            else "a list" if isinstance(v, list) else "a word"
    if isinstance(declared, (bool, int, float, list)) and kind(value) != kind(declared):
        raise ArchgraphError(f"'{source}' must be {kind(declared)}; received {_shown(value)}", loc=loc,
                             hint="give it the kind of value transformers' config class declares")


def _num_labels(config: Mapping[str, Any], loc: Loc) -> int | None:
    value = config.get("num_labels")
    if value is None and isinstance(config.get("id2label"), dict):
        value = len(config["id2label"])
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArchgraphError(f"'num_labels' must be a positive whole number; received {value!r}", loc=loc,
                             hint='give num_labels a positive whole number, or id2label with one entry per label')
    return value


def _lookup(config: Mapping[str, Any], key: str) -> Any:
    """The value at `key` ('a.b' nested, 'a[2]' indexed), or None when any step is absent."""
    value: Any = config
    for part in key.split("."):
        m = _KEY.fullmatch(part)
        if m is None or not isinstance(value, Mapping):
            return None
        value = value.get(m.group(1))
        if m.group(3) is not None:
            if not isinstance(value, list) or not -len(value) <= int(m.group(3)) < len(value):
                return None
            value = value[int(m.group(3))]
    return value


def _present(config: Mapping[str, Any], key: str) -> bool:
    """Whether `key` (a plain or dotted name) is in the config, even with a null value."""
    parent, _, last = key.rpartition(".")
    holder = _lookup(config, parent) if parent else config
    return isinstance(holder, Mapping) and last in holder


def _holds_any(config: Mapping[str, Any], keys: Any) -> bool:
    """Whether the config holds a value at one of `keys` ('a|b'); False for no keys."""
    return keys is not None and any(_lookup(config, key) is not None for key in str(keys).split("|"))


def _value(config: Mapping[str, Any], rule: Any, var: str, model_type: str, loc: Loc):
    """(value, source key) for one variable, or None to keep the template's value."""
    mapping: Mapping[str, Any] | None = None
    if isinstance(rule, Mapping):
        if "value" in rule:
            return rule["value"], "constant for " + model_type
        if "error" in rule:
            if _holds_any(config, rule.get("unless")):
                return None  # another key decides instead (DETR: a backbone_config, not use_timm_backbone)
            for key in str(rule["key"]).rstrip("?").split("|"):
                value, told = _lookup(config, key), f"'{key}' is set"
                if value is None and not _present(config, key):  # absent: the config class's default
                    value, told = rule.get("default"), f"'{key}' is absent ({model_type}'s default: on)"
                if value not in (None, False):  # false: the switch is off
                    raise ArchgraphError(f"{told}, but archgraph's '{model_type}' template cannot "
                                         f"build it: {rule['error']}", loc=loc,
                                         hint="write a spec for it: start from 'archgraph import-hf' "
                                              "of a config the template builds, and edit that")
            return None
        keys, mapping = str(rule["key"]), rule.get("map")
        if isinstance(mapping, str):  # a map keys.yaml names under 'maps:'
            mapping = named_map(mapping)
        optional = bool(rule.get("optional", False)) or keys.endswith("?")
        separator = rule.get("split")
        if "if_null" in rule:  # an explicit null means this value (transformers reads None as false, say)
            for key in keys.rstrip("?").split("|"):
                if _lookup(config, key) is None and _present(config, key):
                    null = rule["if_null"]
                    if isinstance(null, Mapping) and "error" in null:  # transformers refuses a null too
                        raise ArchgraphError(f"'{key}' is null, but a '{model_type}' model needs a value: "
                                             f"{null['error']}", loc=loc,
                                             hint=f"give '{key}' a value, or leave it out for the default")
                    return null, f"{key} (null)"
        if "by_layer" in rule:
            return _by_layer(config, rule, keys.rstrip("?"), loc)
    else:
        keys, optional, separator = str(rule), str(rule).endswith("?"), None
    keys = keys.rstrip("?")
    for key in keys.split("|"):
        value = _lookup(config, key)
        if value is None:
            continue
        if isinstance(rule, Mapping) and "if_word" in rule and isinstance(value, str):  # a number, not a word
            if _holds_any(config, rule.get("unless")):
                return None  # another key decides instead (EXAONE 4's layer_types, not its pattern)
            raise ArchgraphError(f"'{key}' is {_shown(value)}, but a '{model_type}' model needs a number "
                                 f"there: {rule['if_word']['error']}", loc=loc,
                                 hint=f"give '{key}' a number, or leave it out for the default")
        if separator is not None and isinstance(value, str):  # a list written as one word ("p2c|c2p")
            value = [part.strip() for part in (value.lower() if rule.get("lower") else value).split(separator)]
        if isinstance(value, list) and mapping is not None:  # a key table's map translates one word
            raise ArchgraphError(f"'{key}' must be a number, true/false or a word; received "
                                 f"{_shown(value)}", loc=loc,
                                 hint="give it one value, as transformers' config class declares")
        if not _plain(value):
            raise ArchgraphError(f"'{key}' must be a number, true/false, a word or a list of them (lists nest "
                                 f"{MAX_NESTING} deep); received {_shown(value)}", loc=loc,
                                 hint='give it a number, true/false, a word or a list of them')
        if isinstance(rule, Mapping) and rule.get("list") and not isinstance(value, list):
            value = [value]  # transformers' `int | list[int]` fields: one value is a list of one

        def convert(v):  # each word or number of a list (GPT-Neo's attention_types nests them)
            return [convert(x) for x in v] if isinstance(v, list) else _scalar(v, key, var, mapping, model_type, loc)
        return convert(value), key
    if isinstance(rule, Mapping) and "default" in rule:  # the family's config class default
        if _holds_any(config, rule.get("unless")):
            return None  # the class's default is a whole that the config replaced (gpt-oss's rope_parameters)
        return rule["default"], f"{keys} (absent: {model_type}'s default)"
    if optional:
        return None
    alternatives = " or ".join(f"'{k}'" for k in keys.split("|"))
    raise ArchgraphError(f"the config lacks {alternatives}, which a '{model_type}' model needs", loc=loc,
                         hint=f"add {alternatives.split(' or ')[0]} to the config (it sets '{var}')")


def _by_layer(config: Mapping[str, Any], rule: Mapping[str, Any], key: str, loc: Loc):
    """`{key: k, by_layer: field, fields: [...]}`: a mapping of layer index -> overrides (transformers'
    per_layer_config) read as the list of [layer, value] pairs of the layers that set `field`, in
    layer order; an override of a field not in `fields` is refused by name.  None when absent."""
    value = _lookup(config, key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ArchgraphError(f"'{key}' must map layer indices to their overrides; received {_shown(value)}", loc=loc,
                             hint='write it as {"LAYER": {KEY: VALUE}}: layer indices to the keys that layer overrides')
    pairs = []
    for layer, overrides in value.items():
        if not (isinstance(layer, str) and layer.isascii() and layer.isdigit() and len(layer) <= 6) \
                or not isinstance(overrides, Mapping):
            raise ArchgraphError(f"'{key}' must map layer indices to their overrides; received "
                                 f"{_shown({layer: overrides}) if isinstance(layer, str) else _shown(str(layer))}",
                                 loc=loc,
                                 hint='write it as {"LAYER": {KEY: VALUE}}: layer indices to the keys that '
                                      'layer overrides')
        unknown = sorted(set(overrides) - set(rule.get("fields", [rule["by_layer"]])))
        if unknown:
            raise ArchgraphError(f"'{key}.{layer}' overrides {', '.join(map(repr, unknown))}, which archgraph's "
                                 f"template does not build per layer", loc=loc,
                                 hint="write a spec for it: start from 'archgraph import-hf' of a config the "
                                      "template builds, and edit that")
        if rule["by_layer"] in overrides:
            field = overrides[rule["by_layer"]]
            if not _plain(field) or isinstance(field, list):
                raise ArchgraphError(f"'{key}.{layer}.{rule['by_layer']}' must be a number or a word; received "
                                     f"{_shown(field)}", loc=loc, hint='give the override a number or a word')
            pairs.append([int(layer), field])
    return sorted(pairs), key


MAX_NESTING = 3   # lists in lists in lists: GPT-Neo's attention_types [[["global", "local"], 12]]


def _plain(value: Any, depth: int = 0) -> bool:
    """A number, true/false, a word, or a list of them nested at most MAX_NESTING deep."""
    if isinstance(value, list):
        return depth < MAX_NESTING and all(_plain(v, depth + 1) for v in value)
    return isinstance(value, (int, float, str))


def _scalar(value: Any, key: str, var: str, mapping: Mapping[str, Any] | None, model_type: str, loc: Loc) -> Any:
    """One config value as the template takes it: translated by the key table's map, whole floats as ints."""
    if mapping is not None:
        word = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if word not in mapping:
            raise ArchgraphError(f"'{key}' is {_shown(value)}, which archgraph does not know for "
                                 f"model_type '{model_type}'", loc=loc,
                                 hint="known values: " + ", ".join(map(str, mapping)))
        value = mapping[word]
    if isinstance(value, float) and value.is_integer() and not var.startswith("eps"):
        value = int(value)
    return value


def _shown(value: Any) -> str:
    """A config value as JSON for a message: a long one (a 1 MB string) keeps its ends only."""
    return shortened(json.dumps(value))


def _model_name(config: Mapping[str, Any], path: str | Path) -> str:
    """The model's name: its folder's (or the file's, or `_name_or_path`'s last part), made a name a
    spec may hold (`names.safe_name`: a folder named with ESC or a newline is shown escaped)."""
    from .names import safe_name
    p = Path(str(path))
    if p.stem == "config" and p.parent.name not in ("", "."):
        return safe_name(p.parent.name)
    if p.stem not in ("config", ""):
        return safe_name(p.stem)
    name = config.get("_name_or_path")
    if isinstance(name, str) and name.strip("/"):
        return safe_name(name.rstrip("/").split("/")[-1])
    return safe_name(str(config.get("model_type")))


def import_file(path: str | Path) -> Imported:
    """`import_config` of the config.json at `path`."""
    return import_config(read_config(path), path)


def config_error(exc: ArchgraphError, imported: Imported, path: str | Path,
                 settings: Mapping[str, Any] = MappingProxyType({})) -> ArchgraphError:
    """A template that cannot be built with a config's values: the error, told from the config's side
    (a value the config gave, refused as a setting, is named by its key, not as --set)."""
    setting = re.match(r"--set (\w+)=", exc.message)
    if setting and setting.group(1) in imported.sources and setting.group(1) not in settings:
        key = imported.sources[setting.group(1)]
        exc.message = f"{key}=" + exc.message[setting.end():]
        exc.hint = exc.hint and type(exc.hint)(exc.hint.replace(f"--set {setting.group(1)}=", f"{key}="))
    where = f" at {exc.loc}" if exc.loc else ""
    node = f", node '{exc.node}'" if exc.node else ""
    values = ", ".join(f"{imported.sources[v]}={imported.variables[v]!r}" for v in imported.variables
                       if not imported.sources[v].startswith(("architectures", "constant")))
    named = [v for v in re.findall(r"\b(\w+) = ", exc.message) if v in imported.sources]  # "L = 10**9"
    keys = "; ".join(f"{v} is the config's {imported.sources[v]}" for v in dict.fromkeys(named))
    mine = None if isinstance(exc.hint, Fallback) and not keys else exc.hint  # the config's values say more
    hint = "; ".join(h for h in (mine, keys) if h)
    told = exc  # told again, keeping its class and fields (PositionLimitError's limit)
    told.message = f"the '{imported.model_type}' template cannot be built with this config: " \
                   f"{exc.message} (template{where}{node})"
    told.args, told.loc, told.node = (told.message,), Loc(str(path), 0), None
    told.hint = hint or f"check the config's values: {values}"
    return told


def specialized(path: str | Path, imported: Imported | None = None):
    """The config's model as spec data (`spec.specialize`): the family template at the config's
    values, and the comment of each variable it keeps (the template's, and the config key).
    `imported`: the config already imported (a GGUF file's, `archgraph.ggufmodel.imported`)."""
    from .names import safe_name
    from .spec.extends import merge_extends
    from .spec.sources import resolve
    from .spec.specialize import specialize
    from .spec.yamlload import load_file
    imported = imported or import_file(path)
    def load_spec(name, at, child):
        return load_file(resolve(name, Path(child.file).parent, at), named=(name, at))
    spec, var_locs = merge_extends(load_file(imported.template), load_spec)
    result = specialize(spec, var_locs, imported.variables, load_spec)
    result.spec["name"] = imported.name
    result.spec["description"] = f"{imported.architecture}, imported from {safe_name(Path(str(path)).name)}"
    comments = {}
    for var, loc in result.locs.items():
        line = Path(loc.file).read_text(encoding="utf-8").splitlines()[loc.line - 1] if loc.line else ""
        note = re.search(r"\s#\s?(.*)$", line.split(":", 1)[-1])
        parts = [re.split(r" \(|; ", note.group(1).strip())[0]] if note else []
        if var in imported.sources:
            parts.append(f"(config: {imported.sources[var]})")
        comments[var] = " ".join(parts)
    return imported, result, comments


def template_files() -> list[Path]:
    """The family templates: specs/hf/'s .yaml files but the key tables and keys.yaml."""
    return [p for p in sorted(_spec_dir().glob("*.yaml")) if p.name != SHARED and not p.name.endswith(SUFFIX)]
