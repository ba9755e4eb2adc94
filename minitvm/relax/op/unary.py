"""Unary elementwise ops (exp, sqrt, negative, ...): same shape, same dtype (bool for isnan...).

Transcendental ops require a float input, as TVM's do; ``clip`` takes its bounds as
``R.prim_value`` arguments.
"""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ..expr import Call, Expr, PrimValue
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._common import (
    arg_sinfo,
    check_num_args,
    fail,
    fmt_sinfo,
    is_float,
    is_void,
    tensor_arg,
    tensor_args,
    with_dtype,
)
from .base import register_op_rule

__all__ = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_not", "ceil", "cos",
    "cosh", "exp", "floor", "log", "logical_not", "negative", "round", "rsqrt", "sigmoid",
    "sign", "sin", "sinh", "square", "sqrt", "tan", "tanh", "trunc", "erf", "isfinite",
    "isinf", "isnan", "clip",
]


def infer_unary(call: Call, ctx, require_float: bool = False,
                out_dtype: str | None = None) -> StructInfo:
    """The input's struct info, with ``out_dtype`` when given; checks float-ness if asked."""
    (x,) = tensor_args(call, ["x"])
    if require_float and not is_void(x.dtype) and not is_float(x.dtype):
        fail(call, f"requires the input tensor to have a float dtype, but the input is "
                   f"{fmt_sinfo(x)}")
    return with_dtype(x, out_dtype) if out_dtype is not None else x


def _float_rule(call: Call, ctx) -> StructInfo:
    return infer_unary(call, ctx, True)


def _any_rule(call: Call, ctx) -> StructInfo:
    return infer_unary(call, ctx, False)


def _bool_rule(call: Call, ctx) -> StructInfo:
    return infer_unary(call, ctx, False, "bool")


def _make(name: str, rule, reg_name: str | None = None, pattern: int = OpPattern.ELEMWISE):
    op_name = "relax." + (reg_name or name)
    register_op_rule(op_name, rule, pattern=pattern, num_inputs=1, arguments=("x",))

    def f(x: Expr) -> Call:
        return Call(Op.get(op_name), [x])

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{reg_name or name}`` of a tensor."
    return f


abs = _make("abs", _any_rule)  # noqa: A001 - TVM's name
acos = _make("acos", _float_rule)
acosh = _make("acosh", _float_rule)
asin = _make("asin", _float_rule)
asinh = _make("asinh", _float_rule)
atan = _make("atan", _float_rule)
atanh = _make("atanh", _float_rule)
bitwise_not = _make("bitwise_not", _any_rule)
ceil = _make("ceil", _any_rule)
cos = _make("cos", _float_rule)
cosh = _make("cosh", _float_rule)
exp = _make("exp", _float_rule)
floor = _make("floor", _any_rule)
log = _make("log", _float_rule)
logical_not = _make("logical_not", _any_rule)
negative = _make("negative", _any_rule)
round = _make("round", _any_rule)  # noqa: A001 - TVM's name
rsqrt = _make("rsqrt", _float_rule)
sigmoid = _make("sigmoid", _float_rule)
sign = _make("sign", _any_rule)
sin = _make("sin", _float_rule)
sinh = _make("sinh", _float_rule)
square = _make("square", _any_rule)
sqrt = _make("sqrt", _float_rule)
tan = _make("tan", _float_rule)
tanh = _make("tanh", _float_rule)
trunc = _make("trunc", _any_rule)
erf = _make("erf", _float_rule)
isfinite = _make("isfinite", _bool_rule)
isinf = _make("isinf", _bool_rule)
isnan = _make("isnan", _bool_rule)


def _infer_clip(call: Call, ctx) -> StructInfo:
    check_num_args(call, 3)
    x = tensor_arg(call, 0, "x")
    for i, what in ((1, "min"), (2, "max")):
        s = arg_sinfo(call, i)
        if not isinstance(s, PrimStructInfo | TensorStructInfo):
            fail(call, f"expects the {what} bound to be an R.Prim value, got {fmt_sinfo(s)}",
                 type_error=True)
    return x


register_op_rule("relax.clip", _infer_clip, pattern=OpPattern.ELEMWISE, num_inputs=3,
                 arguments=("x", "min", "max"))


def clip(x: Expr, min, max) -> Call:  # noqa: A002 - TVM's parameter names
    """Clamp every element of ``x`` into ``[min, max]``."""
    lo = min if isinstance(min, Expr) else PrimValue(min)
    hi = max if isinstance(max, Expr) else PrimValue(max)
    return Call(Op.get("relax.clip"), [x, lo, hi])
