"""Records: classes of named fields, as `dataclasses` makes them, for the modules every command loads.

    class Totals(Record):
        total: int = 0
        by_category: Counter = factory(Counter)

gives `__init__` (values by position or by name, defaults, a new value from each `factory` per
record), `__repr__` (fields whose name starts with `_` left out), and `__eq__` on the field values
(`class X(Record, eq=False)`: identity).  `frozen=True` refuses assignment and makes records
hashable; a record that compares by value and is not frozen is unhashable, as a dataclass is.
`replace(record, **changes)` and `fields(cls)` are dataclasses' own.

Why not `dataclasses`: a command's cold start, which issue 24 holds within 2.5x of the bare
interpreter importing PyYAML.  Importing dataclasses imports inspect (with ast, dis and tokenize),
and every dataclass compiles its generated methods when its module loads; for the fourteen a
`params` run needs, that was about 70 M instructions, a sixth of the whole command.  A record's
methods are written once, here.  Modules off that path (rendering, the explorer, torch) keep
dataclasses.
"""
from __future__ import annotations

from typing import Any, ClassVar


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # a field with no default


class factory:
    """A field's default made anew for each record (`factory(list)`): dataclasses' default_factory."""

    __slots__ = ("make",)

    def __init__(self, make) -> None:
        self.make = make


class FrozenError(AttributeError):
    """An assignment to a field of a frozen record (or op)."""


class Record:
    """Base of records; see the module's docstring."""

    __slots__ = ()
    _fields: ClassVar[dict[str, Any]] = {}  # name -> default: MISSING, a value or a factory
    _frozen: ClassVar[bool] = False
    _eq: ClassVar[bool] = True

    def __init_subclass__(cls, frozen: bool | None = None, eq: bool | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if frozen is not None:
            cls._frozen = frozen
        if eq is not None:
            cls._eq = eq
        cls._fields = own = dict(cls._fields)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
                continue
            default = cls.__dict__.get(name, MISSING)
            if isinstance(default, (list, dict, set)):
                raise TypeError(f"{cls.__name__}.{name}: a mutable default is shared by every record; "
                                f"use factory({type(default).__name__})")
            if type(default).__name__ == "Field":  # dataclasses.field(...)
                raise TypeError(f"{cls.__name__}.{name}: write the default value itself (or factory(...)), "
                                "not dataclasses.field(...)")
            if isinstance(default, factory):
                delattr(cls, name)
            own[name] = default
        seen_default = None
        for name, default in own.items():
            if default is MISSING and seen_default:
                raise TypeError(f"{cls.__name__}: field '{name}' without a default follows '{seen_default}' "
                                "with one")
            seen_default = seen_default or (name if default is not MISSING else None)
        if cls._frozen:  # only frozen records pay for a __setattr__ in Python
            cls.__setattr__ = Record._refuse_set  # type: ignore[method-assign,assignment]
            cls.__delattr__ = Record._refuse_delete  # type: ignore[method-assign,assignment]
        if not cls._eq:
            cls.__eq__ = object.__eq__  # type: ignore[method-assign]
            cls.__hash__ = object.__hash__  # type: ignore[method-assign]
        else:
            cls.__eq__ = Record.__eq__  # type: ignore[method-assign]
            cls.__hash__ = Record._hash if cls._frozen else None  # type: ignore[method-assign,assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} arguments; received {len(args)}")
        values = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields or name in values:
                problem = "an unexpected" if name not in fields else "a repeated"
                raise TypeError(f"{type(self).__name__}() got {problem} argument '{name}'")
            values[name] = value
        put = object.__setattr__
        for name, default in fields.items():
            if name in values:
                put(self, name, values[name])
            elif default is MISSING:
                raise TypeError(f"{type(self).__name__}() missing the argument '{name}'")
            else:
                put(self, name, default.make() if isinstance(default, factory) else default)

    def _refuse_set(self, name: str, value: Any) -> None:
        raise FrozenError(f"cannot assign to field '{name}'")

    def _refuse_delete(self, name: str) -> None:
        raise FrozenError(f"cannot delete field '{name}'")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def _hash(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields if not name.startswith("_"))
        return f"{type(self).__qualname__}({shown})"


def fields(record: Any) -> tuple[str, ...]:
    """The field names of a record or record class, in order."""
    return tuple(record._fields)


def replace(record: Any, **changes: Any) -> Any:
    """A new record with `changes` and the other fields of `record` (dataclasses.replace)."""
    values = {name: getattr(record, name) for name in record._fields}
    values.update(changes)
    return type(record)(**values)
