"""The data a specialisation walks with, shared by `specialize` and its helpers (`schedule`,
`variants`): the keys of a block call that are no arguments, a scope of folded and kept names, a
folded value as the spec writes it, and the markers of an argument not given or given by default."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .partial import Expr, source

CALL_KEYS = {"name", "block", "in", "category", "trainable", "repeat", "start", "shared", "when",
             "description", "path", "unused", "index", "group"}


def _text(value: Any) -> Any:
    """A folded value as a spec holds it where an expression is read."""
    if isinstance(value, Expr):
        return str(value)
    if isinstance(value, str):
        return "'" + value + "'" if "'" not in value else '"' + value + '"'
    if isinstance(value, list):
        if any(isinstance(v, (str, list)) for v in value):
            return source(value)
        return value
    return value


@dataclass
class _Scope:
    known: dict        # a block's folded arguments and variables (names -> values)
    free: set          # a block's arguments and variables that stay names


_MISSING = object()


class _Pending:
    """A call's argument, decided once every call of the block is known."""


class _Default:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value
