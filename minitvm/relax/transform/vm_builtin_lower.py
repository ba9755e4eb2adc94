"""VMBuiltinLower (TVM's ``relax.transform.VMBuiltinLower`` / ``LowerRuntimeBuiltin``): the
memory and runtime ops become what the VM executes —

- ``R.memory.alloc_storage`` / ``alloc_tensor`` -> ``R.vm.alloc_storage`` / ``R.vm.alloc_tensor``
- ``R.memory.kill_storage`` / ``kill_tensor`` -> ``R.vm.kill_object``
- ``R.builtin.alloc_tensor`` -> ``R.call_builtin_with_ctx("vm.builtin.alloc_tensor", ...)``
- ``R.reshape`` / ``R.shape_of`` / ``R.null_value`` -> ``R.call_packed("vm.builtin.reshape" |
  "vm.builtin.shape_of" | "vm.builtin.null_value", ...)``
- ``R.invoke_closure`` -> ``vm.builtin.invoke_closure`` with the VM as context (a direct call
  when the closure is a global function, as LambdaLift leaves one without captures)
  (``R.make_closure`` names a global function, which only the code generator can refer to:
  it stays, and becomes a ``vm.builtin.make_closure`` call there)
- ``R.to_vdevice(x, dst_vdevice)`` -> ``R.call_packed("vm.builtin.to_device", x, device_type,
  device_id)``
- ``R.call_pure_packed(f, args)`` / ``R.call_inplace_packed`` -> ``R.call_packed(f, args)`` (the
  in-place function returns the arguments it wrote)
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.prim_expr import IntImm
from ..expr import Call, ExternFunc, Function, PrimValue, Tuple, VarBinding
from ..op import vm
from ..struct_info import ObjectStructInfo
from .lower_utils import function_rewrite_pass, normalized, rewrite_function_seqs
from .utils import register

__all__ = ["VMBuiltinLower", "vm_builtin_lower"]


def _packed(name: str, args, sinfo) -> Call:
    c = Call(ExternFunc(name), list(args), None, [sinfo])
    c._checked_type = sinfo
    return c


_LOWERED = frozenset({
    "relax.memory.alloc_storage", "relax.memory.alloc_tensor", "relax.memory.kill_storage",
    "relax.memory.kill_tensor", "relax.builtin.alloc_tensor", "relax.reshape",
    "relax.shape_of", "relax.to_vdevice", "relax.null_value", "relax.invoke_closure",
    "relax.invoke_pure_closure", "relax.call_pure_packed", "relax.call_inplace_packed",
})  # the operators ``_lower_call`` rewrites (one set lookup for every other call)


def _lower_call(v: Call, mod):
    """The VM form of ``v``, or None when it stays as it is."""
    if not isinstance(v.op, Op):
        return None
    name = v.op.name
    if name not in _LOWERED:
        return None
    a = v.args
    s = v._checked_type
    if name == "relax.memory.alloc_storage":
        return vm.alloc_storage(a[0], a[1], a[3], a[2])
    if name == "relax.memory.alloc_tensor":
        return vm.alloc_tensor(a[0], a[1], a[2], a[3])
    if name in ("relax.memory.kill_storage", "relax.memory.kill_tensor"):
        return vm.kill_object(a[0])
    if name == "relax.builtin.alloc_tensor":
        return vm.call_builtin_with_ctx("vm.builtin.alloc_tensor", Tuple(list(a[:3])), s)
    if name == "relax.reshape":
        return _packed("vm.builtin.reshape", a, s)
    if name == "relax.shape_of":
        return _packed("vm.builtin.shape_of", a, s)
    if name == "relax.to_vdevice":  # TVM's LowerRuntimeBuiltin: vm.builtin.to_device
        dev = v.attrs.dst_vdevice
        kind = getattr(getattr(dev.target, "kind", None), "device_type", 1)
        return _packed("vm.builtin.to_device",
                       (a[0], PrimValue(IntImm("int32", kind)),
                        PrimValue(IntImm("int32", dev.vdevice_id))), s)
    if name == "relax.null_value":
        return _packed("vm.builtin.null_value", (), ObjectStructInfo())
    if name in ("relax.invoke_closure", "relax.invoke_pure_closure"):
        if isinstance(a[0], GlobalVar):  # a lifted function without captures: call it
            c = Call(a[0], list(a[1].fields), None, None, v.span)
            c._checked_type = s
            return c
        return vm.call_builtin_with_ctx("vm.builtin.invoke_closure",
                                        Tuple([a[0], *a[1].fields]), s)
    if name in ("relax.call_pure_packed", "relax.call_inplace_packed"):
        attrs = v.attrs if name == "relax.call_pure_packed" else None
        c = Call(a[0], list(a[1:]), attrs, list(v.sinfo_args))
        c._checked_type = s
        return c
    return None


_SAME_SINFO = frozenset({"relax.vm.alloc_tensor", "relax.vm.kill_object"})


def vm_builtin_lower(func: Function, mod=None) -> tuple[Function, int]:
    """``func`` with runtime builtins lowered; and the count.

    The struct info of a lowered ``R.vm.alloc_tensor`` depends only on its shape and dtype
    nodes, and a ``R.vm.kill_object``'s is always the empty tuple: each is inferred once per
    (shape, dtype) pair or once, and shared by the calls after it, where the normalizer made a
    new one for each of a 100,000-allocation function's calls."""
    count = 0
    known: dict = {}  # (op name, id(shape), id(dtype)) -> struct info the rule gave

    def rewrite(bindings, body, _top):
        nonlocal count
        out = []
        for b in bindings:
            v = b.value
            new = _lower_call(v, mod) if isinstance(b, VarBinding) and isinstance(v, Call) \
                else None
            if new is None:
                out.append(b)
                continue
            op = new.op
            if type(new) is Call and isinstance(op, Op) and op.name in _SAME_SINFO:
                a = new.args
                key = (op.name, id(a[2]), id(a[3])) if len(a) == 4 else (op.name, len(a))
                sinfo = known.get(key)
                if sinfo is None:
                    sinfo = known[key] = normalized(new, mod)._checked_type
                else:
                    new._checked_type = sinfo
            else:
                new = normalized(new, mod)
            out.append(VarBinding(b.var, new, b.span))
            count += 1
        return out, body

    new = rewrite_function_seqs(func, rewrite)
    return (new if count else func), count


@register("VMBuiltinLower")
def VMBuiltinLower():  # noqa: N802 - TVM's name
    """Module pass (opt 0): memory and runtime ops to VM builtins."""
    return function_rewrite_pass(vm_builtin_lower, "VMBuiltinLower", "builtins lowered")


LowerRuntimeBuiltin = VMBuiltinLower  # TVM's later name
