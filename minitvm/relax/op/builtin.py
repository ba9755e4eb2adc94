"""``R.builtin.alloc_tensor`` (TVM's ``relax.op.builtin``): the allocation CallTIRRewrite emits
for the outputs of a destination-passing call, before memory planning."""

from __future__ import annotations

from ...ir.op import Op
from ..expr import Call
from ..struct_info import StructInfo
from .base import register_op_rule
from .memory import _dtype, _fail, _prim, _shape, _str, tensor_sinfo_from

__all__ = ["alloc_tensor"]


def alloc_tensor(shape, dtype, runtime_device_index=0, storage_scope="global") -> Call:
    """``R.builtin.alloc_tensor``: a fresh tensor of ``shape`` and ``dtype``."""
    return Call(Op.get("relax.builtin.alloc_tensor"),
                [_shape(shape), _dtype(dtype), _prim(runtime_device_index), _str(storage_scope)])


def _infer_builtin_alloc_tensor(call: Call, ctx) -> StructInfo:
    if len(call.args) not in (3, 4):
        _fail(call, f"expects 3 or 4 arguments (shape, dtype, device index[, scope]), got "
                    f"{len(call.args)}")
    return tensor_sinfo_from(call, call.args[0], call.args[1])


register_op_rule("relax.builtin.alloc_tensor", _infer_builtin_alloc_tensor,
                 arguments=("shape", "dtype", "runtime_device_index", "storage_scope"),
                 description="allocate a tensor")
