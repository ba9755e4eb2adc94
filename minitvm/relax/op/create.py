"""Tensor creation: full/ones/zeros (from a shape), their ``_like`` forms, ``arange``, and the
triangle masks ``tril``/``triu``."""

from __future__ import annotations

import math

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import FloatImm, IntImm
from ...tir import expr as T
from ..expr import Call, Expr, PrimValue, ShapeExpr, const
from ..struct_info import PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo
from ._common import (
    arg_sinfo,
    check_num_args,
    fail,
    fmt_sinfo,
    is_void,
    make_tensor,
    simplify,
    tensor_arg,
    with_dtype,
)
from .base import register_op_rule
from .op_attrs import InitAttrs, TriluAttrs

__all__ = [
    "full", "full_like", "ones", "ones_like", "zeros", "zeros_like", "arange", "tril", "triu",
]


def _shape_arg(call: Call, i: int) -> ShapeStructInfo:
    s = arg_sinfo(call, i)
    if not isinstance(s, ShapeStructInfo):
        fail(call, f"requires the shape argument to be a shape value, got {fmt_sinfo(s)}",
             type_error=True)
    return s


def _scalar_fill(call: Call, i: int) -> TensorStructInfo:
    s = arg_sinfo(call, i)
    if not isinstance(s, TensorStructInfo) or s.ndim != 0:
        fail(call, f"requires the fill value to be a zero-rank tensor, got {fmt_sinfo(s)}",
             type_error=True)
    return s


def _attr_dtype(call: Call) -> str:
    return call.attrs.dtype if call.attrs is not None else "void"


def _shape_result(call: Call, dtype: str) -> StructInfo:
    return TensorStructInfo(call.args[0], dtype)


def _infer_full(call: Call, ctx) -> StructInfo:
    check_num_args(call, 2)
    _shape_arg(call, 0)
    fill = _scalar_fill(call, 1)
    dtype = _attr_dtype(call)
    return _shape_result(call, fill.dtype if is_void(dtype) else dtype)


def _infer_ones_zeros(call: Call, ctx) -> StructInfo:
    check_num_args(call, 1)
    _shape_arg(call, 0)
    return _shape_result(call, _attr_dtype(call))


def _infer_full_like(call: Call, ctx) -> StructInfo:
    check_num_args(call, 2)
    x = tensor_arg(call, 0, "x")
    _scalar_fill(call, 1)
    dtype = _attr_dtype(call)
    return x if is_void(dtype) else with_dtype(x, dtype)


def _infer_like(call: Call, ctx) -> StructInfo:
    check_num_args(call, 1)
    x = tensor_arg(call, 0, "x")
    dtype = _attr_dtype(call)
    return x if is_void(dtype) else with_dtype(x, dtype)


for _name, _rule, _args in (
        ("full", _infer_full, ("shape", "fill_value")),
        ("ones", _infer_ones_zeros, ("shape",)),
        ("zeros", _infer_ones_zeros, ("shape",)),
        ("full_like", _infer_full_like, ("x", "fill_value")),
        ("ones_like", _infer_like, ("x",)),
        ("zeros_like", _infer_like, ("x",))):
    register_op_rule("relax." + _name, _rule, pattern=OpPattern.ELEMWISE,
                     num_inputs=len(_args), arguments=_args, attrs_type=InitAttrs)
del _name, _rule, _args


def _shape(shape) -> Expr:
    return shape if isinstance(shape, Expr) else ShapeExpr(list(shape))


def _dtype(dtype) -> str:
    return "void" if dtype is None else str(dtype)


def full(shape, fill_value, dtype: str | None = None) -> Call:
    """A tensor of ``shape`` filled with scalar ``fill_value`` (dtype: the fill's if None)."""
    if not isinstance(fill_value, Expr):
        fill_value = const(fill_value, dtype)
    return Call(Op.get("relax.full"), [_shape(shape), fill_value], InitAttrs(dtype=_dtype(dtype)))


def ones(shape, dtype: str) -> Call:
    """A tensor of ``shape`` filled with ones."""
    return Call(Op.get("relax.ones"), [_shape(shape)], InitAttrs(dtype=str(dtype)))


def zeros(shape, dtype: str) -> Call:
    """A tensor of ``shape`` filled with zeros."""
    return Call(Op.get("relax.zeros"), [_shape(shape)], InitAttrs(dtype=str(dtype)))


def full_like(x: Expr, fill_value, dtype: str | None = None) -> Call:
    """A tensor shaped like ``x`` filled with ``fill_value`` (dtype: ``x``'s if None)."""
    if not isinstance(fill_value, Expr):
        xd = getattr(x.struct_info_, "dtype", None)
        fill_value = const(fill_value, dtype or (None if xd in (None, "void") else xd))
    return Call(Op.get("relax.full_like"), [x, fill_value], InitAttrs(dtype=_dtype(dtype)))


