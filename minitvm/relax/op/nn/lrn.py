"""``relax.nn.lrn``: local response normalization across one axis (Relay's ``nn.lrn``), with
its struct-info rule. The result is ``x / (bias + alpha / size * window sum of x**2) ** beta``;
legalization reuses ``topi.lrn``, the compute Relay builds."""

from __future__ import annotations

from ....ir.op import Op, OpPattern
from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._common import UNKNOWN_NDIM, fail, fmt_sinfo, is_float, is_void, normalize_axis, tensor_args
from ..base import register_op_rule
from ..op_attrs import _attrs

__all__ = ["lrn", "LRNAttrs"]

LRNAttrs = _attrs("LRNAttrs", [("size", 5), ("axis", 1), ("bias", 2.0), ("alpha", 0.0001),
                               ("beta", 0.75)], "Attributes of nn.lrn.")


def _infer_lrn(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    if not is_void(x.dtype) and not is_float(x.dtype):
        fail(call, f"requires a float input, got {fmt_sinfo(x)}")
    size = int(call.attrs.size)
    if size < 1:
        fail(call, f"size must be a positive window length, got {size}")
    if x.ndim != UNKNOWN_NDIM:
        normalize_axis(call, x.ndim, call.attrs.axis)
    return x


register_op_rule("relax.nn.lrn", _infer_lrn, pattern=OpPattern.OPAQUE,
                 num_inputs=1, arguments=("data",), attrs_type=LRNAttrs)


def lrn(data: Expr, size: int = 5, axis: int = 1, bias: float = 2.0, alpha: float = 0.0001,
        beta: float = 0.75) -> Call:
    """Local response normalization of ``data`` over a window of ``size`` along ``axis``
    (``alpha`` is divided by ``size``, as in Relay and ONNX)."""
    return Call(Op.get("relax.nn.lrn"), [data],
                LRNAttrs(size=int(size), axis=int(axis), bias=float(bias), alpha=float(alpha),
                         beta=float(beta)))
