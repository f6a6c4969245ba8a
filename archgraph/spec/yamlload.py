"""Read a spec file safely: plain YAML data only, with the line of every key.

Refused with a SpecError (file and line): files that are not UTF-8 text or are
too large, empty documents, YAML tags that would build objects, aliases (so an
alias bomb costs nothing), merge keys, duplicate keys and syntax errors.  Uses
libyaml's C parser when PyYAML has it, the pure-Python one otherwise.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import yaml

from ..errors import ArchgraphError, Loc, SpecError
from ..limits import MAX_SPEC_BYTES as MAX_BYTES
from ..limits import read_file


class LocDict(dict):
    """A mapping that remembers the line of each key (`lines`) and its own (`loc`).  Slots, not an
    attribute dictionary: a spec built in Python may hold a million of them.  Whoever makes one
    sets both (the parser, the builder, `extends`)."""

    __slots__ = ("loc", "lines")
    loc: Loc
    lines: Mapping[str, int]

    def key_loc(self, key: str) -> Loc:
        line = self.lines.get(key)
        return Loc(self.loc.file, line) if line else self.loc


class LocList(list):
    __slots__ = ("loc",)
    loc: Loc


_NO_LINES: Mapping[str, int] = MappingProxyType({})  # for mappings whose keys are all on their own line


def _mark_loc(file: str, mark) -> Loc:
    return Loc(file, mark.line + 1 if mark is not None else 0)


def _tab_at(text, mark) -> tuple[int, int] | None:
    """(line, column), 1-based, of a tab in the indentation of the line a YAML error names or of the
    line before it (PyYAML names where the tab made it stop), or None."""
    if mark is None or not isinstance(text, str):
        return None
    lines = text.split("\n")
    for number in (mark.line, mark.line - 1):
        if 0 <= number < len(lines):
            indent = lines[number][:len(lines[number]) - len(lines[number].lstrip(" \t"))]
            if "\t" in indent:
                return number + 1, indent.index("\t") + 1
    return None


def _no_alias(file: str, mark) -> SpecError:
    return SpecError("YAML aliases (*name) are not allowed in a spec", loc=_mark_loc(file, mark),
                     hint="repeat the value, or use variables and blocks for reuse")


class _Located:
    """Constructor half: mappings and lists that remember their lines; no merge keys or duplicates."""

    file = "<spec>"

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, yaml.MappingNode):  # pragma: no cover - PyYAML guards this
            raise SpecError("expected a mapping", loc=_mark_loc(self.file, node.start_mark),
                            hint='write a mapping: key: value')
        out = LocDict()
        out.loc = _mark_loc(self.file, node.start_mark)
        out.lines = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise SpecError("YAML merge keys (<<) are not allowed in a spec",
                                loc=_mark_loc(self.file, key_node.start_mark),
                                hint="repeat the keys, or use variables and blocks for reuse")
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise SpecError(f"keys must be names; received {key!r}",
                                loc=_mark_loc(self.file, key_node.start_mark),
                                hint="write each key as a name, e.g. H: 768")
            key = str(key)
            if key in out:
                raise SpecError(f"key '{key}' appears twice in the same mapping",
                                loc=_mark_loc(self.file, key_node.start_mark),
                                hint="remove one of the two")
            out[key] = self.construct_object(value_node, deep=True)
            out.lines[key] = key_node.start_mark.line + 1
        return out

    def construct_int(self, node):
        """A whole number; one too long for Python to read says where it is."""
        try:
            return yaml.SafeLoader.construct_yaml_int(self, node)
        except ValueError:
            digits = sum(ch.isdigit() for ch in str(node.value))
            raise SpecError(f"a whole number of {digits:,} digits is too long to read",
                            loc=_mark_loc(self.file, node.start_mark),
                            hint="sizes and values are at most 10**30") from None

    def construct_sequence(self, node, deep=False):
        out = LocList(self.construct_object(child, deep=True) for child in node.value)
        out.loc = _mark_loc(self.file, node.start_mark)
        return out


class _PyLoader(_Located, yaml.SafeLoader):
    """Pure-Python PyYAML: refuses aliases while composing."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise _no_alias(self.file, self.peek_event().start_mark)
        return super().compose_node(parent, index)


