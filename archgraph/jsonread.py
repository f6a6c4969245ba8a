"""JSON as archgraph reads it (config.json files, safetensors headers and indexes): one object,
strict about what a plain `json.loads` lets through.

A key that appears twice in one object is refused (a plain reader keeps the last silently),
and so is a number of more than MAX_DIGITS digits (which Python refuses to convert, with a
ValueError), named by its key path; every error names the file and the fix.  In a config.json the
tags transformers writes for the floats JSON cannot hold are those floats: `{"__float__":
"Infinity"}` (and "-Infinity", "NaN"), as PreTrainedConfig._decode_special_floats reads them.

>>> loads('{"a": {"b": 1}}', "c.json", "config.json")
{'a': {'b': 1}}
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .errors import ArchgraphError, Loc
from .limits import MAX_DIGITS, MAX_MAGNITUDE


# transformers 5's tags for floats that JSON cannot hold (PreTrainedConfig._encode_special_floats); another
# value under the tag stays an object, as transformers leaves it
FLOAT_TAG = "__float__"
FLOAT_TAGS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


class _Huge:
    """A number too long to convert, standing in for it until the key path that holds it is known."""

    def __init__(self, digits: int) -> None:
        self.digits = digits
        self.path: list[str] = []


def loads(text: str, path: str | Path, what: str) -> Any:
    """The JSON value of `text`, read from `path` (a `what`: "config.json", "header", "index").
    json.JSONDecodeError and RecursionError pass to the caller, which knows the fix."""
    loc = Loc(str(path))
    huge: list[_Huge] = []
    tainted: set[int] = set()  # ids of the objects and lists that hold a _Huge

    def holds_huge(value: Any) -> bool:
        if value is huge[0] or id(value) in tainted:
            return True
        if isinstance(value, list) and any(holds_huge(v) for v in value):
            tainted.add(id(value))
            return True
        return False

    def number(text: str) -> int | _Huge:
        digits = len(text.lstrip("-"))
        if digits > MAX_DIGITS:
            huge.append(_Huge(digits))
            return huge[-1]
        return int(text)

    def no_duplicates(pairs: list[tuple[str, Any]]) -> Any:
        if what == "config.json" and len(pairs) == 1 and pairs[0][0] == FLOAT_TAG and \
                isinstance(pairs[0][1], str) and pairs[0][1] in FLOAT_TAGS:
            return FLOAT_TAGS[pairs[0][1]]
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            twice = next(k for k, _ in pairs if k in seen or seen.add(k))
            raise ArchgraphError(f"the {what} lists '{twice}' twice", loc=loc,
                                 hint="each key may appear once (a JSON reader would keep the last "
                                      "silently): remove one")
        if huge:  # name the first one by the keys that lead to it
            for key, value in pairs:
                if holds_huge(value):
                    huge[0].path.insert(0, key)
                    tainted.add(id(out))
                    break
        return out

    value = json.loads(text, object_pairs_hook=no_duplicates, parse_int=number)
    if huge:
        where = f"'{'.'.join(huge[0].path)}'" if huge[0].path else "a value"
        raise ArchgraphError(f"{where} is a number of {huge[0].digits:,} digits, too long to read", loc=loc,
                             hint=f"sizes and values are at most 10**{len(str(MAX_MAGNITUDE)) - 1}")
    return value
