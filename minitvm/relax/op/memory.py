"""Memory ops of the lowering pipeline (TVM's ``relax.builtin`` and ``relax.memory``).

``R.builtin.alloc_tensor(shape, dtype, runtime_device_index, storage_scope)`` is what
CallTIRRewrite allocates outputs with; StaticPlanBlockMemory / LowerAllocTensor turn it into
``R.memory.alloc_storage`` (a byte buffer) plus ``R.memory.alloc_tensor`` (a view at an offset);
``R.memory.kill_storage`` / ``kill_tensor`` mark the end of a value's life.
"""

from __future__ import annotations

from ...ir.op import Op
from ..expr import Call, DataTypeImm, Expr, PrimValue, ShapeExpr, StringImm
from ..struct_info import (
    ObjectStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from .base import StructInfoError, register_op_rule

__all__ = ["alloc_storage", "alloc_tensor", "kill_storage", "kill_tensor"]


def _shape(x) -> Expr:
    return x if isinstance(x, Expr) else ShapeExpr(list(x))


def _prim(x) -> Expr:
    return x if isinstance(x, Expr) else PrimValue(int(x))


def _dtype(x) -> Expr:
    return x if isinstance(x, Expr) else DataTypeImm(str(x))


def _str(x) -> Expr:
    return x if isinstance(x, Expr) else StringImm(str(x))


def alloc_storage(size, virtual_device_index=0, storage_scope="global",
                  dtype="float32") -> Call:
    """``R.memory.alloc_storage``: a buffer of ``size`` bytes (a one-dim shape)."""
    return Call(Op.get("relax.memory.alloc_storage"),
                [_shape(size), _prim(virtual_device_index), _str(storage_scope), _dtype(dtype)])


def alloc_tensor(storage, offset, shape, dtype) -> Call:
    """``R.memory.alloc_tensor``: a tensor view of ``storage`` at byte ``offset``."""
    return Call(Op.get("relax.memory.alloc_tensor"),
                [storage, _prim(offset), _shape(shape), _dtype(dtype)])


def kill_storage(storage) -> Call:
    return Call(Op.get("relax.memory.kill_storage"), [storage])


def kill_tensor(tensor) -> Call:
    return Call(Op.get("relax.memory.kill_tensor"), [tensor])


def _fail(call, msg):
    raise StructInfoError(f"{call.op.name}: {msg}")


def tensor_sinfo_from(call, shape: Expr, dtype: Expr) -> StructInfo:
    """The tensor an allocation makes: its shape expression (or rank) and dtype."""
    if not isinstance(dtype, DataTypeImm):
        _fail(call, f"the dtype must be an R.dtype(...) literal, got {type(dtype).__name__}")
    if isinstance(shape, ShapeExpr):
        return TensorStructInfo(shape, dtype.value)
    s = shape.struct_info_
    if not isinstance(s, ShapeStructInfo):
        _fail(call, f"the shape must be a shape value, got {s}")
    if s.values is not None:
        return TensorStructInfo(ShapeExpr(s.values), dtype.value)
    return TensorStructInfo(None, dtype.value, ndim=s.ndim)


def _infer_alloc_storage(call: Call, ctx) -> StructInfo:
    if len(call.args) != 4:
        _fail(call, f"expects 4 arguments, got {len(call.args)}")
    return ObjectStructInfo()


def _infer_memory_alloc_tensor(call: Call, ctx) -> StructInfo:
    if len(call.args) != 4:
        _fail(call, f"expects 4 arguments (storage, offset, shape, dtype), got "
                    f"{len(call.args)}")
    return tensor_sinfo_from(call, call.args[2], call.args[3])


def infer_kill(call: Call, ctx=None) -> StructInfo:
    """The struct info of a kill (an empty tuple), the arity checked."""
    if len(call.args) != 1:
        _fail(call, f"expects 1 argument, got {len(call.args)}")
    return TupleStructInfo([])


register_op_rule("relax.memory.alloc_storage", _infer_alloc_storage,
                 arguments=("size", "virtual_device_index", "storage_scope", "dtype"),
                 description="allocate a storage of a number of bytes")
register_op_rule("relax.memory.alloc_tensor", _infer_memory_alloc_tensor,
                 arguments=("storage", "offset", "shape", "dtype"),
                 description="a tensor in a storage")
register_op_rule("relax.memory.kill_storage", infer_kill, purity=False, num_inputs=1,
                 arguments=("storage",), description="end the life of a storage")
register_op_rule("relax.memory.kill_tensor", infer_kill, purity=False, num_inputs=1,
                 arguments=("tensor",), description="end the life of a tensor")
