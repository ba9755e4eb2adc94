"""``tvm.runtime.ObjectPath``: where an object sits inside a root object, as a chain of steps
(attribute access, array index, map value, and the "missing" steps that say one side of a
comparison has no such element). Structural equality reports its first mismatch this way
(``tvm.ir.base.get_first_structural_mismatch`` returns an ``ObjectPathPair``).

Paths are immutable and share their prefixes; each step keeps its parent and its length, so
building, comparing and printing a path costs time linear in its length without recursion.
The text is TVM's: ``<root>.body.args[0]``, ``[<missing element #2>]``, ``[<missing entry>]``.
"""

from __future__ import annotations

from .object import Object

__all__ = ["ObjectPath", "RootPath", "AttributeAccessPath", "UnknownAttributeAccessPath",
           "ArrayIndexPath", "MissingArrayElementPath", "MapValuePath", "MissingMapEntryPath",
           "ObjectPathPair"]


class ObjectPath(Object):
    """A path from a root object to one of its descendants; start one with ``ObjectPath.root()``
    and extend it with ``attr``, ``array_index``, ``map_value`` and the ``missing_*`` steps."""

    __slots__ = ("_parent", "_length")

    def __init__(self, *args, **kwargs) -> None:
        raise ValueError("ObjectPath can't be initialized directly. "
                         "Use ObjectPath.root() to create a path to the root object")

    @classmethod
    def _make(cls, parent: ObjectPath | None):
        node = object.__new__(cls)
        node._parent = parent
        node._length = 1 if parent is None else parent._length + 1
        return node

    # ------------------------------------------------------------------ construction
    @staticmethod
    def root(name: str | None = None) -> ObjectPath:
        """The path of the root object itself (printed ``<root>``, or ``name`` if given)."""
        node = RootPath._make(None)
        node.name = name
        return node

    def attr(self, attr_key: str | None) -> ObjectPath:
        """This path followed by access to attribute ``attr_key`` (None: an unknown one)."""
        if attr_key is None:
            return UnknownAttributeAccessPath._make(self)
        if not isinstance(attr_key, str):
            raise TypeError(f"ObjectPath.attr: the attribute key must be a str or None, got "
                            f"{type(attr_key).__name__}")
        node = AttributeAccessPath._make(self)
        node.attr_key = attr_key
        return node

    def array_index(self, index: int) -> ObjectPath:
        """This path followed by element ``index`` of an array."""
        node = ArrayIndexPath._make(self)
        node.index = _as_index(index, "array_index")
        return node

    def missing_array_element(self, index: int) -> ObjectPath:
        """This path followed by element ``index`` that this side's array does not have."""
        node = MissingArrayElementPath._make(self)
        node.index = _as_index(index, "missing_array_element")
        return node

    def map_value(self, key) -> ObjectPath:
        """This path followed by the value stored under ``key`` in a map."""
        node = MapValuePath._make(self)
        node.key = key
        return node

    def missing_map_entry(self) -> ObjectPath:
        """This path followed by an entry that this side's map does not have."""
        return MissingMapEntryPath._make(self)

    # ------------------------------------------------------------------ queries
    @property
    def parent(self) -> ObjectPath | None:
        """The path without its last step; None for the root."""
        return self._parent

    def __len__(self) -> int:
        return self._length

    def get_prefix(self, length: int) -> ObjectPath:
        """The first ``length`` steps of this path (1 is the root)."""
        if not isinstance(length, int) or isinstance(length, bool):
            raise TypeError(f"ObjectPath.get_prefix: length must be an int, got {length!r}")
        if length < 1:
            raise IndexError("Prefix length must be at least 1")
        if length > self._length:
            raise IndexError("Attempted to get a prefix longer than the path itself")
        node = self
        while node._length > length:
            node = node._parent
        return node

    def is_prefix_of(self, other: ObjectPath) -> bool:
        """Whether ``other`` starts with every step of this path."""
        if not isinstance(other, ObjectPath) or self._length > len(other):
            return False
        return self == other.get_prefix(self._length)

    def steps(self) -> list[ObjectPath]:
        """The steps of this path from the root to this one."""
        out = []
        node = self
        while node is not None:
            out.append(node)
            node = node._parent
        out.reverse()
        return out

    # ------------------------------------------------------------------ equality and text
    def _last_equal(self, other: ObjectPath) -> bool:
        raise NotImplementedError(type(self).__name__)

    def _last_text(self) -> str:
        raise NotImplementedError(type(self).__name__)

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return str(self) == other
        if not isinstance(other, ObjectPath) or len(other) != self._length:
            return False
        a, b = self, other
        while a is not None:
            if type(a) is not type(b) or not a._last_equal(b):
                return False
            a, b = a._parent, b._parent
        return True

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        return "".join(step._last_text() for step in self.steps())

    def __repr__(self) -> str:
        return str(self)


