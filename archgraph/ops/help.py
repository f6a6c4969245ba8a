"""What an op is, as data for `archgraph ops NAME` and for suggestions when an op is mistyped.

`suggest("ConvTranspose2d")` finds `conv_transpose2d` by its PyTorch name; an op's
`aliases` list other names people know it by.  A misspelt name gets the closest names;
a name made of known words gets the ops whose names or descriptions hold those words.
"""
from __future__ import annotations

import re

from ..errors import did_you_mean
from .base import REGISTRY


def _squash(text: str) -> str:
    """`nn.ConvTranspose2d` -> `convtranspose2d`: what is left of a name without its spelling."""
    text = re.sub(r"^(torch\.nn\.functional|torch\.nn|torch|nn\.functional|nn|F)\.", "", text.strip())
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _index() -> dict[str, str]:
    out = {}
    for name, cls in REGISTRY.items():
        for alias in (name, *getattr(cls, "aliases", ())):
            out.setdefault(_squash(alias), name)
    return out


def lookup(text: str) -> str | None:
    """The op that `text` names, by its name or a PyTorch name (`nn.Linear`, `ConvTranspose2d`)."""
    if text in REGISTRY:
        return text
    return _index().get(_squash(text))


def suggest(text: str) -> str:
    """A hint for an unknown op name: the op it means, close names, or ops about the same thing."""
    found = lookup(text)
    if found is not None:
        return f"did you mean '{found}'? (PyTorch's {text})"
    close = did_you_mean(text, REGISTRY)
    words = [w for w in re.split(r"[^a-z]+", text.lower()) if len(w) > 2]
    related = [name for name, cls in sorted(REGISTRY.items())
               if words and all(w in (name + " " + cls.doc).lower() for w in words)]
    if related and not close:
        return "ops about " + " and ".join(words) + ": " + ", ".join(related[:6]) + " ('archgraph ops NAME' describes one)"
    if close:
        return close
    return "run 'archgraph ops' to list the operators"
