"""Fields a default config leaves unset (None) that transformers cannot build its model without,
set as the model's documentation or its relatives' configs set them, and said in the spec.

Only where transformers fails to build the model from the config as it is (`built`), each field a
rule of `FILLS` knows, in the config or a sub-config, is set and the model built again; the spec's
description says what was set and why (`notes`).  A field no rule knows is left as it is, and the
build's own error is the refusal.

| field | set to |
|---|---|
| `mlp_layer_types` | `first_k_dense_replace` (else 1) `"dense"` layers, then `"sparse"` ones: the documented `["dense", "sparse", "sparse", ...]` (DeepSeek-OCR-2's text model) |
| `vocab_size` | the length of the config's `vocab_list`, else of the default vocabulary its configuration module defines (`get_default_vocab_list`: ESM-2's 33 tokens); with it `pad_token_id` and `mask_token_id`, where unset, the indices of `<pad>` and `<mask>` there |
| any field whose documentation names its default (`num_key_value_heads`: "If it is not specified, will default to `num_attention_heads`": Nemotron) | that field's value, or the number it names |
| a field the config class lacks that the model reads (`'T5Gemma2TextConfig' object has no attribute 'dropout_rate'`) | the default the configs of its own module give it (T5Gemma2Config's 0.0, which it sets on its parts), where they agree on one |

A field left unset that the build's error names and no rule fills (Informer's `prediction_length`,
documented without a default: "typically dictated by the dataset") is refused naming it, how to set
it, and the value the config class's own example sets (`example`: InformerConfig(prediction_length=12)),
which archgraph never sets for the user.
"""
from __future__ import annotations

import importlib
import re
from typing import Any, Callable

from ..errors import ArchgraphError
from . import notes


def _mlp_layer_types(config) -> tuple[dict, str] | None:
    layers = getattr(config, "num_hidden_layers", None)
    if not isinstance(layers, int) or layers < 1:
        return None
    dense = getattr(config, "first_k_dense_replace", None)
    dense = dense if isinstance(dense, int) and not isinstance(dense, bool) and dense >= 0 else 1
    value = ["dense"] * min(dense, layers) + ["sparse"] * max(layers - dense, 0)
    first = "the first layer" if dense == 1 else f"the first {dense} layers"
    return {"mlp_layer_types": value}, (f"{first} dense, the rest sparse, as the config's documentation writes "
                                        "it: ['dense', 'sparse', 'sparse', ...]")


# a vocabulary's special tokens -> the config fields of their ids
SPECIAL = {"pad_token_id": "<pad>", "mask_token_id": "<mask>"}


def _vocabulary(config) -> tuple[dict, str] | None:
    words = getattr(config, "vocab_list", None)
    source = "the config's vocab_list"
    if not (isinstance(words, (list, tuple)) and words):
        module = importlib.import_module(type(config).__module__)
        default = getattr(module, "get_default_vocab_list", None)
        if not callable(default):
            return None
        words, source = list(default()), f"the default vocabulary of {module.__name__} (get_default_vocab_list)"
    values = {"vocab_size": len(words)}
    values.update({k: list(words).index(t) for k, t in SPECIAL.items()
                   if t in words and k in _fields(config) and getattr(config, k) is None})
    ids = [f"{k} the index of {SPECIAL[k]!r}" for k in values if k != "vocab_size"]
    return values, f"vocab_size the length of {source}" + "".join(f", {i}" for i in ids)


# a field left None -> the rule setting it (and fields that go with it): ({field: value}, why), or None
FILLS: dict[str, Callable[[Any], tuple[dict, str] | None]] = {
    "mlp_layer_types": _mlp_layer_types, "vocab_size": _vocabulary}


def _documented(part, field: str) -> tuple[dict, str] | None:
    """A None field whose documentation says it defaults to another field ("If it is not specified,
    will default to `num_attention_heads`"): that field's value.  (A documented number is not read:
    None may mean "off" there, as a sliding window's does.)"""
    m = re.search(r"defaults? to\s+`([A-Za-z_]\w*)`", _doc(type(part), field))
    if m is None or m.group(1) in ("None", "True", "False", field):
        return None
    value = getattr(part, m.group(1), None)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return {field: value}, f"{type(part).__name__}'s documentation: it defaults to {m.group(1)}"


def _doc(cls, field: str) -> str:
    """The paragraph of `cls`'s docstring documenting `field`, its whitespace folded."""
    doc = " ".join((cls.__doc__ or "").split())
    m = re.search(rf"(?<![\w.]){re.escape(field)} \(`(.*?)(?= \w+ \(`|$)", doc)
    return m.group(0) if m else ""


