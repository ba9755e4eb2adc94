"""Binary broadcast ops (add, multiply, comparisons, ...): numpy broadcasting of two operands.

Operands are tensors or ``R.Prim`` scalars; arithmetic keeps the common dtype, comparisons give
``bool``. Shapes follow TVM's rule: a dim 1 broadcasts, provably equal dims stay, two different
constants are an error, and an undecidable symbolic pair gives an unknown shape of known rank.
"""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import IntImm
from ..expr import Call, Expr, ShapeExpr, const
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._common import (
    UNKNOWN_NDIM,
    arg_sinfo,
    binary_out_dtype,
    broadcast_shapes,
    check_num_args,
    fail,
    fmt_sinfo,
    make_tensor,
    out_vdevice,
    shape_expr_values,
)
from .base import register_op_rule

ARITH_OPS = (
    "add", "subtract", "multiply", "divide", "floor_divide", "power", "mod", "floor_mod",
    "minimum", "maximum", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
)
CMP_OPS = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")

__all__ = list(ARITH_OPS + CMP_OPS)


def _operand(call: Call, i: int) -> StructInfo:
    s = arg_sinfo(call, i)
    if not isinstance(s, TensorStructInfo | PrimStructInfo):
        side = "LHS" if i == 0 else "RHS"
        fail(call, f"arguments of binary operators must be tensors or R.Prim values, but the "
                   f"{side} is {fmt_sinfo(s)}", type_error=True)
    return s


def _ndim(s: StructInfo) -> int:
    return 1 if isinstance(s, PrimStructInfo) else s.ndim


def _dims(s: StructInfo):
    if isinstance(s, PrimStructInfo):
        return (IntImm("int64", 1),)
    return shape_expr_values(s)


def _same_tensor_shape(lhs: StructInfo, rhs: StructInfo) -> TensorStructInfo | None:
    """``lhs`` when both operands are tensors of one shape (the same struct info or shape
    object, or literal shapes of equal constant dims), else None: what broadcasting keeps."""
    if lhs is rhs:
        return lhs if isinstance(lhs, TensorStructInfo) else None
    if not isinstance(lhs, TensorStructInfo) or not isinstance(rhs, TensorStructInfo):
        return None
    a, b = lhs.shape, rhs.shape
    if a is None or b is None:
        return None
    if a is b:
        return lhs
    if not isinstance(a, ShapeExpr) or not isinstance(b, ShapeExpr):
        return None
    va, vb = a.values, b.values
    if len(va) != len(vb):
        return None
    for x, y in zip(va, vb):
        if x is not y and not (type(x) is IntImm and type(y) is IntImm and x.value == y.value
                               and x.dtype == y.dtype):
            return None
    return lhs


def infer_broadcast(call: Call, ctx, out_dtype: str | None) -> StructInfo:
    """Struct info of a binary broadcast call; ``out_dtype`` None keeps the operands' dtype."""
    check_num_args(call, 2)
    lhs, rhs = _operand(call, 0), _operand(call, 1)
    dtype = binary_out_dtype(call, lhs, rhs)
    if out_dtype is not None:
        dtype = out_dtype
    if isinstance(lhs, PrimStructInfo) and isinstance(rhs, PrimStructInfo):
        return PrimStructInfo(dtype)
    vdevice = out_vdevice(lhs, rhs)
    same = _same_tensor_shape(lhs, rhs)
    if same is not None:
        # (equal shapes: the result is the operand's struct info, shared as the unary ops share
        # theirs, so that the next binding's operands are the same object again)
        if same.dtype == dtype and same.vdevice is vdevice:
            return same
        return make_tensor(same.shape, dtype, same.ndim if same.shape is None else -1, vdevice)
    n0, n1 = _ndim(lhs), _ndim(rhs)
    ndim = UNKNOWN_NDIM if UNKNOWN_NDIM in (n0, n1) else max(n0, n1)
    d0, d1 = _dims(lhs), _dims(rhs)
    if d0 is not None and d1 is not None:
        out = broadcast_shapes(call, d0, d1, ctx)
        if out is not None:
            return make_tensor(out, dtype, vdevice=vdevice)
    s0, s1 = getattr(lhs, "shape", None), getattr(rhs, "shape", None)
    if s0 is not None and s0 is s1:  # both shaped by the same shape variable
        return make_tensor(s0, dtype, vdevice=vdevice)
    return make_tensor(None, dtype, ndim, vdevice)


def _infer_arith(call: Call, ctx) -> StructInfo:
    return infer_broadcast(call, ctx, None)


def _infer_cmp(call: Call, ctx) -> StructInfo:
    return infer_broadcast(call, ctx, "bool")


def _as_operand(x, other) -> Expr:
    if isinstance(x, Expr):
        return x
    dtype = getattr(getattr(other, "struct_info_", None), "dtype", None)
    return const(x, None if dtype in (None, "void") else dtype)


def _make(name: str, infer):
    op_name = "relax." + name
    register_op_rule(op_name, infer, pattern=OpPattern.BROADCAST, num_inputs=2,
                     arguments=("x1", "x2"))

    def f(x1, x2) -> Call:
        x1, x2 = _as_operand(x1, x2), _as_operand(x2, x1)
        return Call(Op.get(op_name), [x1, x2])

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` of two tensors with numpy broadcasting."
    return f


add = _make("add", _infer_arith)
subtract = _make("subtract", _infer_arith)
multiply = _make("multiply", _infer_arith)
divide = _make("divide", _infer_arith)
floor_divide = _make("floor_divide", _infer_arith)
power = _make("power", _infer_arith)
mod = _make("mod", _infer_arith)
floor_mod = _make("floor_mod", _infer_arith)
minimum = _make("minimum", _infer_arith)
maximum = _make("maximum", _infer_arith)
logical_and = _make("logical_and", _infer_arith)
logical_or = _make("logical_or", _infer_arith)
logical_xor = _make("logical_xor", _infer_arith)
bitwise_and = _make("bitwise_and", _infer_arith)
bitwise_or = _make("bitwise_or", _infer_arith)
bitwise_xor = _make("bitwise_xor", _infer_arith)
left_shift = _make("left_shift", _infer_arith)
right_shift = _make("right_shift", _infer_arith)
equal = _make("equal", _infer_cmp)
not_equal = _make("not_equal", _infer_cmp)
greater = _make("greater", _infer_cmp)
greater_equal = _make("greater_equal", _infer_cmp)
less = _make("less", _infer_cmp)
less_equal = _make("less_equal", _infer_cmp)
