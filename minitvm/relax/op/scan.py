"""Cumulative scans along an axis: ``cumsum`` and ``cumprod`` (TVM's ``ScanopAttrs``: axis,
dtype, exclusive). Without an axis the input is scanned as if flattened to 1-D."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ..expr import Call, Expr
from ..struct_info import StructInfo
from ._common import (
    UNKNOWN_NDIM,
    is_void,
    make_tensor,
    normalize_axis,
    shape_product,
    shape_values,
    tensor_args,
)
from .base import register_op_rule
from .op_attrs import _attrs as _make_attrs

__all__ = ["cumsum", "cumprod", "ScanopAttrs"]

ScanopAttrs = _make_attrs("ScanopAttrs", [("axis", None), ("dtype", "void"), ("exclusive", False)],
                          "Attributes of cumsum/cumprod.")
ScanopAttrs.__module__ = __name__


def _infer_scan(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    a = call.attrs
    dtype = x.dtype if a.dtype is None or is_void(str(a.dtype)) else str(a.dtype)
    if a.axis is None:
        dims = shape_values(x)
        if dims is None:
            return make_tensor(None, dtype, 1, x.vdevice)
        return make_tensor([shape_product(dims)], dtype, vdevice=x.vdevice)
    if x.ndim != UNKNOWN_NDIM:
        normalize_axis(call, x.ndim, int(a.axis))  # checks the range
    if x.shape is not None:
        return make_tensor(x.shape, dtype, vdevice=x.vdevice)
    return make_tensor(None, dtype, x.ndim, x.vdevice)


for _name in ("cumsum", "cumprod"):
    register_op_rule("relax." + _name, _infer_scan, pattern=OpPattern.OPAQUE, num_inputs=1,
                     arguments=("data",), attrs_type=ScanopAttrs)
del _name


def _attrs(axis, dtype, exclusive) -> ScanopAttrs:
    return ScanopAttrs(axis=None if axis is None else int(axis),
                       dtype="void" if dtype is None else str(dtype),
                       exclusive=bool(exclusive))


def cumsum(data: Expr, axis: int | None = None, dtype: str | None = None,
           exclusive: bool = False) -> Call:
    """Cumulative sum of ``data`` along ``axis`` (the flattened input when None); with
    ``exclusive`` each element sums only the ones before it."""
    return Call(Op.get("relax.cumsum"), [data], _attrs(axis, dtype, exclusive))


def cumprod(data: Expr, axis: int | None = None, dtype: str | None = None,
            exclusive: bool = False) -> Call:
    """Cumulative product of ``data`` along ``axis`` (the flattened input when None)."""
    return Call(Op.get("relax.cumprod"), [data], _attrs(axis, dtype, exclusive))


