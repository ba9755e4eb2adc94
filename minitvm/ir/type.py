"""Relay types: tensors (static and symbolic dims), tuples, functions, type variables, ADTs.

Types are small values: ``==`` and ``hash`` are structural, as ``tvm.ir.Type.__eq__`` is.
"""

from __future__ import annotations

import re
from enum import IntEnum

from ..runtime.script_printer import Scriptable
from .dialect import find_hook
from .node import Node
from .prim_expr import Any, IntImm, PrimExpr


class Type(Node, Scriptable):
    __slots__ = ("span",)

    def _key(self):
        raise NotImplementedError

    def __eq__(self, other):
        if self is other:
            return True
        if type(self) is not type(other):
            return False
        return self._key() == other._key()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((type(self).__name__, self._key()))

    def __str__(self):
        printer = find_hook("str", type(self))
        return printer(self) if printer is not None else f"{type(self).__name__}(...)"

    __repr__ = __str__

    def same_as(self, other) -> bool:
        return self is other


def _dim_key(d):
    if isinstance(d, int):
        return d
    if isinstance(d, IntImm):
        return d.value
    return d  # Any / Var: identity


def normalize_dim(d):
    """Dims are Python ints when static, tir.Any or tir.Var when not."""
    if isinstance(d, bool):
        raise TypeError("a tensor dimension cannot be a bool")
    if isinstance(d, IntImm):
        d = d.value
    elif isinstance(d, PrimExpr):
        return d
    elif not isinstance(d, int) and hasattr(d, "__index__"):
        d = int(d)
    if isinstance(d, int):
        if d < 0:
            raise ValueError(f"invalid tensor dimension {d}: static dimensions must be >= 0 "
                             "(use relay.Any() for an unknown one)")
        return d
    raise TypeError(f"invalid tensor dimension {d!r}: expected an int, relay.Any() or a tir.Var")


_DTYPE_RE = re.compile(r"(bool|handle|void|int|uint|float|bfloat|custom\[\w+\])(\d*)(x\d+)?")
_DTYPE_BITS = {"int": (1, 4, 8, 16, 32, 64), "uint": (1, 4, 8, 16, 32, 64),
               "float": (8, 16, 32, 64), "bfloat": (16,)}
_KNOWN_DTYPES: dict = {}


def check_dtype(dtype) -> str:
    """``dtype`` as a str when it names a TVM data type (int8, float32x4, bool, ...), else raise.

    A bare ``int``/``uint``/``float`` means 32 bits, as TVM's dtype parser reads it.
    """
    known = _KNOWN_DTYPES.get(dtype)
    if known is not None:
        return known
    name = str(dtype)
    m = _DTYPE_RE.fullmatch(name)
    ok = m is not None
    if ok:
        kind, bits, lanes = m.group(1), m.group(2), m.group(3) or ""
        if kind in _DTYPE_BITS:
            bits = bits or ("32" if kind != "bfloat" else "")
            ok = bits.isdigit() and int(bits) in _DTYPE_BITS[kind]
            # TVM's bool is uint1: the two names are one data type, printed "bool"
            name = ("bool" if kind + bits == "uint1" else kind + bits) + lanes
        else:
            ok = not bits or kind.startswith("custom")
    if not ok:
        raise ValueError(f"unknown data type {str(dtype)!r}: expected e.g. float32, int64, uint8, "
                         f"bool")
    _KNOWN_DTYPES[dtype] = name
    return name


