"""``tvm.runtime.Object``: the common base of IR nodes and runtime objects, as in TVM.

minitvm's objects are plain Python objects, so ``Object`` only carries what TVM's base class
offers every object (``same_as``). ``ObjectTypes``
is the tuple of classes TVM's API accepts as objects."""

from __future__ import annotations

__all__ = ["Object", "ObjectGeneric", "ObjectTypes"]


class Object:
    """Base of every minitvm object; equality is identity (``same_as``)."""

    __slots__ = ()

    def same_as(self, other: object) -> bool:
        """Whether ``other`` is this very object (TVM compares handles)."""
        return self is other


class ObjectGeneric:
    """Base of Python classes that convert themselves to an object (``asobject``)."""

    def asobject(self) -> Object:
        raise NotImplementedError(f"{type(self).__name__} must define asobject()")


# NDArray and Module join in runtime/__init__ once they are defined
ObjectTypes: tuple[type, ...] = (Object,)
