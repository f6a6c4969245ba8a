"""The checks of a Hugging Face config.json that need neither torch nor transformers, made before
either is imported (`import-torch` of a config): the file as `import-hf` reads it
(`archgraph.hf.read_config`: a regular file of at most 16 MB, no duplicate keys, no number of
thousands of digits), a model_type, `architectures` a list of class names, no finite number beyond
MAX_MAGNITUDE (infinity is a number: an open bound), no more layers than a block repeats (transformers would build every one of them,
for hours).

>>> import json, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "config.json"
>>> _ = path.write_text(json.dumps({"model_type": "olmo", "num_hidden_layers": 10 ** 6}))
>>> try:
...     read_raw(path)
... except ArchgraphError as exc:
...     print(exc.message)
'num_hidden_layers' is 1,000,000; a model has at most 100,000 layers of one kind (a block call repeats at most that many times)
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from .dtypes import check_dtypes
from .errors import ArchgraphError, Loc
from .limits import MAX_MAGNITUDE, MAX_REPEAT

LAYERS = re.compile(r"(^|_)(layers|layer|depth|blocks)$|^(num|n)_\w*(layers|blocks)$")  # keys that count layers


def read_raw(path: str | Path) -> dict:
    """The checks that need neither torch nor transformers, made before either is imported: the
    file (`archgraph.hf.read_config`), model_type, architectures, the sizes of numbers and layer
    counts."""
    from .hf import read_config
    raw = read_config(path)
    loc = Loc(str(path))
    if not isinstance(raw.get("model_type"), str):
        raise ArchgraphError("the config has no 'model_type', so its family is unknown", loc=loc,
                             hint="add \"model_type\" (transformers.CONFIG_MAPPING lists the ones it knows)")
    archs = raw.get("architectures")
    if archs is not None and (not isinstance(archs, list) or not all(isinstance(a, str) for a in archs)):
        raise ArchgraphError("'architectures' must be a list of class names", loc=loc,
                             hint='write \'architectures\' as a list of class names: ["LlamaForCausalLM"]')
    _check_sizes(raw, "", loc)
    check_dtypes(raw, loc)
    return raw


def items(config: dict, prefix: str):
    """(name, key, value) of every value in the config and the objects and lists nested in it."""
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from items(value, f"{name}.")
        elif isinstance(value, list):
            yield name, key, value
            for i, v in enumerate(value):
                if isinstance(v, dict):
                    yield from items(v, f"{name}[{i}].")
                else:
                    yield f"{name}[{i}]", key, v
        else:
            yield name, key, value


def _check_sizes(config: dict, prefix: str, loc: Loc) -> None:
    """Numbers beyond MAX_MAGNITUDE; more layers than a block repeats (transformers would build
    every one of them, for hours)."""
    for name, key, value in items(config, prefix):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and math.isinf(value):
            continue  # a bound that is none (Mamba-2's time_step_limit [0, inf]): a number, no size
        if abs(value) > MAX_MAGNITUDE:
            raise ArchgraphError(f"'{name}' is {value:.3g}, beyond any size or setting archgraph reads", loc=loc,
                                 hint="sizes and values are at most 10**30")
        if isinstance(value, int) and LAYERS.search(key) and value > MAX_REPEAT:
            raise ArchgraphError(f"'{name}' is {value:,}; a model has at most {MAX_REPEAT:,} layers of one kind "
                                 "(a block call repeats at most that many times)", loc=loc,
                                 hint=f"check '{name}'")
