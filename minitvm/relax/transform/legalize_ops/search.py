"""Legalization of where, argmax and argmin."""

from __future__ import annotations

from ....topi import manipulation as topi_manip
from ....topi import reduction as topi_red
from .common import call_topi, out_shape, register_legalize

__all__: list[str] = []


def checked_nonempty(bb, call, axes, result):
    """``result`` (the legalized ``call``), through ``vm.builtin.check_nonempty`` when a
    reduced axis (``axes``; None: all) of the argument has a symbolic size: argmax / argmin
    have no index to give, so over an axis empty at run time the VM raises (as numpy) instead
    of returning the kernel's -1. (max / min give their identity, -inf / +inf, as TVM's kernels
    and ONNX's ReduceMax / ReduceMin do: no check.) The check reads the argument's shape
    from its struct info (a shape value, not the tensor), after the kernel: the argument's
    producer still fuses with the reduction. Static sizes need no check (0 is refused when
    typed)."""
    from ....ir.prim_expr import IntImm
    from ...expr import PrimValue, ShapeExpr, StringImm
    from ...op.base import call_pure_packed
    from .common import arg_shape

    shape = arg_shape(call, 0)
    picked = range(len(shape)) if axes is None else [a % max(len(shape), 1) for a in axes]
    dynamic = [a for a in picked if not isinstance(shape[a], IntImm | int)]
    if not dynamic:
        return result
    name = call.op.name[len("relax."):]
    value = bb.emit(result)
    return call_pure_packed(CHECK_NONEMPTY, value, ShapeExpr(list(shape)), StringImm(name),
                            *[PrimValue(IntImm("int64", a)) for a in dynamic],
                            sinfo_args=value.struct_info)


#: the VM builtin that raises where a reduced axis is empty (``runtime.relax_vm.builtins``)
CHECK_NONEMPTY = "vm.builtin.check_nonempty"


@register_legalize("relax.where")
def _where(bb, call):
    shape = out_shape(call)
    return call_topi(bb, lambda c, a, b: topi_manip.where(c, a, b, shape), *call.args,
                     name="where")


def _arg(kind: str):
    fn = topi_red.argmax if kind == "max" else topi_red.argmin

    def legalize(bb, call):
        axis, keep = call.attrs.axis, bool(call.attrs.keepdims)
        axis = None if axis is None else int(axis)
        res = call_topi(bb, lambda x: fn(x, axis, keep), call.args[0], name=f"arg{kind}")
        return checked_nonempty(bb, call, None if axis is None else [axis], res)

    return legalize


register_legalize("relax.argmax", _arg("max"))
register_legalize("relax.argmin", _arg("min"))
