"""VM-level ops (TVM's ``relax.vm`` and ``relax.call_builtin_with_ctx``): what VMBuiltinLower
leaves for the VM code generator — storage and tensor allocation, dropping a register, calling a
runtime builtin that receives the VM as its first argument."""

from __future__ import annotations

from ...ir.op import Op
from ..expr import Call, ExternFunc, Tuple
from ..struct_info import ObjectStructInfo, StructInfo, TupleStructInfo
from .base import StructInfoError, register_op_rule
from .memory import _dtype, _prim, _shape, _str, tensor_sinfo_from

__all__ = ["alloc_storage", "alloc_tensor", "kill_object", "call_builtin_with_ctx"]


def alloc_storage(size, runtime_device_index=0, dtype="float32", storage_scope="global"):
    """``R.vm.alloc_storage(size, runtime_device_index, dtype, storage_scope)``."""
    return Call(Op.get("relax.vm.alloc_storage"),
                [_shape(size), _prim(runtime_device_index), _dtype(dtype), _str(storage_scope)])


def alloc_tensor(storage, offset, shape, dtype):
    """``R.vm.alloc_tensor(storage, offset, shape, dtype)``."""
    return Call(Op.get("relax.vm.alloc_tensor"),
                [storage, _prim(offset), _shape(shape), _dtype(dtype)])


def kill_object(obj):
    """``R.vm.kill_object(x)``: the register holding ``x`` is cleared."""
    return Call(Op.get("relax.vm.kill_object"), [obj])


def call_builtin_with_ctx(func, args, sinfo_args=None):
    """Call runtime builtin ``func`` with the VM as a hidden first argument."""
    if isinstance(func, str):
        func = ExternFunc(func)
    if not isinstance(args, Tuple):
        args = Tuple(list(args))
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    return Call(Op.get("relax.call_builtin_with_ctx"), [func, args], None, sinfo_args or None)


def _fail(call, msg):
    raise StructInfoError(f"{call.op.name}: {msg}")


def _infer_vm_alloc_storage(call, ctx):
    if len(call.args) != 4:
        _fail(call, f"expects 4 arguments, got {len(call.args)}")
    return ObjectStructInfo()


def _infer_vm_alloc_tensor(call, ctx):
    if len(call.args) != 4:
        _fail(call, f"expects 4 arguments (storage, offset, shape, dtype), got "
                    f"{len(call.args)}")
    return tensor_sinfo_from(call, call.args[2], call.args[3])


def _infer_kill_object(call, ctx):
    if len(call.args) != 1:
        _fail(call, f"expects 1 argument, got {len(call.args)}")
    return TupleStructInfo([])


def _infer_builtin_with_ctx(call, ctx):
    if len(call.args) != 2:
        _fail(call, f"expects 2 arguments (func, args tuple), got {len(call.args)}")
    if not call.sinfo_args:
        return ObjectStructInfo()
    return call.sinfo_args[0] if len(call.sinfo_args) == 1 else TupleStructInfo(call.sinfo_args)


register_op_rule("relax.vm.alloc_storage", _infer_vm_alloc_storage,
                 arguments=("size", "runtime_device_index", "dtype", "storage_scope"))
register_op_rule("relax.vm.alloc_tensor", _infer_vm_alloc_tensor,
                 arguments=("storage", "offset", "shape", "dtype"))
register_op_rule("relax.vm.kill_object", _infer_kill_object, purity=False, num_inputs=1,
                 arguments=("obj",))
register_op_rule("relax.call_builtin_with_ctx", _infer_builtin_with_ctx, purity=False,
                 arguments=("func", "args"))