def ones_like(x: Expr, dtype: str | None = None) -> Call:
    """A tensor of ones shaped like ``x``."""
    return Call(Op.get("relax.ones_like"), [x], InitAttrs(dtype=_dtype(dtype)))


def zeros_like(x: Expr, dtype: str | None = None) -> Call:
    """A tensor of zeros shaped like ``x``."""
    return Call(Op.get("relax.zeros_like"), [x], InitAttrs(dtype=_dtype(dtype)))


# --------------------------------------------------------------------------- arange
def _prim_arg(call: Call, i: int):
    s = arg_sinfo(call, i)
    if not isinstance(s, PrimStructInfo):
        fail(call, f"expects start, end and step to be R.Prim values, argument {i} is "
                   f"{fmt_sinfo(s)}", type_error=True)
    v = s.value if s.value is not None else getattr(call.args[i], "value", None)
    return s, v


def _infer_arange(call: Call, ctx) -> StructInfo:
    check_num_args(call, 3)
    (_, start), (_, end), (_, step) = (_prim_arg(call, i) for i in range(3))
    dtype = _attr_dtype(call)
    consts = (IntImm, FloatImm)
    if all(isinstance(v, consts) for v in (start, end, step)):
        if step.value == 0:
            fail(call, "step must be non-zero")
        n = math.ceil((end.value - start.value) / step.value)
        if all(isinstance(v, IntImm) for v in (start, end, step)):
            q, r = divmod(end.value - start.value, step.value)
            n = q + (r != 0)
        return make_tensor([max(n, 0)], dtype)
    if all(v is not None and v.dtype.startswith("int") for v in (start, end, step)):
        if isinstance(step, IntImm) and step.value > 0:
            num = T.FloorDiv(T.Add(T.Sub(end, start), IntImm(step.dtype, step.value - 1)),
                             step)
        else:  # (a negative or symbolic step: ceil((end - start) / step) = -((start - end)
            # // step) for either sign, none below 0; a zero step is the caller's to reject)
            num = T.Max(T.Sub(IntImm(step.dtype, 0), T.FloorDiv(T.Sub(start, end), step)),
                        IntImm(step.dtype, 0))
        num = simplify(num, ctx)
        if num.dtype != "int64":
            num = T.Cast("int64", num)
        return make_tensor([num], dtype)
    return make_tensor(None, dtype, 1)


register_op_rule("relax.arange", _infer_arange, pattern=OpPattern.INJECTIVE, num_inputs=3,
                 arguments=("start", "end", "step"), attrs_type=InitAttrs)


def _prim(v) -> Expr:
    if isinstance(v, Expr):
        return v
    if isinstance(v, bool):
        raise TypeError("arange bounds cannot be bools")
    return PrimValue(v)  # an int, a float or a tir PrimExpr


def arange(start, end=None, step=1, dtype: str | None = None) -> Call:
    """``[start, start + step, ...)`` up to ``end`` (``arange(n)`` counts from 0), as numpy."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        def is_int(v):
            if isinstance(v, int) and not isinstance(v, bool):
                return True
            if isinstance(v, PrimValue):
                return v.value.dtype.startswith("int")
            return getattr(v, "dtype", "").startswith("int")

        dtype = "int64" if all(is_int(v) for v in (start, end, step)) else "float32"
    return Call(Op.get("relax.arange"), [_prim(start), _prim(end), _prim(step)],
                InitAttrs(dtype=str(dtype)))


# --------------------------------------------------------------------------- tril / triu
def _infer_trilu(call: Call, ctx) -> StructInfo:
    check_num_args(call, 1)
    x = tensor_arg(call, 0, "x")
    if x.ndim != -1 and x.ndim < 2:
        fail(call, f"requires an input of at least 2 dimensions, got {fmt_sinfo(x)}")
    return x


for _name in ("tril", "triu"):
    register_op_rule("relax." + _name, _infer_trilu, pattern=OpPattern.INJECTIVE, num_inputs=1,
                     arguments=("x",), attrs_type=TriluAttrs)
del _name


def tril(x: Expr, k: int = 0) -> Call:
    """``x`` with the elements above the ``k``-th diagonal zeroed (lower triangle kept)."""
    return Call(Op.get("relax.tril"), [x], TriluAttrs(k=int(k)))


def triu(x: Expr, k: int = 0) -> Call:
    """``x`` with the elements below the ``k``-th diagonal zeroed (upper triangle kept)."""
    return Call(Op.get("relax.triu"), [x], TriluAttrs(k=int(k)))
