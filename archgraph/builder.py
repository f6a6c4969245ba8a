"""Build the same models from Python instead of YAML.

The builder records plain spec data (located at the Python line that made
each piece, for error messages) and hands it to the same `build_model`.

>>> b = ModelBuilder("tiny-mlp", H=64)
>>> b.input("x", ["B", "H"])
>>> b.node("fc1", "linear", in_features="H", out_features="4 * H")
'fc1'
>>> b.node("act", "relu")
'act'
>>> b.node("fc2", "linear", in_features="4 * H", out_features=10)
'fc2'
>>> b.build().params().total
19210
"""
from __future__ import annotations

import sys
from typing import Any, Iterable

from .errors import Loc
from .load import build
from .model import Model
from .spec.yamlload import _NO_LINES, LocDict, LocList


_LOCS: dict[tuple[str, int], Loc] = {}


def _here(depth: int = 2) -> Loc:
    return _located(sys._getframe(depth))


def _located(frame) -> Loc:
    """The Loc of the caller's line: one per line of its code, however many nodes it makes."""
    where = (frame.f_code.co_filename, frame.f_lineno)
    loc = _LOCS.get(where)
    if loc is None:
        loc = _LOCS[where] = Loc(*where)
    return loc


def _mapping(values: dict, loc: Loc) -> LocDict:
    out = LocDict(values)
    out.loc, out.lines = loc, _NO_LINES  # every key is on the mapping's own line
    return out


def _listing(values: Iterable, loc: Loc) -> LocList:
    out = LocList(values)
    out.loc = loc
    return out


class _Scope:
    def __init__(self, loc: Loc):
        self._nodes = _listing([], loc)
        self._outputs: list[str] | None = None

    def node(self, name: str, op: str, *, inputs: str | list[str] | None = None, **fields: Any) -> str:
        """Add an op node; `inputs` names its inputs (default: the previous node). Returns its name."""
        # The same as `_add`, written out: a generated graph may call this a million times.
        entry = LocDict(name=name, op=op, **fields)
        if inputs is not None:
            entry["in"] = list(inputs) if isinstance(inputs, (list, tuple)) else inputs
        entry.loc, entry.lines = _located(sys._getframe(1)), _NO_LINES
        self._nodes.append(entry)
        return name

    def call(self, name: str, block: str, *, inputs: str | list[str] | None = None, **fields: Any) -> str:
        """Call a block (fields: its arguments and repeat, shared, trainable, category)."""
        return self._add(name, {"block": block}, inputs, fields)

    def output(self, *refs: str) -> None:
        self._outputs = list(refs)

    def _add(self, name: str, kind: dict, inputs, fields: dict) -> str:
        loc = _here(3)
        entry = {"name": name, **kind, **fields}
        if inputs is not None:
            entry["in"] = list(inputs) if isinstance(inputs, (list, tuple)) else inputs
        self._nodes.append(_mapping(entry, loc))
        return name


class BlockBuilder(_Scope):
    """A reusable block: `with builder.block("layer", args=["H"]) as blk: blk.node(...)`."""

    def __init__(self, args: dict | list | None, inputs: list[str], loc: Loc, **extra: Any):
        super().__init__(loc)
        self.args, self.inputs, self.extra, self.loc = args, inputs, extra, loc

    def __enter__(self) -> "BlockBuilder":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def spec(self) -> LocDict:
        data = {"inputs": list(self.inputs), "nodes": self._nodes, **self.extra}
        if self.args:
            data["args"] = self.args if isinstance(self.args, dict) else list(self.args)
        if self._outputs:
            data["outputs"] = self._outputs
        return _mapping(data, self.loc)


class ModelBuilder(_Scope):
    """Collects a model's variables, inputs, blocks and nodes; `build()` makes the Model."""

    def __init__(self, name: str, **variables: Any):
        self.loc = _here()
        super().__init__(self.loc)
        self.name = name
        self.variables = dict(variables)
        self.inputs: dict[str, Any] = {}
        self.blocks: dict[str, BlockBuilder] = {}

    def variable(self, name: str, value: Any) -> None:
        self.variables[name] = value

    def input(self, name: str, shape: list[Any], dtype: str = "float32", default: str | None = None) -> None:
        self.inputs[name] = {"shape": list(shape), "dtype": dtype, **({"default": default} if default else {})}

    def block(self, name: str, *, args: dict | list | None = None, inputs: list[str] | None = None,
              **extra: Any) -> BlockBuilder:
        blk = BlockBuilder(args, inputs or ["x"], _here(), **extra)
        self.blocks[name] = blk
        return blk

    def spec(self) -> LocDict:
        data: dict[str, Any] = {
            "name": self.name,
            "variables": _mapping(self.variables, self.loc),
            "inputs": _mapping({k: _mapping(v, self.loc) for k, v in self.inputs.items()}, self.loc),
            "blocks": _mapping({k: b.spec() for k, b in self.blocks.items()}, self.loc),
            "nodes": self._nodes,
        }
        if self._outputs:
            data["outputs"] = self._outputs
        return _mapping(data, self.loc)

    def build(self, settings: dict[str, Any] | None = None, *, symbolic: bool = False) -> Model:
        """The model, its shapes checked (as `archgraph.load` checks them)."""
        return build(self.spec(), settings, symbolic=symbolic)
