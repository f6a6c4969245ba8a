"""What an op is, as data for `archgraph ops NAME` and for suggestions when an op is mistyped.

`suggest("ConvTranspose2d")` finds `conv_transpose2d` by its PyTorch name; an op's
`aliases` list other names people know it by.  A misspelt name gets the closest names;
a name made of known words gets the ops whose names or descriptions hold those words.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

from ..dims import symbol
from ..errors import did_you_mean
from . import REGISTRY


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
    """A hint for an unknown op name: the op it names in PyTorch's words, else ops close to it by
    spelling and ops about the same things (the words of the name, in op names and aliases)."""
    found = lookup(text)
    if found is not None:
        return f"did you mean '{found}'? (PyTorch's {text})"
    import difflib
    close = difflib.get_close_matches(text, list(REGISTRY), n=3, cutoff=0.6)
    words = {w for w in re.split(r"[^a-z]+", text.lower()) if len(w) > 2}
    scored = []
    for name, cls in REGISTRY.items():
        own = set(re.split(r"[^a-z]+", " ".join((name, *cls.aliases)).lower()))
        shared = len(words & own)
        if shared:
            scored.append((-shared, name))
    related = [name for _, name in sorted(scored) if name not in close][:6]
    picks = close + related
    if not picks:
        return did_you_mean(text, REGISTRY) or "run 'archgraph ops' to list the operators"
    first = f"did you mean '{picks[0]}'?"
    rest = f" Related: {', '.join(picks[1:])}." if picks[1:] else ""
    return f"{first}{rest} ('archgraph ops NAME' describes one)"


@dataclass(frozen=True)
class OpHelp:
    """Everything `archgraph ops NAME` shows, as data."""

    name: str
    category: str
    doc: str                                   # the op's docstring: its rule, inputs and outputs
    aliases: tuple[str, ...]
    hyperparameters: list[tuple[str, str, str | None]]  # (name, type, default as text; None: required)
    inputs: list[tuple[str, bool]]             # (input name, required); "*name": any number more
    tensors: list[tuple[str, list[str]]]       # for the example: (name, shape as formulas of its arguments)
    buffers: list[tuple[str, list[str]]]
    example: str                               # one spec line


def describe(name: str) -> OpHelp:
    """The help of op `name` (its tensors worked out from its example, with symbolic arguments)."""
    cls = REGISTRY[name]
    fields = cls.hyperparameters()
    required = set(cls.required())
    types = cls.types()
    hps = [(f, _type_text(types[f]), None if f in required else repr(fields[f].default)) for f in fields]
    params, buffers = _tensors(cls)
    return OpHelp(name, cls.category, inspect.cleandoc(cls.__doc__ or ""), cls.aliases, hps, _inputs(cls),
                  params, buffers, _example_line(cls))


def _inputs(cls) -> list[tuple[str, bool]]:
    out = []
    for p in list(inspect.signature(cls.infer_shape).parameters.values())[1:]:
        if p.kind is p.VAR_POSITIONAL:
            out.append((f"*{p.name}", False))
        else:
            out.append((p.name, p.default is p.empty))
    return out


def _type_text(typ) -> str:
    text = str(typ).replace("typing.", "").replace("archgraph.dims.", "").replace("<class '", "")
    return text.replace("'>", "").replace("Poly", "size")


def example_op(cls):
    """The op its `example` describes (sizes such as `B` in it stay symbolic)."""
    return cls.build({k: _value(v) for k, v in cls.example.items()})


def _value(v):
    """An example's value: a capitalised name (`B`) is a symbolic size, other words stay words."""
    if isinstance(v, list):
        return [_value(x) for x in v]
    if isinstance(v, str) and v.isidentifier() and v[0].isupper():
        return symbol(v)
    return v


def _tensors(cls):
    """The example's tensors, each dimension as a formula of the op's whole-number arguments."""
    from ..numbers import SymInt
    values = {}
    for key, value in cls.example.items():
        whole = isinstance(value, int) and not isinstance(value, bool)
        values[key] = SymInt.named(key, value) if whole else _value(value)
    try:
        op = cls.build(values)
    except Exception:  # noqa: BLE001 - an example that needs numbers: show it with numbers
        op = example_op(cls)
    show = lambda t: (t.name, [str(getattr(d, "expr", d)).replace("*", "·") for d in t.shape])  # noqa: E731
    return [show(t) for t in op.params()], [show(t) for t in op.buffers()]


def _example_line(cls) -> str:
    parts = [f"name: my_{cls.op_name}", f"op: {cls.op_name}"]
    parts += [f"{k}: {_yaml(v)}" for k, v in cls.example.items()]
    return "- {" + ", ".join(parts) + "}"


def _yaml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return str(value)
