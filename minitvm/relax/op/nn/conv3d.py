"""3-D convolution ``nn.conv3d`` (TVM's ``Conv3DAttrs``; any permutation of NCDHW / OIDHW),
sharing the N-d inference of ``convolution.py``."""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.op import Op, OpPattern
from ....ir.prim_expr import IntImm
from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._common import int_tuple
from ..base import register_op_rule
from ..op_attrs import _attrs as _make_attrs
from .convolution import _infer_conv

__all__ = ["conv3d", "Conv3DAttrs", "padding_nd"]

Conv3DAttrs = _make_attrs(
    "Conv3DAttrs",
    [("strides", (1, 1, 1)), ("padding", (0, 0, 0, 0, 0, 0)), ("dilation", (1, 1, 1)),
     ("groups", 1), ("data_layout", "NCDHW"), ("kernel_layout", "OIDHW"),
     ("out_layout", "NCDHW"), ("out_dtype", "void")],
    "Attributes of nn.conv3d.")
Conv3DAttrs.__module__ = __name__


def padding_nd(padding, nd: int) -> tuple:
    """Padding as (before..., after...) over ``nd`` spatial dims from 1, ``nd`` or ``2*nd``
    values (TVM's convention: one value pads everywhere, ``nd`` values pad both sides)."""
    if isinstance(padding, int | IntImm):
        return (int(padding),) * (2 * nd)
    t = tuple(int(v) for v in padding)
    if len(t) == 1:
        return t * (2 * nd)
    if len(t) == nd:
        return t + t
    if len(t) == 2 * nd:
        return t
    raise ValueError(f"padding must have 1, {nd} or {2 * nd} values, got {t}")


def _infer_conv3d(call: Call, ctx) -> StructInfo:
    return _infer_conv(call, ctx, "DHW", False)


register_op_rule("relax.nn.conv3d", _infer_conv3d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                 num_inputs=2, arguments=("data", "weight"), attrs_type=Conv3DAttrs)


def conv3d(data: Expr, weight: Expr, strides: int | Sequence[int] = (1, 1, 1),
           padding: int | Sequence[int] = (0, 0, 0), dilation: int | Sequence[int] = (1, 1, 1),
           groups: int = 1, data_layout: str = "NCDHW", kernel_layout: str = "OIDHW",
           out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """3-D convolution of ``data`` with ``weight``."""
    if int(groups) < 1:
        raise ValueError(f"conv3d: groups must be positive, got {groups}")
    attrs = Conv3DAttrs(strides=int_tuple(strides, 3, "strides"),
                        padding=padding_nd(padding, 3),
                        dilation=int_tuple(dilation, 3, "dilation"), groups=int(groups),
                        data_layout=data_layout, kernel_layout=kernel_layout,
                        out_layout=data_layout if out_layout is None else out_layout,
                        out_dtype="void" if out_dtype is None else str(out_dtype))
    return Call(Op.get("relax.nn.conv3d"), [data, weight], attrs)
