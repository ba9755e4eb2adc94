"""Legalization of the reductions: sum, max, min, prod (one ``<x>_red`` stage), mean
(sum then ``T_divide``), variance and std."""

from __future__ import annotations

from ....tir import op as tir_op
from ....topi import math as topi_math
from ....topi import reduction as topi_red
from .common import call_topi, register_legalize

__all__: list[str] = []


def _axes(call):
    axis = call.attrs.axis
    return None if axis is None else [int(a) for a in axis]


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


def _make(name: str, fn):
    def legalize(bb, call):
        axes, keep = _axes(call), bool(call.attrs.keepdims)
        return call_topi(bb, lambda x: fn(x, axes, keep), call.args[0], name=name)

    legalize.__name__ = f"legalize_{name}"
    return legalize


def _std(x, axes, keep):
    return topi_math.elemwise(topi_red.variance(x, axes, keep), tir_op.sqrt)


for _name, _fn in (("sum", topi_red.sum), ("max", topi_red.max), ("min", topi_red.min),
                   ("prod", topi_red.prod), ("mean", topi_red.mean),
                   ("variance", topi_red.variance), ("std", _std)):
    register_legalize("relax." + _name, _make(_name, _fn))
