"""Typed attribute objects for operator calls (``Conv2DAttrs``) and function attributes (DictAttrs).

An ``Attrs`` subclass declares its fields with defaults in ``_fields`` (declaration order matters:
the printer shows non-default fields in that order). Values are plain Python: ints, floats, strings,
tuples of ints, None.
"""

from __future__ import annotations

from .node import Node
from .prim_expr import FloatImm, IntImm

_ATTRS_TYPES: dict[str, type] = {}


# values kept as they are: checked by exact type first, the common case of every op constructor
_PLAIN = frozenset({int, float, str, bool, type(None)})


def _freeze(value):
    """Lists become tuples so attrs are hashable values; tir IntImm becomes int."""
    t = type(value)
    if t in _PLAIN:
        return value
    if t is tuple or t is list:
        for v in value:
            if type(v) not in _PLAIN:
                return tuple(_freeze(v) for v in value)
        return tuple(value)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, IntImm):
        return int(value.value)
    if isinstance(value, FloatImm):
        return float(value.value)
    return value


class Attrs(Node):
    """Base of operator attribute classes; fields read as attributes or by ``attrs["name"]``."""

    __slots__ = ("_values",)
    _node_compare = "value"

    def _node_value(self):
        return self._values
    _fields: tuple[tuple[str, object], ...] = ()
    type_key = "Attrs"

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "type_key" not in cls.__dict__:
            cls.type_key = "relay.attrs." + cls.__name__
        _ATTRS_TYPES[cls.type_key] = cls
        _ATTRS_TYPES[cls.__name__] = cls

    def __init__(self, **kwargs):
        values = {}
        given = 0
        for name, default in self._fields:
            if name in kwargs:
                values[name] = _freeze(kwargs[name])
                given += 1
            else:
                values[name] = default
        if given != len(kwargs):
            names = {n for n, _ in self._fields}
            unknown = [k for k in kwargs if k not in names]
            raise AttributeError(
                f"{type(self).__name__} has no field {unknown[0]!r}; fields are {sorted(names)}"
            )
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name):
        try:
            return object.__getattribute__(self, "_values")[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __getitem__(self, name):
        return self._values[name]

    def __contains__(self, name):
        return name in self._values

    def keys(self):
        return list(self._values.keys())

    def items(self):
        return list(self._values.items())

    def list_field_info(self):
        return list(self._fields)

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def get(self, name, default=None):
        return self._values.get(name, default)

    def get_int_tuple(self, name):
        return tuple(int(x) for x in self._values[name])

    def get_int(self, name):
        return int(self._values[name])

    def get_str(self, name):
        return str(self._values[name])

    def with_fields(self, **changes):
        if all(self._values.get(k) == _freeze(v) for k, v in changes.items()):
            return self
        vals = dict(self._values)
        vals.update(changes)
        return type(self)(**vals)

    def non_default_items(self):
        """(name, value) pairs that differ from the declared default, in declaration order."""
        out = []
        for name, default in self._fields:
            v = self._values[name]
            if v != default:
                out.append((name, v))
        return out

    def _key(self):
        return (type(self).__name__, tuple(self._values.items()))

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self.non_default_items())
        return f"{type(self).__name__}({body})"


class DictAttrs(Node):
    """A string-keyed map of attributes (function attrs: Primitive, Compiler, Composite, ...)."""

    __slots__ = ("_dict",)
    _node_compare = "value"

    def _node_value(self):
        return self._dict
    type_key = "DictAttrs"

    def __init__(self, values=None):
        self._dict = dict(values or {})

    def __getitem__(self, k):
        return self._dict[k]

    def __contains__(self, k):
        return k in self._dict

    def __iter__(self):
        return iter(self._dict)

    def __len__(self):
        return len(self._dict)

    def __bool__(self):
        return bool(self._dict)

    def __getattr__(self, name):
        d = object.__getattribute__(self, "_dict")
        if name in d:
            return d[name]
        raise AttributeError(name)

    def get(self, k, default=None):
        return self._dict.get(k, default)

    def keys(self):
        return self._dict.keys()

    def items(self):
        return self._dict.items()

    def values(self):
        return self._dict.values()

    def __repr__(self):
        return f"DictAttrs({self._dict!r})"


def nonzero_attr(value) -> bool:
    """Whether a function attribute's ``value`` is set and not 0 (TVM's HasNonzeroAttr, which
    both dialects' function passes ask of ``SkipOptimization``): None is unset, an ``IntImm``
    counts by its value, and a value ``bool`` cannot judge counts as set."""
    if value is None:
        return False
    value = getattr(value, "value", value)
    try:
        return bool(value)
    except Exception:
        return True


def get_attrs_type(name: str) -> type:
    try:
        return _ATTRS_TYPES[name]
    except KeyError:
        raise ValueError(f"unknown attrs type {name!r}") from None


def make_node(type_key: str, **kwargs):
    """Build an attrs node by its type key (``tvm.ir.make_node("relay.attrs.Conv2DAttrs", ...)``)."""
    if type_key in ("DictAttrs", "ir.DictAttrs"):
        return DictAttrs(kwargs)
    return get_attrs_type(type_key)(**kwargs)


def make_attrs_class(name: str, fields: list[tuple[str, object]], type_key: str | None = None) -> type:
    """Declare an Attrs subclass from a field list (used by op families)."""
    ns = {"__slots__": (), "_fields": tuple(fields)}
    if type_key:
        ns["type_key"] = type_key
    return type(name, (Attrs,), ns)
