"""``tvm.ir.container``: ``Array`` and ``Map``, TVM's immutable containers.

minitvm's IR holds plain Python sequences and dicts, so ``Array`` is a ``list`` and ``Map`` a
``dict``; ``isinstance(x, Array)`` holds for any list or tuple (and ``Map`` for any dict), which
is what TVM code asks when it receives a container from the API."""

from __future__ import annotations

__all__ = ["Array", "Map"]


class _ArrayMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, list | tuple)


class _MapMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, dict)


class Array(list, metaclass=_ArrayMeta):
    """An array of objects (``tvm.runtime.convert([...])``); indexable, sized, iterable."""

    __slots__ = ()

    def same_as(self, other: object) -> bool:
        return self is other


class Map(dict, metaclass=_MapMeta):
    """A map of objects to objects: ``m[k]``, ``k in m``, ``items()``, ``get(k, default)``."""

    __slots__ = ()

    def same_as(self, other: object) -> bool:
        return self is other