class TensorType(Type):
    """``Tensor[(d0, d1), dtype]``: shape entries are ints, ``Any()`` or symbolic vars."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype: str = "float32", span=None):
        self.shape = tuple(normalize_dim(d) for d in shape)
        self.dtype = check_dtype(dtype)
        self.span = span

    def _key(self):
        return (tuple(_dim_key(d) for d in self.shape), self.dtype)

    @property
    def concrete_shape(self) -> tuple:
        return tuple(int(d) for d in self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)


class TupleType(Type):
    __slots__ = ("fields",)

    def __init__(self, fields, span=None):
        self.fields = tuple(fields)
        self.span = span

    def _key(self):
        return self.fields


class TypeKind(IntEnum):
    Type = 0
    ShapeVar = 1
    BaseType = 2
    Constraint = 4
    AdtHandle = 5
    TypeData = 6


class TypeVar(Type):
    """A type parameter; equality is identity (alpha-equivalence is structural_equal's job)."""

    __slots__ = ("name_hint", "kind")
    _node_compare = "var"
    _node_fields = ("kind",)

    def __init__(self, name_hint: str, kind: TypeKind = TypeKind.Type, span=None):
        self.name_hint = name_hint
        self.kind = kind
        self.span = span

    def _key(self):
        return id(self)


class GlobalTypeVar(TypeVar):
    """The name of an ADT definition in a module (``List``)."""

    __slots__ = ()
    _node_compare = "name"

    def __init__(self, name_hint: str, kind: TypeKind = TypeKind.AdtHandle, span=None):
        super().__init__(name_hint, kind, span)

    def __call__(self, *args: Type) -> TypeCall:
        """The ADT applied to type arguments (TVM code writes ``nat()``, ``List(t)``)."""
        return TypeCall(self, list(args))


class IncompleteType(Type):
    """A type still to be inferred; identity is the unknown."""

    __slots__ = ("kind",)

    def __init__(self, kind: TypeKind = TypeKind.Type, span=None):
        self.kind = kind
        self.span = span

    def _key(self):
        return id(self)


class FuncType(Type):
    __slots__ = ("arg_types", "ret_type", "type_params", "type_constraints")
    # the type parameters bind their uses (fn [T](T) -> T equals fn [U](U) -> U)
    _node_fields = ("type_params", "arg_types", "ret_type", "type_constraints")
    _node_binders = frozenset({"type_params"})

    def __init__(self, arg_types, ret_type, type_params=None, type_constraints=None, span=None):
        self.arg_types = tuple(arg_types)
        self.ret_type = ret_type
        self.type_params = tuple(type_params or ())
        self.type_constraints = tuple(type_constraints or ())
        self.span = span

    def _key(self):
        return (self.arg_types, self.ret_type, self.type_params)

    def __eq__(self, other):
        """Alpha-equivalence over ``type_params`` (TVM's ``Type.__eq__`` is structural_equal):
        ``fn [A](List[A])`` equals ``fn [B](List[B])``; free type vars still compare by identity."""
        if self is other:
            return True
        if type(other) is not FuncType:
            return False
        if not self.type_params and not other.type_params:
            return self._key() == other._key()
        if len(self.type_params) != len(other.type_params):
            return False
        from .structural import structural_equal

        return structural_equal(self, other)

    def __hash__(self):
        if self.type_params:  # must not depend on which type vars are bound (see __eq__)
            return hash(("FuncType", len(self.type_params), len(self.arg_types)))
        return hash(("FuncType", self._key()))


class RelayRefType(Type):
    """``ref(T)``: the type of a mutable reference."""

    __slots__ = ("value",)

    def __init__(self, value, span=None):
        self.value = value
        self.span = span

    def _key(self):
        return (self.value,)


RefType = RelayRefType


class TypeCall(Type):
    """An ADT applied to arguments: ``List[int32]``."""

    __slots__ = ("func", "args")

    def __init__(self, func, args, span=None):
        self.func = func
        self.args = tuple(args)
        self.span = span

    def _key(self):
        return (self.func, self.args)


class TypeConstraint(Type):
    __slots__ = ()


class TypeRelation(TypeConstraint):
    __slots__ = ("func", "args", "num_inputs", "attrs")

    def __init__(self, func, args, num_inputs, attrs):
        self.func = func
        self.args = tuple(args)
        self.num_inputs = num_inputs
        self.attrs = attrs
        self.span = None

    def _key(self):
        return (id(self),)


class PrimType(Type):
    """The type of a scalar PrimExpr value (used by TIR functions)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: str, span=None):
        self.dtype = dtype
        self.span = span

    def _key(self):
        return (self.dtype,)


class PointerType(Type):
    __slots__ = ("element_type", "storage_scope")

    def __init__(self, element_type, storage_scope: str = "", span=None):
        self.element_type = element_type
        self.storage_scope = storage_scope
        self.span = span

    def _key(self):
        return (self.element_type, self.storage_scope)


def is_any(d) -> bool:
    return isinstance(d, Any)
