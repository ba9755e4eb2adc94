"""``relay.op.memory``: explicit memory ops (``memory.alloc_storage``, ``memory.alloc_tensor``,
``memory.kill``) as TVM's memory planning writes them, and the tuple-type helpers
``flatten_tuple_type`` / ``from_tuple_type`` / ``to_tuple_type``.

A storage is a block of bytes typed ``Storage[]`` (a call of the global type ``Storage``); at
run time it is a byte array (references: ``minitvm.topi.reference.memory``), and ``alloc_tensor`` views ``shape`` x ``dtype`` at ``offset``
bytes into it. ``kill`` ends a tensor's life and returns ``()``."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import GlobalTypeVar, TensorType, TupleType, TypeCall
from ...tir.expr import Any
from ..expr import Call, Constant, Expr, Tuple, TupleGetItem, const
from .op import define_op
from .type_relations import check_num_args, tensor_arg, type_str

__all__ = ["alloc_storage", "alloc_tensor", "kill", "flatten_tuple_type", "from_tuple_type",
           "to_tuple_type", "AllocStorageAttrs", "AllocTensorAttrs", "storage_type"]

_STORAGE = GlobalTypeVar("Storage")


def storage_type() -> TypeCall:
    """The type of a storage value: ``Storage[]``."""
    return TypeCall(_STORAGE, [])


class AllocStorageAttrs(Attrs):
    """Attributes of ``memory.alloc_storage``: dtype hint, alignment and device."""

    __slots__ = ()
    type_key = "relay.attrs.AllocStorageAttrs"
    _fields = (("dtype", "float32"), ("alignment", 64), ("virtual_device", None))


class AllocTensorAttrs(Attrs):
    """Attributes of ``memory.alloc_tensor``: dtype, constant shape and asserted shape."""

    __slots__ = ()
    type_key = "relay.attrs.AllocTensorAttrs"
    _fields = (("dtype", "float32"), ("const_shape", None), ("assert_shape", None))


def _int_scalar(arg_types, i: int, op_name: str, what: str) -> None:
    t = tensor_arg(arg_types, i, op_name)
    if t.shape != () or not t.dtype.startswith(("int", "uint")):
        raise TypeError(f"{op_name}: {what} must be an integer scalar, got {type_str(t)}")


def _alloc_storage_rel(arg_types, attrs):
    check_num_args("memory.alloc_storage", arg_types, 2)
    _int_scalar(arg_types, 0, "memory.alloc_storage", "size")
    _int_scalar(arg_types, 1, "memory.alloc_storage", "alignment")
    return storage_type()


def _alloc_tensor_rel(arg_types, attrs):
    check_num_args("memory.alloc_tensor", arg_types, 3)
    st = arg_types[0]
    if not (isinstance(st, TypeCall) and getattr(st.func, "name_hint", None) == "Storage"):
        raise TypeError(f"memory.alloc_tensor: the first argument must be a Storage, got "
                        f"{type_str(st)}")
    _int_scalar(arg_types, 1, "memory.alloc_tensor", "offset")
    shape_t = tensor_arg(arg_types, 2, "memory.alloc_tensor")
    if len(shape_t.shape) != 1:
        raise TypeError(f"memory.alloc_tensor: the shape must be a 1-d tensor, got "
                        f"{type_str(shape_t)}")
    if attrs.assert_shape is not None:
        return TensorType(tuple(attrs.assert_shape), attrs.dtype)
    if attrs.const_shape is not None:
        return TensorType(tuple(attrs.const_shape), attrs.dtype)
    rank = shape_t.shape[0]
    if not isinstance(rank, int):
        raise TypeError("memory.alloc_tensor: the rank of a dynamic shape must be known")
    return TensorType(tuple(Any() for _ in range(rank)), attrs.dtype)


def _kill_rel(arg_types, attrs):
    check_num_args("memory.kill", arg_types, 1)
    return TupleType([])


define_op("memory.alloc_storage", _alloc_storage_rel, pattern=OpPattern.OPAQUE,
          attrs_type=AllocStorageAttrs, num_inputs=2,
          describe="Allocate a block of storage.", stateful=True)
define_op("memory.alloc_tensor", _alloc_tensor_rel, pattern=OpPattern.OPAQUE,
          attrs_type=AllocTensorAttrs, num_inputs=3,
          describe="Allocate a tensor inside a storage.", stateful=True)
define_op("memory.kill", _kill_rel, pattern=OpPattern.OPAQUE, num_inputs=1,
          describe="End the lifetime of a tensor or storage.", stateful=True)


def _as_expr(x, dtype: str = "int64") -> Expr:
    return x if isinstance(x, Expr) else const(np.asarray(x, dtype=dtype), dtype=dtype)


def alloc_storage(size, alignment, device=None, dtype_hint: str = "float32") -> Call:
    """Allocate ``size`` bytes aligned to ``alignment`` on ``device``."""
    attrs = AllocStorageAttrs(dtype=dtype_hint, alignment=_const_int(alignment, 64),
                              virtual_device=device)
    return Call(Op.get("memory.alloc_storage"), [_as_expr(size), _as_expr(alignment)], attrs)


def _const_int(x, default: int) -> int:
    if isinstance(x, Constant):
        return int(x.data.numpy())
    if isinstance(x, int | np.integer):
        return int(x)
    return default


def alloc_tensor(storage: Expr, offset, shape, dtype: str = "float32",
                 assert_shape=None) -> Call:
    """Allocate a ``shape`` x ``dtype`` tensor at byte ``offset`` of ``storage``."""
    const_shape = None
    if isinstance(shape, list | tuple):
        const_shape = tuple(int(d) for d in shape)
        shape = const(np.asarray(const_shape, dtype="int64"), dtype="int64")
    elif isinstance(shape, Constant):
        const_shape = tuple(int(d) for d in shape.data.numpy().reshape(-1))
    attrs = AllocTensorAttrs(dtype=dtype, const_shape=const_shape,
                             assert_shape=None if assert_shape is None else
                             tuple(int(d) for d in assert_shape))
    return Call(Op.get("memory.alloc_tensor"), [storage, _as_expr(offset), shape], attrs)


def kill(tensor: Expr) -> Call:
    """End the lifetime of ``tensor`` (its storage may be reused afterwards)."""
    return Call(Op.get("memory.kill"), [tensor])


def flatten_tuple_type(ty) -> list:
    """The tensor types of a (nested) tuple type, in order."""
    out, stack = [], [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(reversed(t.fields))
        else:
            out.append(t)
    return out


def from_tuple_type(ty, expr: Expr) -> list[Expr]:
    """The leaf fields of ``expr`` (of the nested tuple type ``ty``), in order, as projections."""
    out, stack = [], [(ty, expr)]
    while stack:
        t, e = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(reversed([(f, TupleGetItem(e, i)) for i, f in enumerate(t.fields)]))
        else:
            out.append(e)
    return out


def to_tuple_type(ty, exprs) -> Expr:
    """Pack the leaf expressions ``exprs`` back into the nesting of tuple type ``ty``."""
    exprs = list(exprs)
    pos = 0
    # post-order over the type: leaves take the next expression, tuples collect their fields
    stack: list = [(ty, False)]
    built: list = []
    while stack:
        t, expanded = stack.pop()
        if not isinstance(t, TupleType):
            if pos >= len(exprs):
                raise ValueError(f"to_tuple_type: {len(exprs)} expressions for a type with more "
                                 "leaves")
            built.append(exprs[pos])
            pos += 1
        elif expanded:
            n = len(t.fields)
            fields = built[len(built) - n:] if n else []
            del built[len(built) - n:]
            built.append(Tuple(fields))
        else:
            stack.append((t, True))
            stack.extend((f, False) for f in reversed(t.fields))
    if pos != len(exprs):
        raise ValueError(f"to_tuple_type: {len(exprs)} expressions for a type with {pos} leaves")
    return built[0]
