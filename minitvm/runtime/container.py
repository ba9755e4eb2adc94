"""tvm.runtime.container: the ADT value that executors return for Relay tuples."""

from __future__ import annotations

__all__ = ["ADT", "String", "tuple_object"]


class ADT:
    """A tagged container of values (tag 0 for tuples): indexable, iterable, sized."""

    __slots__ = ("tag", "fields")

    def __init__(self, tag: int, fields):
        self.tag = tag
        self.fields = list(fields)

    def __getitem__(self, i):
        return self.fields[i]

    def __len__(self):
        return len(self.fields)

    def __iter__(self):
        return iter(self.fields)

    def __repr__(self):
        return f"ADT(tag={self.tag}, fields={self.fields!r})"


def tuple_object(fields=None) -> ADT:
    """A tuple value to pass to an executor (``container.tuple_object([a, b])``)."""
    return ADT(0, fields or [])


class String(str):
    """``tvm.runtime.String``: an immutable string object; equal to (and usable as) ``str``."""

    __slots__ = ()

    def same_as(self, other: object) -> bool:
        return self is other
