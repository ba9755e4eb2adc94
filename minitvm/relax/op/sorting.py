"""Sorting ops: sort, argsort and topk along one axis (TVM's ``relax.sort``, ``relax.argsort``,
``relax.topk``); shapes follow the input, ``topk`` cuts its axis to ``k``."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import IntImm
from ..expr import Call, Expr
from ..struct_info import StructInfo, TupleStructInfo
from ._common import (
    UNKNOWN_NDIM,
    fail,
    fmt_dim,
    fmt_sinfo,
    is_int,
    make_tensor,
    normalize_axis,
    shape_expr_values,
    tensor_args,
    with_dtype,
)
from .base import register_op_rule
from .op_attrs import _attrs

__all__ = ["sort", "argsort", "topk"]

SortAttrs = _attrs("SortAttrs", [("axis", -1), ("descending", False)], "Attributes of sort.")
ArgsortAttrs = _attrs("ArgsortAttrs", [("axis", -1), ("descending", False), ("dtype", "int32")],
                      "Attributes of argsort.")
TopKAttrs = _attrs("TopKAttrs", [("k", 1), ("axis", -1), ("ret_type", "both"),
                                 ("largest", True), ("dtype", "int32")], "Attributes of topk.")


def _check_axis(call: Call, x) -> None:
    if x.ndim == 0:
        fail(call, f"expects a tensor of rank at least 1, got {fmt_sinfo(x)}")
    if x.ndim != UNKNOWN_NDIM:
        normalize_axis(call, x.ndim, call.attrs.axis)


def _index_dtype(call: Call) -> str:
    dt = call.attrs.dtype
    if not is_int(dt):
        fail(call, f"dtype of the indices must be an integer type, got {dt}")
    return dt


def _infer_sort(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    _check_axis(call, x)
    return x


def _infer_argsort(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    _check_axis(call, x)
    return with_dtype(x, _index_dtype(call))


def _infer_topk(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    _check_axis(call, x)
    a = call.attrs
    dt = _index_dtype(call)
    if a.ret_type not in ("both", "values", "indices"):
        fail(call, f"ret_type must be 'both', 'values' or 'indices', got {a.ret_type!r}")
    k = int(a.k)
    if k < 1:
        fail(call, f"k must be at least 1, got {k}")
    dims = shape_expr_values(x)
    if dims is None:
        vals = make_tensor(None, x.dtype, x.ndim, x.vdevice)
    else:
        axis = normalize_axis(call, len(dims), a.axis)
        d = dims[axis]
        if isinstance(d, IntImm) and d.value < k:
            fail(call, f"k {k} exceeds the length {fmt_dim(d)} of axis {a.axis} of "
                       f"{fmt_sinfo(x)}")
        dims = list(dims)
        dims[axis] = IntImm(d.dtype, k)
        vals = make_tensor(dims, x.dtype, vdevice=x.vdevice)
    idx = with_dtype(vals, dt)
    if a.ret_type == "values":
        return vals
    if a.ret_type == "indices":
        return idx
    return TupleStructInfo([vals, idx])


register_op_rule("relax.sort", _infer_sort, pattern=OpPattern.OPAQUE, num_inputs=1,
                 arguments=("data",), attrs_type=SortAttrs)
register_op_rule("relax.argsort", _infer_argsort, pattern=OpPattern.OPAQUE, num_inputs=1,
                 arguments=("data",), attrs_type=ArgsortAttrs)
register_op_rule("relax.topk", _infer_topk, pattern=OpPattern.OPAQUE, num_inputs=1,
                 arguments=("data",), attrs_type=TopKAttrs)


def sort(x: Expr, axis: int = -1, descending: bool = False) -> Call:
    """The values of ``x`` sorted along ``axis`` (stable; NaN last ascending)."""
    return Call(Op.get("relax.sort"), [x], SortAttrs(axis=int(axis), descending=bool(descending)))


def argsort(data: Expr, axis: int = -1, descending: bool = False, dtype: str = "int32") -> Call:
    """The positions that sort ``data`` along ``axis`` (stable)."""
    return Call(Op.get("relax.argsort"), [data],
                ArgsortAttrs(axis=int(axis), descending=bool(descending), dtype=str(dtype)))


def topk(data: Expr, k: int = 1, axis: int = -1, ret_type: str = "both", largest: bool = True,
         dtype: str = "int32") -> Call:
    """The ``k`` largest (``largest=False``: smallest) values along ``axis`` and/or their
    positions, in sorted order."""
    return Call(Op.get("relax.topk"), [data],
                TopKAttrs(k=int(k), axis=int(axis), ret_type=str(ret_type),
                          largest=bool(largest), dtype=str(dtype)))