def _as_index(index, what: str) -> int:
    if isinstance(index, bool) or not hasattr(index, "__index__"):
        raise TypeError(f"ObjectPath.{what}: the index must be an int, got {index!r}")
    return int(index)


class RootPath(ObjectPath):
    """The root step (``<root>``, or the name given to ``ObjectPath.root``)."""

    __slots__ = ("name",)

    def _last_equal(self, other) -> bool:
        return self.name == other.name

    def _last_text(self) -> str:
        return self.name if self.name is not None else "<root>"


class AttributeAccessPath(ObjectPath):
    """An attribute step (``.body``)."""

    __slots__ = ("attr_key",)

    def _last_equal(self, other) -> bool:
        return self.attr_key == other.attr_key

    def _last_text(self) -> str:
        return "." + self.attr_key


class UnknownAttributeAccessPath(ObjectPath):
    """An attribute step whose name is not known; two of them are never equal (as in TVM)."""

    __slots__ = ()

    def _last_equal(self, other) -> bool:
        return False

    def _last_text(self) -> str:
        return ".<unknown attribute>"


class ArrayIndexPath(ObjectPath):
    """An array element step (``[3]``)."""

    __slots__ = ("index",)

    def _last_equal(self, other) -> bool:
        return self.index == other.index

    def _last_text(self) -> str:
        return f"[{self.index}]"


class MissingArrayElementPath(ObjectPath):
    """An array element this side lacks (``[<missing element #3>]``)."""

    __slots__ = ("index",)

    def _last_equal(self, other) -> bool:
        return self.index == other.index

    def _last_text(self) -> str:
        return f"[<missing element #{self.index}>]"


class MapValuePath(ObjectPath):
    """A map value step (``[key]``); keys compare by identity, or by value for strings and
    numbers (TVM's ObjectEqual)."""

    __slots__ = ("key",)

    def _last_equal(self, other) -> bool:
        a, b = self.key, other.key
        if a is b:
            return True
        if isinstance(a, str | int | float) and isinstance(b, str | int | float):
            return type(a) is type(b) and a == b
        return False

    def _last_text(self) -> str:
        key = self.key
        return f'["{key}"]' if isinstance(key, str) else f"[{key}]"


class MissingMapEntryPath(ObjectPath):
    """A map entry this side lacks (``[<missing entry>]``)."""

    __slots__ = ()

    def _last_equal(self, other) -> bool:
        return True

    def _last_text(self) -> str:
        return "[<missing entry>]"


class ObjectPathPair(Object):
    """Two paths that go together: where the first mismatch is in the left-hand and in the
    right-hand object of a structural comparison (``lhs_path``, ``rhs_path``)."""

    __slots__ = ("lhs_path", "rhs_path", "reason")

    def __init__(self, lhs_path: ObjectPath, rhs_path: ObjectPath, reason: str = ""):
        for side, p in (("lhs_path", lhs_path), ("rhs_path", rhs_path)):
            if not isinstance(p, ObjectPath):
                raise TypeError(f"ObjectPathPair: {side} must be an ObjectPath, got "
                                f"{type(p).__name__}")
        self.lhs_path = lhs_path
        self.rhs_path = rhs_path
        self.reason = reason

    def __repr__(self) -> str:
        return f"ObjectPathPair({self.lhs_path}, {self.rhs_path})"
