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
"""
from __future__ import annotations

import importlib
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


def fill(config, name: str) -> list[str]:
    """Set every field of `FILLS` that `config` or a sub-config leaves None; one note per rule applied
    (for the description: `name`, the class transformers could not build)."""
    said = []
    for where, part in _parts(config, ""):
        for field, rule in FILLS.items():
            if field not in _fields(part) or getattr(part, field, 0) is not None:
                continue
            made = rule(part)
            if made is None:
                continue
            values, why = made
            for key, value in values.items():
                setattr(part, key, value)
            keys = [where + k for k in values]
            names = " and ".join([", ".join(keys[:-1]), keys[-1]] if len(keys) > 1 else keys)
            shown = ", ".join(f"{where}{k} = {_shown(v)}" for k, v in values.items())
            said.append(f"the config leaves {names} unset, without which transformers cannot build {name}: "
                        f"archgraph set {shown} ({why})")
    return said


def built(build: Callable[[], Any], config, name: str):
    """`build()`; where it fails (an ArchgraphError) and `fill` sets a field, built again, what was
    set said in the spec (`notes`); else the first failure."""
    try:
        return build()
    except ArchgraphError:
        filled = fill(config, name)
        if not filled:
            raise
    model = build()
    for text in filled:
        notes.say(text)
    return model


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
