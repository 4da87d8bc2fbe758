"""Plain records for what the reading verbs report (a snapshot, its fleets, the queue, the progress, the failed
pulls): dataclasses' own import (inspect, ast, dis, tokenize) is ~7 ms of every `status`, a tenth of its time, and
these classes need only a field list with defaults.

A subclass of Record declares its fields as annotated class attributes, in order, a default after its name when
it has one (`factory(list)` for a fresh list or dict each time). It gets `__init__` (positional or by name),
`__eq__`, `__repr__` and, with `frozen=True`, immutability and a hash; `as_dict` turns one into plain data as
dataclasses.asdict does (records, lists, tuples and dicts within, recursively).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class _Factory:
    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def factory(make: Callable[[], Any]) -> Any:
    """A field's default made afresh for each record: `nodes: list[str] = factory(list)`."""
    return _Factory(make)


_REQUIRED = object()


class Record:
    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}
    _frozen = False

    def __init_subclass__(cls, frozen: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = list(cls.__dict__.get("__annotations__", {}))
        cls._fields = tuple(names)
        cls._defaults = {n: cls.__dict__.get(n, _REQUIRED) for n in names}
        for n in names:  # the defaults live in _defaults: an instance always has its own attribute
            if n in cls.__dict__:
                delattr(cls, n)
        cls._frozen = frozen

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(self._fields):
            raise TypeError(f"{type(self).__name__} takes at most {len(self._fields)} positional arguments")
        values = dict(zip(self._fields, args, strict=False))
        for name, value in kwargs.items():
            if name not in self._defaults:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            if name in values:
                raise TypeError(f"{type(self).__name__} got {name!r} twice")
            values[name] = value
        for name in self._fields:
            if name not in values:
                default = self._defaults[name]
                if default is _REQUIRED:
                    raise TypeError(f"{type(self).__name__} needs {name!r}")
                values[name] = default.make() if isinstance(default, _Factory) else default
            object.__setattr__(self, name, values[name])

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        if not self._frozen:
            raise TypeError(f"unhashable type: {type(self).__name__!r}")
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields) + ")"


def as_dict(obj: Any) -> Any:
    """Plain data of a record (and of the records, lists, tuples and dicts within it), as dataclasses.asdict."""
    if isinstance(obj, Record):
        return {n: as_dict(getattr(obj, n)) for n in obj._fields}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple: its own type, field by field
        return type(obj)(*(as_dict(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(as_dict(v) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((as_dict(k), as_dict(v)) for k, v in obj.items())
    return obj
