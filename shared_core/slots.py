"""Building slotted dataclasses without calling them, for the objects a recall makes by the
hundred (typed rows, arm hits, fused and scored candidates, returned memories).

A frozen dataclass's generated ``__init__`` stores each field through ``object.__setattr__``
(with keyword arguments, by name); a function that stores them through the fields' slot
descriptors builds the same object in about a third of the time (measured: a 12-field row 2.6
-> 0.7 us from a keyword dict; ``RecalledMemory``, 19 fields, ~6 us called). Only for classes
whose ``__init__`` does nothing else (:func:`slot_fields`); for any other, the class itself is
called.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, slots=True, kw_only=True)
... class Point:
...     x: int
...     y: int = 0
>>> make = builder(Point, ("y", "x"))
>>> make(2, 1) == Point(x=1, y=2), sequence_builder(Point, ("y", "x"))((4, 3))
(True, Point(x=3, y=4))
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

__all__ = ["builder", "sequence_builder", "slot_fields"]

T = TypeVar("T")


@functools.cache
def slot_fields(cls: Callable[..., Any]) -> frozenset[str] | None:
    """The field names of ``cls`` if its objects can be built without calling it: a dataclass
    with ``__slots__`` whose generated ``__init__`` only stores its fields (every field an init
    field, no ``__post_init__``, no ``InitVar``); else None."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        return None
    if "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields) or any(
        isinstance(v, dataclasses.InitVar) for v in inspect.get_annotations(cls).values()
    ):
        return None
    names = frozenset(f.name for f in fields)
    if not all(isinstance(_slot(cls, name), types.MemberDescriptorType) for name in names):
        return None
    return names


def builder(cls: type[T], names: tuple[str, ...]) -> Callable[..., T]:
    """A function building a ``cls`` from the values of the fields ``names`` (all of its
    fields, in any order) given as positional arguments."""
    call: Callable[..., T] = _builders(cast(type, cls), names)[0]
    return call


def sequence_builder(cls: type[T], names: tuple[str, ...]) -> Callable[[Sequence[Any]], T]:
    """A function building a ``cls`` from one sequence of the values of the fields ``names``
    (a row of columns named as its fields)."""
    from_sequence: Callable[[Sequence[Any]], T] = _builders(cast(type, cls), names)[1]
    return from_sequence


@functools.cache
def _builders(cls: type, names: tuple[str, ...]) -> tuple[Callable[..., Any], Callable[[Sequence[Any]], Any]]:
    """The two builders: through the slots when :func:`slot_fields` allows it, else by calling
    ``cls`` with the fields by name."""
    if slot_fields(cls) != frozenset(names) or len(set(names)) != len(names):

        def call(*values: Any) -> Any:
            return cls(**dict(zip(names, values, strict=True)))

        return call, lambda values: call(*values)
    setters = {f"_set{i}": _slot(cls, name).__set__ for i, name in enumerate(names)}  # type: ignore[attr-defined]
    args = ", ".join(f"a{i}" for i in range(len(names)))
    stores = "".join(f"    _set{i}(obj, a{i})\n" for i in range(len(names)))
    indexed = "".join(f"    _set{i}(obj, values[{i}])\n" for i in range(len(names)))
    source = (
        f"def call({args}):\n    obj = _new(_type)\n{stores}    return obj\n"
        f"def from_sequence(values):\n    obj = _new(_type)\n{indexed}    return obj\n"
    )
    namespace: dict[str, Any] = {"_new": object.__new__, "_type": cls, **setters}
    # Generated as dataclasses generate __init__; the source holds argument indices only.
    exec(source, namespace)
    return namespace["call"], namespace["from_sequence"]


def _slot(cls: type, name: str) -> object:
    """The class attribute ``name`` of ``cls`` or a base (a slot's member descriptor)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None
