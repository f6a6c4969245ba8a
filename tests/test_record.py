"""archgraph.record: the value classes of the modules every command loads, as dataclasses makes them."""
from __future__ import annotations

from collections import Counter
from typing import ClassVar

import pytest

from archgraph.record import MISSING, FrozenError, Record, factory, fields, replace


class Point(Record, frozen=True):
    x: int
    y: int = 0
    label: str | None = None
    kind: ClassVar[str] = "point"  # a class constant, not a field


class Tally(Record):
    name: str
    counts: Counter = factory(Counter)


class Handle(Record, eq=False):
    name: str
    _cache: object = None


class Point3(Point):
    z: int = 0


def test_init_takes_values_by_position_or_name_with_defaults():
    assert (Point(1).x, Point(1).y, Point(1, 2).y, Point(y=5, x=1).y) == (1, 0, 2, 5)
    assert fields(Point) == ("x", "y", "label") and fields(Point3) == ("x", "y", "label", "z")
    assert Point3(1, 2, None, 3).z == 3 and Point.kind == "point"
    with pytest.raises(TypeError, match=r"Point\(\) missing the argument 'x'"):
        Point()
    with pytest.raises(TypeError, match=r"Point\(\) got an unexpected argument 'w'"):
        Point(1, w=2)
    with pytest.raises(TypeError, match=r"Point\(\) got a repeated argument 'x'"):
        Point(1, x=2)
    with pytest.raises(TypeError, match=r"Point\(\) takes 3 arguments; received 4"):
        Point(1, 2, "a", 4)


def test_a_factory_makes_a_new_value_for_each_record():
    a, b = Tally("a"), Tally("b")
    a.counts["x"] += 1
    assert (a.counts, b.counts) == (Counter(x=1), Counter())
    assert "counts" not in vars(Tally)  # the factory is not left as a shared class attribute


def test_equality_hashing_and_freezing_follow_dataclasses():
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(1, 3) and Point(1) != Point3(1)
    assert hash(Point(1, 2)) == hash(Point(1, 2)) and len({Point(1), Point(1), Point(2)}) == 2
    with pytest.raises(FrozenError, match="cannot assign to field 'x'"):
        Point(1).x = 2
    with pytest.raises(AttributeError):  # FrozenError is an AttributeError, as FrozenInstanceError is
        del Point(1).y
    assert Tally("a") == Tally("a")
    with pytest.raises(TypeError, match="unhashable"):  # compares by value and may change: no hash
        hash(Tally("a"))
    h = Handle("a")
    h._cache = 3  # not frozen: assignable
    assert h != Handle("a") and h == h and len({h, Handle("a")}) == 2  # identity


def test_repr_and_replace():
    assert repr(Point(1, 2)) == "Point(x=1, y=2, label=None)"
    assert repr(Handle("a", 5)) == "Handle(name='a')"  # underscored fields are left out
    assert replace(Point(1, 2), label="p") == Point(1, 2, "p")
    with pytest.raises(TypeError, match="unexpected argument 'w'"):
        replace(Point(1), w=3)


def test_declarations_dataclasses_refuses_are_refused():
    with pytest.raises(TypeError, match=r"Bad.xs: a mutable default is shared by every record; use factory\(list\)"):
        class Bad(Record):
            xs: list = []
    with pytest.raises(TypeError, match="field 'b' without a default follows 'a' with one"):
        class Order(Record):
            a: int = 0
            b: int
    assert repr(MISSING) == "MISSING"


def _as_dataclass(cls):
    """The op class chain rebuilt as dataclasses (what `@op` made of it before records)."""
    import dataclasses

    from archgraph.ops.base import Op
    base = object
    for klass in [k for k in reversed(cls.__mro__) if issubclass(k, Op) and k is not Op]:
        namespace = {k: v for k, v in vars(klass).items() if k not in ("__dict__", "__weakref__", "_hyperparameters")}
        namespace.setdefault("__annotations__", {})
        base = dataclasses.dataclass(init=False, repr=False, eq=False)(type(klass.__name__, (base,), namespace))
    return base


def test_every_op_reads_its_hyperparameters_as_dataclasses_and_typing_would():
    """Ops declare hyperparameters as dataclass fields are declared; archgraph reads them without
    dataclasses (fields) or typing.get_type_hints (types): the same names, defaults and types."""
    import dataclasses
    import typing

    from archgraph.ops import REGISTRY

    for name, cls in sorted(REGISTRY.items()):
        expected = dataclasses.fields(_as_dataclass(cls))
        assert [(f.name, f.default) for f in expected] == \
            [(h.name, h.default if h.default is not MISSING else dataclasses.MISSING)
             for h in cls.hyperparameters().values()], name
        hints = typing.get_type_hints(cls)
        assert cls.types() == {f.name: hints[f.name] for f in expected}, name
    assert len(REGISTRY) > 100


def test_an_op_declared_with_a_dataclass_field_or_a_mutable_default_is_refused_by_name():
    import dataclasses

    from archgraph.ops.base import Op, op
    with pytest.raises(TypeError, match=r"Widths.sizes: write the default value itself \(or factory\(...\)\), "
                                        r"not dataclasses.field"):
        @op("widths_test_only")
        class Widths(Op):
            sizes: tuple = dataclasses.field(default=(1, 2))
    with pytest.raises(TypeError, match=r"Lists.sizes: a mutable default is shared by every record; use factory"):
        @op("lists_test_only")
        class Lists(Op):
            sizes: list = [1, 2]