def _relatives(part, field: str) -> tuple[dict, str] | None:
    """The default the config classes of `part`'s own module declare for `field`, where they agree."""
    module = importlib.import_module(type(part).__module__)
    found = {}
    for cls in vars(module).values():
        declared = getattr(cls, "__dataclass_fields__", {}).get(field) if isinstance(cls, type) else None
        if declared is not None and cls.__module__ == module.__name__ and \
                isinstance(declared.default, (int, float, str)) and not isinstance(declared.default, bool):
            found.setdefault(declared.default, cls.__name__)
    if len(found) != 1:
        return None
    (value, owner), = found.items()
    return {field: value}, f"{type(part).__name__} has no {field}, which the model reads: {owner}'s default, as the " \
                           "configs of its own module give it"


def fill(config, name: str, failure: str = "") -> list[str]:
    """Set every field that `config` or a sub-config leaves None and a rule knows (`FILLS`, then its
    documented default), and a field the config lacks that the build's `failure` names as missing
    (`_relatives`); one note per rule applied (for the description: `name`, the class transformers
    could not build)."""
    said: list[str] = []
    while True:  # a documented default may name a field another rule sets (context_length: prediction_length)
        count = len(said)
        for where, part in _parts(config, ""):
            for field, rule in _rules(part, failure):
                said += _apply(part, where, field, rule, name)
        if len(said) == count:
            return said


def _rules(part, failure: str):
    """(field, rule) for each field of `part` a rule may set (see `fill`)."""
    missing = re.search(rf"'{type(part).__name__}' object has no attribute '(\w+)'", failure)
    if missing and not hasattr(part, missing.group(1)):
        yield missing.group(1), lambda p: _relatives(p, missing.group(1))
    for field in _fields(part):
        if getattr(part, field, 0) is None:
            yield field, FILLS.get(field, lambda p, f=field: _documented(p, f))


def _apply(part, where: str, field: str, rule, name: str) -> list[str]:
    """Set what `rule` makes of `part` (nothing where it makes nothing); the note saying so."""
    made = rule(part)
    if made is None:
        return []
    values, why = made
    for key, value in values.items():
        setattr(part, key, value)
    keys = [where + k for k in values]
    names = " and ".join([", ".join(keys[:-1]), keys[-1]] if len(keys) > 1 else keys)
    shown = ", ".join(f"{where}{k} = {_shown(v)}" for k, v in values.items())
    return [f"the config leaves {names} unset, without which transformers cannot build {name}: "
            f"archgraph set {shown} ({why})"]


ROUNDS = 4  # builds after setting fields: each may fail on one more (a missing field, then the next)


def built(build: Callable[[], Any], config, name: str):
    """`build()`; where it fails (an ArchgraphError) and `fill` sets a field, built again (up to ROUNDS
    times), what was set said in the spec (`notes`); else the failure, naming a field left unset
    that it names (`unset`)."""
    filled: list[str] = []
    for _ in range(ROUNDS):
        try:
            model = build()
        except ArchgraphError as exc:
            more = fill(config, name, str(exc.message))
            if not more:
                raise unset(config, exc) from None
            filled += more
            continue
        for text in filled:
            notes.say(text)
        return model
    return build()


def unset(config, exc: ArchgraphError) -> ArchgraphError:
    """The build's failure `exc`, naming the first field left None (in the config or a sub-config)
    that its message names, how to set it and the value its config class's own example sets; `exc`
    where it names none."""
    text = str(exc.message)
    for where, part in _parts(config, ""):
        for field in _fields(part):
            if getattr(part, field, 0) is None and re.search(rf"(?<![\w.]){re.escape(field)}(?!\w)", text):
                shown = example(type(part), field)
                seen = f" ({type(part).__name__}'s own example sets {field}={shown})" if shown is not None else ""
                return ArchgraphError(f"{text.rstrip('.')}; the config leaves {where}{field} unset, and "
                                      f"{type(part).__name__} documents no default for it", loc=exc.loc,
                                      hint=f'set "{where}{field}" in the config{seen}')
    return exc


def example(cls, field: str) -> int | float | None:
    """The number `cls`'s docstring example sets `field` to (`InformerConfig(prediction_length=12)`)."""
    m = re.search(rf"{re.escape(cls.__name__)}\([^)]*\b{re.escape(field)}\s*=\s*(-?\d+(?:\.\d+)?)\b", cls.__doc__ or "")
    if m is None:
        return None
    return float(m.group(1)) if "." in m.group(1) else int(m.group(1))


def _fields(config) -> set[str]:
    return set(config.to_dict()) if hasattr(config, "to_dict") else set()


def _parts(config, prefix: str):
    """(path prefix, config) for the config and each sub-config it declares, depth first."""
    yield prefix, config
    for key in getattr(config, "sub_configs", None) or {}:
        inner = getattr(config, key, None)
        if inner is not None and hasattr(inner, "to_dict"):
            yield from _parts(inner, f"{prefix}{key}.")


def _shown(value: Any) -> str:
    if isinstance(value, list) and len(value) > 4:
        runs = []
        for v in value:
            if runs and runs[-1][0] == v:
                runs[-1][1] += 1
            else:
                runs.append([v, 1])
        return "[" + ", ".join(f"{v!r} x {n}" if n > 1 else repr(v) for v, n in runs) + "]"
    return repr(value)
