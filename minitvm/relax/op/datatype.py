"""Data type conversion (``astype``): same shape, new dtype."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.type import check_dtype
from ..expr import Call, Expr
from ..struct_info import StructInfo
from ._common import tensor_args, with_dtype
from .base import register_op_rule
from .op_attrs import AstypeAttrs

__all__ = ["astype"]


def _infer_astype(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    return with_dtype(x, call.attrs.dtype)


register_op_rule("relax.astype", _infer_astype, pattern=OpPattern.ELEMWISE, num_inputs=1,
                 arguments=("x",), attrs_type=AstypeAttrs)


def astype(x: Expr, dtype: str) -> Call:
    """Cast every element of ``x`` to ``dtype``."""
    try:
        dtype = check_dtype(dtype)
    except ValueError as e:
        raise ValueError(f"relax.astype: {e}") from None
    return Call(Op.get("relax.astype"), [x], AstypeAttrs(dtype=dtype))