_FAST = getattr(yaml, "__with_libyaml__", False)
_Loader = type("_CLoader", (_Located, yaml.CSafeLoader), {}) if _FAST else _PyLoader
for _cls in {_Loader, _PyLoader}:
    _cls.add_constructor("tag:yaml.org,2002:map", lambda loader, node: loader.construct_mapping(node))
    _cls.add_constructor("tag:yaml.org,2002:seq", lambda loader, node: loader.construct_sequence(node))
    _cls.add_constructor("tag:yaml.org,2002:int", lambda loader, node: loader.construct_int(node))


# Where an anchor (&a) or alias (*a) could start: after a line start, a space or a flow indicator.
# Text without one cannot hold an alias, and skips the event scan ("4 * H" has none).
_MAYBE_ALIAS = re.compile(r"(?:^|[\s\[{,])[&*][^\s\]},]")


def _refuse_aliases(text: str, file: str) -> None:
    """With libyaml the composer is C code: scan its (fast) event stream for aliases first."""
    if _MAYBE_ALIAS.search(text) is None:
        return
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise _no_alias(file, event.start_mark)


def load_text(text: str, file: str = "<spec>") -> LocDict:
    """Parse spec text; the top level must be a mapping."""
    if not text.strip():
        raise SpecError("the spec is empty", loc=Loc(file, 1),
                        hint="a spec needs at least 'inputs:' and 'nodes:'; see the README")
    loader = _Loader(str(text))  # a str subclass (to_spec's SpecText) is text too; libyaml's parser wants str
    loader.file = file
    try:
        if _FAST:
            _refuse_aliases(text, file)
        data = loader.get_single_data()
    except SpecError:
        raise
    except yaml.constructor.ConstructorError as exc:
        found = re.search(r"tag '([^']*)'", exc.problem or "")
        tag = found.group(1).replace("tag:yaml.org,2002:", "!!") if found else "of this value"
        raise SpecError(f"YAML tag {tag} is not allowed: a spec holds plain data only",
                        loc=_mark_loc(file, exc.problem_mark),
                        hint="remove the '!!...' tag") from None
    except yaml.MarkedYAMLError as exc:
        if "maximum nesting depth" in (exc.problem or ""):  # PyYAML 6.0.4 and later stop before the recursion
            raise SpecError("the YAML nests too deeply", loc=_mark_loc(file, exc.problem_mark),
                            hint='nest the YAML less deeply') from None
        tab = _tab_at(text, exc.problem_mark)
        if tab is not None:
            raise SpecError(f"YAML does not allow tabs for indentation; line {tab[0]} column {tab[1]} holds one",
                            loc=Loc(file, tab[0]), hint="indent with spaces") from None
        context = f" ({exc.context})" if exc.context else ""
        raise SpecError(f"YAML syntax error: {exc.problem}{context}", loc=_mark_loc(file, exc.problem_mark),
                        hint="check the indentation, the ':' after each key and the closing brackets") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"YAML error: {exc}", loc=Loc(file), hint='fix the YAML at the line named') from None
    except RecursionError:
        raise SpecError("the YAML nests too deeply", loc=Loc(file, 1), hint='nest the YAML less deeply') from None
    except ValueError as exc:  # e.g. an integer literal of thousands of digits
        raise SpecError(f"a value cannot be read: {exc}", loc=Loc(file),
                        hint='write the value shorter (a number of fewer digits)') from None
    finally:
        loader.dispose()
    if data is None:
        raise SpecError("the spec is empty", loc=Loc(file, 1),
                        hint="begin the spec with 'archgraph: 1' and give its inputs and nodes")
    if not isinstance(data, LocDict):
        raise SpecError(f"the top level of a spec must be a mapping; received a {type(data).__name__}",
                        loc=Loc(file, 1), hint='write the spec as a mapping: archgraph: 1, name:, inputs:, nodes:')
    return data


