"""The exception hierarchy of archgraph.

Every error a user can cause derives from `ArchgraphError` and carries where it
happened (file, line, node path) and, when we know one, the fix.  The CLI prints
`str(error)` and exits with status 2; nothing else is shown.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple


class Loc(NamedTuple):
    """A place in a spec: file and 1-based line (0 when unknown); a tuple, cheap to make."""

    file: str = "<spec>"
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class ArchgraphError(Exception):
    """Base of every error caused by user input."""

    def __init__(self, message: str, *, loc: Loc | None = None, node: str | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.node = node
        self.hint = hint

    def with_context(self, *, loc: Loc | None = None, node: str | None = None) -> "ArchgraphError":
        """Fill in location and node if they are not known yet (wrap once, never twice)."""
        if self.loc is None or (self.loc.line == 0 and loc is not None and loc.line):
            self.loc = loc
        if self.node is None:
            self.node = node
        return self

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc else ""
        node = f"node '{self.node}': " if self.node else ""
        text = brief(printable(f"{where}{node}{self.message}"))
        if self.hint:
            text += f"\n  fix: {brief(printable(self.hint), 400)}"
        return text


MAX_QUOTED = 80  # characters of a quoted name or value an error shows; longer ones lose their middle
MAX_WORD = 240   # characters of any other unbroken run (a value in JSON, a number): longer ones too


def shortened(text: str, limit: int = MAX_QUOTED) -> str:
    """`text` with its middle replaced by '…' when it is longer than `limit` (both ends stay)."""
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return f"{text[:half]}…{text[len(text) - half:]}"


def brief(text: str, limit: int | None = None) -> str:
    """An error's text with every quoted name or value (no spaces) of more than MAX_QUOTED characters
    shortened (a 5,000-character name is still recognisable by its ends), any other run without
    spaces of more than MAX_WORD too (a 1 MB value in JSON quotes, 5,000 digits), and the whole at
    most `limit` characters (a hint that lists choices)."""
    if len(text) > MAX_QUOTED:
        import re
        text = re.sub(r"'([^'\s]{%d,})'" % (MAX_QUOTED + 1), lambda m: f"'{shortened(m.group(1))}'", text)
        text = re.sub(r"\S{%d,}" % (MAX_WORD + 1), lambda m: shortened(m.group(0)), text)
    return shortened(text, limit) if limit is not None else text


def printable(text: str) -> str:
    """`text` safe for a terminal: control and format characters (ESC, a right-to-left override)
    shown as escapes (\\x1b, \\u202e), the rest as it is."""
    if text.isprintable():  # False for categories Cc and Cf (and other Other/Separator, but ' ')
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class Fallback(str):
    """A fix that holds wherever the error comes from (`give a whole number`): a caller that knows
    more replaces it (a node's rule names the node; a template built from a config.json names the
    config's values), where it keeps a specific one."""


class SpecError(ArchgraphError):
    """The spec is malformed: YAML, unknown keys, unknown ops, bad wiring."""


class ExprError(SpecError):
    """An arithmetic expression cannot be evaluated (unknown name, inexact division, ...)."""


class ShapeError(ArchgraphError):
    """Shapes do not fit an op's rule."""


class PositionLimitError(ShapeError):
    """A sequence longer than the `limit` positions a table holds."""

    def __init__(self, message: str, *, limit: int, **context):
        super().__init__(message, **context)
        self.limit = limit


class InconclusiveDimError(ShapeError):
    """Symbolic dimensions whose equality cannot be decided without concrete values; `names`: the
    sizes the undecided relation involves, when known."""

    def __init__(self, message: str, *, names: Iterable[str] = (), **context):
        super().__init__(message, **context)
        self.names = frozenset(names)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """`"did you mean 'x'?"` for the closest choice, or None.  Names that start with what was
    typed come first (`bert-base` -> `bert-base-uncased`, not `albert-base-v2`), the shortest
    of them; otherwise the closest by difflib's ratio."""
    choices = list(choices)
    starting = sorted((c for c in choices if c.lower().startswith(word.lower()) and c != word),
                      key=lambda c: (len(c), c))[:4]
    if starting and word:
        return "did you mean " + " or ".join(f"'{c}'" for c in starting) + "?"
    import difflib  # only when a name is wrong

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None
