"""Ops with data-dependent result shapes: ``nonzero`` (indices of the non-zero elements) and
``unique`` (sorted distinct values, with optional first indices, inverse and counts). Their
struct info has a known rank and an unknown shape; LegalizeOps lowers them to the runtime's
packed functions, as TVM does, so they need no argument shapes to lower."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import IntImm
from ..expr import Call, Expr, PrimValue
from ..struct_info import PrimStructInfo, StructInfo, TupleStructInfo
from ._common import (
    UNKNOWN_NDIM,
    arg_sinfo,
    check_num_args,
    fail,
    fmt_sinfo,
    make_tensor,
    normalize_axis,
    tensor_arg,
    tensor_args,
)
from .base import register_op_rule

__all__ = ["nonzero", "unique"]


def _infer_nonzero(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    if x.ndim == 0:
        fail(call, f"expects a tensor of rank at least 1, got {fmt_sinfo(x)}")
    return make_tensor(None, "int64", 2, x.vdevice)


register_op_rule("relax.nonzero", _infer_nonzero, pattern=OpPattern.OPAQUE, num_inputs=1,
                 arguments=("x",))
Op.get("relax.nonzero").set_attr("RequiresArgumentShapes", False)


def nonzero(x: Expr) -> Call:
    """The indices of the non-zero elements of ``x``: an int64 tensor ``(ndim, count)``."""
    return Call(Op.get("relax.nonzero"), [x])


def _flag(call: Call, i: int, what: str) -> bool | None:
    s = arg_sinfo(call, i)
    if not isinstance(s, PrimStructInfo):
        fail(call, f"expects {what} to be an R.Prim value, got {fmt_sinfo(s)}", type_error=True)
    v = call.args[i].value if isinstance(call.args[i], PrimValue) else s.value
    if v is None:
        fail(call, f"expects {what} to be a known constant")
    return bool(v.value) if isinstance(v, IntImm) else None


def _infer_unique(call: Call, ctx) -> StructInfo:
    check_num_args(call, 6)
    x = tensor_arg(call, 0, "x")
    _flag(call, 1, "sorted")
    flags = [_flag(call, k, w) for k, w in ((2, "return_index"), (3, "return_inverse"),
                                            (4, "return_counts"))]
    axis_arg = call.args[5]
    s = arg_sinfo(call, 5)
    if isinstance(s, PrimStructInfo):
        if x.ndim != UNKNOWN_NDIM:
            v = axis_arg.value if isinstance(axis_arg, PrimValue) else s.value
            if not isinstance(v, IntImm):
                fail(call, "expects the axis to be a known integer")
            normalize_axis(call, x.ndim, int(v.value))
        values = make_tensor(None, x.dtype, x.ndim, x.vdevice)
    else:
        values = make_tensor(None, x.dtype, 1, x.vdevice)
    extras = [make_tensor(None, "int64", 1, x.vdevice) for f in flags if f]
    return TupleStructInfo([values, *extras]) if extras else values


register_op_rule("relax.unique", _infer_unique, pattern=OpPattern.OPAQUE, num_inputs=6,
                 arguments=("x", "sorted", "return_index", "return_inverse", "return_counts",
                            "axis"))
Op.get("relax.unique").set_attr("RequiresArgumentShapes", False)


def unique(x: Expr, sorted: bool = True, return_index: bool = False,  # noqa: A002
           return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None) -> Call:
    """The distinct values of ``x`` (of its slices along ``axis``), sorted; with the index of
    each one's first occurrence, the inverse mapping and the counts when asked (a tuple)."""
    from ..expr import Tuple

    def b(v):
        return v if isinstance(v, Expr) else PrimValue(IntImm("bool", int(bool(v))))

    ax = axis if isinstance(axis, Expr) else (Tuple([]) if axis is None else
                                              PrimValue(IntImm("int64", int(axis))))
    return Call(Op.get("relax.unique"), [x, b(sorted), b(return_index), b(return_inverse),
                                         b(return_counts), ax])
