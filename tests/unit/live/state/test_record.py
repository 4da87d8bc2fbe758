"""state/record.py: the plain records of the reading verbs behave as the dataclasses they replace (init by
position or name, defaults made afresh, equality, repr, frozen and hashable on request, as_dict like asdict)."""

from __future__ import annotations

import collections
import dataclasses

import pytest

from generator.live.state.record import Record, as_dict, factory


class Inner(Record, frozen=True):
    a: int
    b: str = "x"


class Outer(Record):
    name: str
    count: int = 0
    items: list[Inner] = factory(list)
    by_name: dict[str, Inner] = factory(dict)
    inner: Inner | None = None


@dataclasses.dataclass(frozen=True)
class DInner:
    a: int
    b: str = "x"


@dataclasses.dataclass
class DOuter:
    name: str
    count: int = 0
    items: list[DInner] = dataclasses.field(default_factory=list)
    by_name: dict[str, DInner] = dataclasses.field(default_factory=dict)
    inner: DInner | None = None


def test_init_by_position_or_name_with_fresh_defaults():
    a, b = Outer("a"), Outer(name="b", count=2)
    assert (a.name, a.count, a.items, a.inner) == ("a", 0, [], None) and (b.name, b.count) == ("b", 2)
    a.items.append(Inner(1))
    assert b.items == [] and Outer("c").items == []  # not shared
    a.count = 5  # mutable
    assert a.count == 5
    with pytest.raises(TypeError, match="needs 'name'"):
        Outer()
    with pytest.raises(TypeError, match="no field 'nope'"):
        Outer("a", nope=1)
    with pytest.raises(TypeError, match="twice"):
        Outer("a", name="b")


def test_equality_repr_frozen_and_hash():
    assert Inner(1) == Inner(1, "x") and Inner(1) != Inner(2) and Inner(1) != DInner(1)
    assert repr(Inner(1)) == "Inner(a=1, b='x')"
    with pytest.raises(AttributeError, match="frozen"):
        Inner(1).a = 2  # type: ignore[misc]
    assert len({Inner(1), Inner(1), Inner(2)}) == 2
    with pytest.raises(TypeError, match="unhashable"):
        hash(Outer("a"))


def test_as_dict_is_dataclasses_asdict():
    pair = collections.namedtuple("pair", "x y")
    ours = Outer("o", 3, [Inner(1), Inner(2, "y")], {"k": Inner(3)}, Inner(4))
    theirs = DOuter("o", 3, [DInner(1), DInner(2, "y")], {"k": DInner(3)}, DInner(4))
    assert as_dict(ours) == dataclasses.asdict(theirs)
    ours.items.append(pair(1, [Inner(5)]))  # type: ignore[arg-type]
    theirs.items.append(pair(1, [DInner(5)]))  # type: ignore[arg-type]
    assert as_dict(ours) == dataclasses.asdict(theirs)
    assert type(as_dict(ours)["items"][-1]) is pair
