"""Conversions between a shape value and a 1-D int64 tensor: ``shape_to_tensor`` (a shape of
``ndim`` dims becomes a tensor of shape ``(ndim,)``) and ``tensor_to_shape`` (a 1-D integer
tensor becomes a shape whose ndim is the tensor's length when that is known)."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import IntImm
from ..expr import Call, Expr
from ..struct_info import ShapeStructInfo, StructInfo
from ._common import (
    UNKNOWN_NDIM,
    arg_sinfo,
    check_num_args,
    fail,
    fmt_sinfo,
    is_int,
    is_uint,
    is_void,
    make_tensor,
    shape_values,
    tensor_arg,
)
from .base import register_op_rule

__all__ = ["shape_to_tensor", "tensor_to_shape"]


def _infer_shape_to_tensor(call: Call, ctx) -> StructInfo:
    check_num_args(call, 1)
    s = arg_sinfo(call, 0)
    if not isinstance(s, ShapeStructInfo):
        fail(call, f"expects a shape, got {fmt_sinfo(s)}", type_error=True)
    if s.ndim == UNKNOWN_NDIM:
        return make_tensor(None, "int64", 1)
    return make_tensor([IntImm("int64", s.ndim)], "int64")


def _infer_tensor_to_shape(call: Call, ctx) -> StructInfo:
    check_num_args(call, 1)
    t = tensor_arg(call, 0, "data")
    if t.ndim not in (UNKNOWN_NDIM, 1):
        fail(call, f"expects a 1-D tensor, got {fmt_sinfo(t)}")
    if not (is_void(t.dtype) or is_int(t.dtype) or is_uint(t.dtype)):
        fail(call, f"expects an integer tensor, got {fmt_sinfo(t)}")
    dims = shape_values(t)
    if dims is not None and isinstance(dims[0], IntImm):
        return ShapeStructInfo(ndim=int(dims[0].value))
    return ShapeStructInfo(ndim=UNKNOWN_NDIM)


register_op_rule("relax.shape_to_tensor", _infer_shape_to_tensor, pattern=OpPattern.OPAQUE,
                 num_inputs=1, arguments=("input",))
register_op_rule("relax.tensor_to_shape", _infer_tensor_to_shape, pattern=OpPattern.OPAQUE,
                 num_inputs=1, arguments=("input",))
for _name in ("relax.shape_to_tensor", "relax.tensor_to_shape"):
    if Op.get(_name).get_attr("RequiresArgumentShapes") is None:
        Op.get(_name).set_attr("RequiresArgumentShapes", False)
del _name


def shape_to_tensor(expr: Expr) -> Call:
    """The dims of shape ``expr`` as a 1-D int64 tensor."""
    return Call(Op.get("relax.shape_to_tensor"), [expr])


def tensor_to_shape(expr: Expr) -> Call:
    """The values of the 1-D integer tensor ``expr`` as a shape."""
    return Call(Op.get("relax.tensor_to_shape"), [expr])
