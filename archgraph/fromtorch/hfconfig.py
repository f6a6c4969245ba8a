"""A Hugging Face config.json as `import-torch` reads it: through the same JSON reader and limits as
`import-hf` (`archgraph.hf.read_config`: regular files of at most 16 MB, no duplicate keys, no
number of thousands of digits), then refused by name where transformers would fail or run away:
a model_type it does not know, `architectures` that is not a list of class names, a dtype or an
activation it does not name, more layers than a block repeats, a value of the wrong type (the
config class's own typed fields), a config transformers rejects.  Nothing here builds a model.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import ArchgraphError, Loc, did_you_mean, shortened
from ..configcheck import items as _items, read_raw

_ACTIVATION = re.compile(r"(^|_)(act|activation|activation_function|act_fn)$")
_TYPE_WORDS = {"int": "a whole number", "float": "a number", "str": "a word", "bool": "true or false",
               "list": "a list", "dict": "a JSON object"}


def read(path: str | Path) -> dict:
    """The config at `path` as a dict, its model_type known to transformers and its values checked
    (see the module docstring); else one ArchgraphError located at the file."""
    import transformers
    raw = read_raw(path)
    loc = Loc(str(path))
    model_type = raw["model_type"]
    known = transformers.CONFIG_MAPPING
    if model_type not in known:
        raise ArchgraphError(f"transformers {transformers.__version__} does not know model_type "
                             f"'{shortened(model_type)}'", loc=loc,
                             hint=did_you_mean(model_type, known.keys()) or
                             "transformers.CONFIG_MAPPING lists the model types it knows")
    _check_names(raw, "", loc)
    return raw


def _check_names(config: dict, prefix: str, loc: Loc) -> None:
    """An activation transformers does not know (a dtype torch does not name: `read_raw`)."""
    from transformers.activations import ACT2CLS
    for name, key, value in _items(config, prefix):
        if isinstance(value, str) and _ACTIVATION.search(key) and value not in ACT2CLS:
            raise ArchgraphError(f"'{name}' is {_shown(value)}, which transformers does not know as an activation",
                                 loc=loc, hint=(did_you_mean(value, ACT2CLS) or "") +
                                 f" known values: {', '.join(ACT2CLS)}")


def config_object(raw: dict, path: str | Path):
    """transformers' config object for `raw`; a value of the wrong type for the config class's typed
    field, or a config its validators reject, is an ArchgraphError naming the key."""
    import transformers
    from huggingface_hub.errors import StrictDataclassClassValidationError, StrictDataclassFieldValidationError
    loc = Loc(str(path))
    try:
        return transformers.AutoConfig.for_model(**raw)
    except StrictDataclassFieldValidationError as exc:
        raise _field_error(str(exc), loc) from None
    except StrictDataclassClassValidationError as exc:
        why = str(exc).splitlines()[-1].strip()
        raise ArchgraphError(f"transformers refuses this '{raw['model_type']}' config: {why}", loc=loc,
                             hint="correct the value it names") from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, AssertionError) as exc:
        raise ArchgraphError(f"transformers cannot read this '{raw['model_type']}' config: {_first(exc)}", loc=loc,
                             hint="correct the value it names") from None


def _field_error(text: str, loc: Loc) -> ArchgraphError:
    """`'hidden_size' must be a whole number; received "4096"` from the strict dataclass's message
    ("Field 'hidden_size' expected int, got str (value: '4096')")."""
    m = re.search(r"Field '([^']+)' expected (\S+?), got \S+ \(value: (.*)\)$", text, re.S)
    if m is None:
        return ArchgraphError(f"transformers refuses a value of this config: {text.splitlines()[-1].strip()}", loc=loc,
                              hint="correct the value it names")
    field, expected, value = m.groups()
    words = " or ".join(_TYPE_WORDS.get(t.strip(), t.strip()) for t in re.split(r"\s*\|\s*", expected)
                        if t.strip() != "NoneType")
    return ArchgraphError(f"'{field}' must be {words}; received {shortened(value)}", loc=loc,
                          hint=f"give '{field}' as {words}")


def _shown(value: Any) -> str:
    import json
    return shortened(json.dumps(value))


def _first(exc: BaseException) -> str:
    """The first line of an exception's message (its type when it has none)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {shortened(first, 200)}" if first else type(exc).__name__
