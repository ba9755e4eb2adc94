"""Quantization ops: ``quantize`` (float to int8/uint8/...) and ``dequantize`` (back), with a
scale and zero point per tensor (scalars) or per channel along ``axis`` (1-D)."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ..expr import Call, Expr
from ..struct_info import StructInfo
from ._common import (
    UNKNOWN_NDIM,
    fail,
    fmt_dim,
    fmt_sinfo,
    is_float,
    is_int,
    is_uint,
    is_void,
    normalize_axis,
    prove_not_equal,
    shape_expr_values,
    tensor_args,
    with_dtype,
)
from .base import register_op_rule
from .op_attrs import _attrs

__all__ = ["quantize", "dequantize"]

QuantizeAttrs = _attrs("QuantizeAttrs", [("out_dtype", "int8"), ("axis", -1)],
                       "Attributes of quantize / dequantize.")


def _check_params(call: Call, x, scale, zp, ctx) -> None:
    if x.ndim != UNKNOWN_NDIM and x.ndim > 0:
        axis = normalize_axis(call, x.ndim, call.attrs.axis)
    else:
        axis = None
    if not is_void(scale.dtype) and not is_float(scale.dtype):
        fail(call, f"requires a float scale, got {fmt_sinfo(scale)}")
    if not is_void(zp.dtype) and not (is_int(zp.dtype) or is_uint(zp.dtype)
                                      or is_float(zp.dtype)):
        fail(call, f"requires an integer or float zero point, got {fmt_sinfo(zp)}")
    xd = shape_expr_values(x)
    for s, what in ((scale, "scale"), (zp, "zero_point")):
        if s.ndim not in (0, 1, UNKNOWN_NDIM):
            fail(call, f"requires {what} to be a scalar or 1-D, got {fmt_sinfo(s)}")
        d = shape_expr_values(s)
        if d and xd is not None and axis is not None and d[0] is not None:
            if prove_not_equal(d[0], xd[axis], ctx) and not (
                    hasattr(d[0], "value") and d[0].value == 1):
                fail(call, f"requires {what} to have one value per channel of axis "
                           f"{call.attrs.axis} ({fmt_dim(xd[axis])}), got {fmt_sinfo(s)}")


def _infer_quantize(call: Call, ctx) -> StructInfo:
    x, scale, zp = tensor_args(call, ["data", "scale", "zero_point"])
    if not is_void(x.dtype) and not is_float(x.dtype):
        fail(call, f"requires a float input, got {fmt_sinfo(x)}")
    out = call.attrs.out_dtype
    if not (is_int(out) or is_uint(out)) or out == "int64":
        fail(call, f"out_dtype must be an integer type up to 32 bits, got {out}")
    _check_params(call, x, scale, zp, ctx)
    return with_dtype(x, out)


def _infer_dequantize(call: Call, ctx) -> StructInfo:
    x, scale, zp = tensor_args(call, ["data", "scale", "zero_point"])
    if not is_void(x.dtype) and not (is_int(x.dtype) or is_uint(x.dtype)):
        fail(call, f"requires an integer input, got {fmt_sinfo(x)}")
    out = call.attrs.out_dtype
    if not is_float(out):
        fail(call, f"out_dtype must be a float type, got {out}")
    _check_params(call, x, scale, zp, ctx)
    return with_dtype(x, out)


register_op_rule("relax.quantize", _infer_quantize, pattern=OpPattern.ELEMWISE, num_inputs=3,
                 arguments=("data", "scale", "zero_point"), attrs_type=QuantizeAttrs)
register_op_rule("relax.dequantize", _infer_dequantize, pattern=OpPattern.ELEMWISE,
                 num_inputs=3, arguments=("data", "scale", "zero_point"),
                 attrs_type=QuantizeAttrs)


def quantize(data: Expr, scale: Expr, zero_point: Expr, axis: int = -1,
             out_dtype: str = "int8") -> Call:
    """``clip(round(data / scale) + zero_point)`` in ``out_dtype`` (round half to even)."""
    return Call(Op.get("relax.quantize"), [data, scale, zero_point],
                QuantizeAttrs(out_dtype=str(out_dtype), axis=int(axis)))


def dequantize(data: Expr, scale: Expr, zero_point: Expr, axis: int = -1,
               out_dtype: str = "float32") -> Call:
    """``(data - zero_point) * scale`` in ``out_dtype``."""
    return Call(Op.get("relax.dequantize"), [data, scale, zero_point],
                QuantizeAttrs(out_dtype=str(out_dtype), axis=int(axis)))
