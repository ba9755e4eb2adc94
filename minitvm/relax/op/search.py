"""Searching ops: ``argmax``/``argmin`` (int64 indices) and ``where`` (select, broadcast)."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ..expr import Call, Expr
from ..struct_info import StructInfo
from ._common import (
    UNKNOWN_NDIM,
    binary_out_dtype,
    broadcast_shapes,
    fail,
    fmt_sinfo,
    is_void,
    make_tensor,
    shape_expr_values,
    tensor_args,
)
from .base import register_op_rule
from .op_attrs import ArgmaxArgminAttrs
from .statistical import reduce_struct_info

__all__ = ["argmax", "argmin", "where"]


def _infer_arg(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    axis = call.attrs.axis
    return reduce_struct_info(call, x, None if axis is None else [axis], call.attrs.keepdims,
                              "int64")


def _make_arg(name: str):
    op_name = "relax." + name
    register_op_rule(op_name, _infer_arg, pattern=OpPattern.COMM_REDUCE, num_inputs=1,
                     arguments=("x",), attrs_type=ArgmaxArgminAttrs)

    def f(x: Expr, axis: int | None = None, keepdims: bool = False) -> Call:
        return Call(Op.get(op_name), [x],
                    ArgmaxArgminAttrs(axis=None if axis is None else int(axis),
                                      keepdims=bool(keepdims)))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Indices (int64) of the {name[3:]}imum of ``x`` along ``axis`` (flattened " \
                "when None)."
    return f


argmax = _make_arg("argmax")
argmin = _make_arg("argmin")


def _infer_where(call: Call, ctx) -> StructInfo:
    cond, x1, x2 = tensor_args(call, ["condition", "x1", "x2"])
    if not is_void(cond.dtype) and cond.dtype != "bool":
        fail(call, f"requires a boolean condition, got {fmt_sinfo(cond)}")
    dtype = binary_out_dtype(call, x1, x2)
    ndims = (cond.ndim, x1.ndim, x2.ndim)
    ndim = UNKNOWN_NDIM if UNKNOWN_NDIM in ndims else max(ndims)
    vdevice = x1.vdevice if x1.vdevice is not None else x2.vdevice
    dc, d1, d2 = shape_expr_values(cond), shape_expr_values(x1), shape_expr_values(x2)
    if dc is None or d1 is None or d2 is None:
        return make_tensor(None, dtype, ndim, vdevice)
    out = broadcast_shapes(call, dc, d1, ctx)
    if out is None:
        return make_tensor(None, dtype, ndim, vdevice)
    out = broadcast_shapes(call, out, d2, ctx)
    if out is None:
        return make_tensor(None, dtype, ndim, vdevice)
    return make_tensor(out, dtype, vdevice=vdevice)


register_op_rule("relax.where", _infer_where, pattern=OpPattern.BROADCAST, num_inputs=3,
                 arguments=("condition", "x1", "x2"))


def where(condition: Expr, x1: Expr, x2: Expr) -> Call:
    """Elements of ``x1`` where ``condition`` holds, else of ``x2`` (broadcast)."""
    return Call(Op.get("relax.where"), [condition, x1, x2])
