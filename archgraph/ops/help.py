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
    """`nn.ConvTranspose2d` -> `convtranspose2d`: what is left of a name without its spelling; a
    symbol (`%`, `//`) stays itself (squashed to nothing, every symbol named the same op)."""
    text = re.sub(r"^(torch\.nn\.functional|torch\.nn|torch|nn\.functional|nn|F)\.", "", text.strip())
    return re.sub(r"[^a-z0-9]", "", text.lower()) or text


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
    summary: str                               # its first sentence (the `ops` list)
    aliases: tuple[str, ...]
    hyperparameters: list[tuple[str, str, str | None, str]]  # (name, type, default as text or None:
    #   required, what it means: the comment after the field, see argument_docs)
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
    docs = argument_docs(cls)
    hps = [(f, _type_text(types[f]), None if f in required else repr(fields[f].default), docs.get(f, ""))
           for f in fields]
    params, buffers = _tensors(cls)
    return OpHelp(name, cls.category, inspect.cleandoc(cls.__doc__ or ""), summary(cls), cls.aliases, hps,
                  _inputs(cls), params, buffers, _example_line(cls))


def _inputs(cls) -> list[tuple[str, bool]]:
    out = []
    for p in list(inspect.signature(cls.infer_shape).parameters.values())[1:]:
        if p.kind is p.VAR_POSITIONAL:
            out.append((f"*{p.name}", False))
        else:
            out.append((p.name, p.default is p.empty))
    return out


def _type_text(typ) -> str:
    """`Literal['a', 'b'] | None` -> `a | b | None`; `Poly` (a symbolic size) -> `size`."""
    text = str(typ).replace("typing.", "").replace("archgraph.dims.", "").replace("<class '", "")
    text = text.replace("'>", "").replace("Poly", "size")
    return re.sub(r"Literal\[([^\]]*)\]", lambda m: " | ".join(v.strip(" '") for v in m.group(1).split(",")), text)


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


def argument_docs(cls) -> dict[str, str]:
    """Each hyperparameter's meaning, from the comment after its field in the op's class (and the
    `#   ` lines that continue it), the classes it inherits from first: the one source `ops NAME`
    and the docs read.

    >>> argument_docs(REGISTRY["linear"])["in_features"]
    'width of the input: its last dimension'
    """
    from .base import Op
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if issubclass(klass, Op) and klass is not Op and vars(klass).get("__annotations__"):
            out.update({k: v for k, v in _field_comments(klass).items() if v})
    return {name: out[name] for name in cls.hyperparameters() if out.get(name)}


_FIELD = re.compile(r"^    ([A-Za-z_]\w*)\s*:[^#]*?(?:#\s?(.*))?$")
_MORE = re.compile(r"^    #\s{1,3}(\S.*)$")


def _field_comments(klass) -> dict[str, str]:
    """name -> comment of the fields declared in `klass`'s own body."""
    try:
        lines = inspect.getsource(klass).splitlines()
    except (OSError, TypeError):  # pragma: no cover - no source (a frozen build)
        return {}
    out: dict[str, str] = {}
    current = None
    for line in lines[1:]:
        if line.startswith("    def ") or line.startswith("    @"):
            break
        more = _MORE.match(line)
        if more and current is not None:
            out[current] = f"{out[current]} {more.group(1).strip()}".strip()
            continue
        found = _FIELD.match(line)
        if found and not found.group(1).startswith("_"):
            current = found.group(1)
            out[current] = (found.group(2) or "").strip()
        elif line.strip() and not line.lstrip().startswith("#"):
            current = None
    return out


SUMMARY_WIDTH = 60  # the `ops` list gives each op one line of about this much


def summary(cls) -> str:
    """The op's first sentence; when that is long and opens with what the op is before a colon
    (`Multi-head attention with its projections: x [B, S, hidden] -> ...`), that opening.

    >>> summary(REGISTRY["attention"])
    'Multi-head attention with its projections.'
    """
    text = " ".join(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].split())
    first = _outside_brackets(text, (". ",), sentence=True) or text
    first = first.rstrip(".")
    if len(first) > SUMMARY_WIDTH:
        opening = _outside_brackets(first, (": ", "; "))
        if opening and len(opening) >= 12:
            first = opening
    return first + "."


def _outside_brackets(text: str, marks: tuple[str, ...], sentence: bool = False) -> str | None:
    """`text` up to the first of `marks` that is not inside brackets (with `sentence`, a full stop
    that ends a sentence: not one of '...', followed by a capital or a backtick), or None."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and any(text.startswith(m, i) for m in marks):
            after = text[i + 2:i + 3]
            if sentence and (text[i - 1:i] == "." or not (after.isupper() or after == "`")):
                continue
            return text[:i]
    return None