_TOP_KEY = re.compile(r"^([A-Za-z_][\w.-]*)[ \t]*:", re.M)
TOP_KEYS = frozenset({"archgraph", "name", "description", "extends", "variables", "inputs", "outputs",
                      "blocks", "nodes", "constraints", "edit", "values"})  # a spec's (extends.py checks them, with a did-you-mean)


def load_keys(path: str | Path, keys: tuple[str, ...], named: tuple[str, Loc] | None = None) -> LocDict:
    """Only the top-level `keys` of a spec file, each parsed alone with the lines it has in the
    file (its unindented key starts it, the next one ends it): a template's `variables:` without
    its nodes.  A file whose top-level keys cannot be told apart this way (a key twice) is parsed
    whole, so its error is the one a full parse gives.  `named`: as `load_file`'s."""
    text = read_text(path)
    if named is not None and not _declared(text):
        return _load_named(text, path, *named)
    found = list(_TOP_KEY.finditer(text))
    names = [m.group(1) for m in found]
    if len(set(names)) != len(names):
        return load_text(text, str(path))
    out = LocDict()
    out.loc, out.lines = Loc(str(path), 1), {}
    ends = [m.start() for m in found[1:]] + [len(text)]
    for m, end in zip(found, ends):
        if m.group(1) in keys:
            part = load_text("\n" * text.count("\n", 0, m.start()) + text[m.start():end], str(path))
            out.update(part)
            out.lines.update(part.lines)
    return out


def load_file(path: str | Path, named: tuple[str, Loc] | None = None) -> LocDict:
    """Read and parse a spec file (UTF-8 text, at most 1 MiB); `named`: (the name, its place) when
    another spec names the file (`extends:`, `spec:`; see `_load_named`)."""
    text = read_text(path)
    if named is not None and not _declared(text):
        return _load_named(text, path, *named)
    return load_text(text, str(path))


def _declared(text: str) -> bool:
    """True when the text says it is a spec: it begins with `archgraph:` (its first top-level key;
    comments may come before it), as every spec of specs/ and every one import-hf writes does."""
    first = _TOP_KEY.search(text)
    return first is not None and first.group(1) == "archgraph"


def _load_named(text: str, path: str | Path, name: str, at: Loc) -> LocDict:
    """A file a spec names that does not say it is a spec (no `archgraph: 1` line), read only as
    far as telling it is one: when it is not YAML of a spec's top-level keys, the error says so at
    the naming spec's line and shows nothing of the file (a shared spec naming /etc/shadow was
    answered with its first line)."""
    try:
        data = load_text(text, str(path))
    except SpecError as exc:
        line = f" (at line {exc.loc.line})" if exc.loc and exc.loc.line else ""
        why = f"{path} is not YAML archgraph reads as a spec{line}"
        raise _not_a_spec(name, at, why) from None
    if not set(data) <= TOP_KEYS:
        raise _not_a_spec(name, at, f"{path} has top-level keys a spec does not have")
    return data


def _not_a_spec(name: str, at: Loc, why: str) -> SpecError:
    return SpecError(f"'{name}' is not a spec archgraph can read: {why}; nothing of a file that does not begin "
                     "with 'archgraph: 1' is shown", loc=at,
                     hint=f"name a spec file, a built-in model or a template of specs/hf/; if {name} is a spec, "
                          "begin it with 'archgraph: 1' to see its errors")


def read_text(path: str | Path) -> str:
    """A spec file's text: UTF-8, at most 1 MiB, not binary (a SpecError with the file otherwise)."""
    name = str(path)
    try:
        raw = read_file(path, MAX_BYTES, "spec")
    except OSError as exc:
        raise SpecError(f"cannot read the spec: {exc.strerror}", loc=Loc(name),
                        hint='check the path and that you may read the file') from None
    except ArchgraphError as exc:  # not a regular file, or too large
        raise SpecError(exc.message, loc=exc.loc, hint=exc.hint) from None
    if b"\x00" in raw:
        raise SpecError("this is a binary file, not a YAML spec", loc=Loc(name),
                        hint='give the YAML spec, not a binary file')
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise SpecError("the file is not UTF-8 text", loc=Loc(name, line),
                        hint="save it as UTF-8 text") from None
    return text
