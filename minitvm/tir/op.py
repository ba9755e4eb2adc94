"""Intrinsic helpers of ``tvm.tir``: ``tir.exp(x)``, ``tir.if_then_else(...)``, min/max values."""

from __future__ import annotations

import numpy as np

from .expr import (
    NE,
    And,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Not,
    Or,
    PrimExpr,
    Select,
    StringImm,
    _to_expr,
    _unify,
)

# Float intrinsics with one argument: they keep the argument's dtype.
UNARY_FLOAT_OPS = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "tanh", "sigmoid", "sqrt", "rsqrt",
    "erf", "fabs", "floor", "ceil", "round", "trunc", "nearbyint", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
)
BINARY_FLOAT_OPS = ("pow", "atan2", "copysign", "fmod", "hypot", "nextafter")
BOOL_OPS = ("isnan", "isinf", "isfinite")


def call_intrin(dtype: str, func_name: str, *args, span=None) -> Call:
    """Call the intrinsic ``func_name`` (``"tir.exp"`` or ``"exp"``) returning ``dtype``."""
    name = func_name if func_name.startswith("tir.") else "tir." + func_name
    return Call(dtype, name, args)


def call_extern(dtype: str, func_name: str, *args, span=None) -> Call:
    """Call the C function ``func_name`` (resolved in the process when the kernel is built)."""
    return Call(dtype, "tir.call_extern", (StringImm(func_name), *args))


def call_pure_extern(dtype: str, func_name: str, *args, span=None) -> Call:
    return Call(dtype, "tir.call_pure_extern", (StringImm(func_name), *args))


def _make_unary(name: str):
    def f(x, span=None) -> PrimExpr:
        x = _to_expr(x)
        if not x.dtype.startswith(("float", "bfloat")):
            x = Cast("float32", x)
        return Call(x.dtype, "tir." + name, (x,))

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` of a floating-point expression."
    return f


def _make_binary(name: str):
    def f(x, y, span=None) -> PrimExpr:
        x, y = _unify(x, y)
        return Call(x.dtype, "tir." + name, (x, y))

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` of two floating-point expressions."
    return f


def _make_bool(name: str):
    def f(x, span=None) -> PrimExpr:
        return Call("bool", "tir." + name, (_to_expr(x),))

    f.__name__ = name
    return f


_ns = globals()
for _n in UNARY_FLOAT_OPS:
    _ns[_n] = _make_unary(_n)
for _n in BINARY_FLOAT_OPS:
    _ns[_n] = _make_binary(_n)
for _n in BOOL_OPS:
    _ns[_n] = _make_bool(_n)
power = _ns["pow"]


def abs(x, span=None) -> PrimExpr:  # noqa: A001
    """Absolute value: ``tir.fabs`` for floats, a select for integers."""
    x = _to_expr(x)
    if x.dtype.startswith(("float", "bfloat")):
        return Call(x.dtype, "tir.fabs", (x,))
    if x.dtype.startswith(("uint", "bool")):
        return x
    return Select(x < 0, -x, x)


def if_then_else(cond, t, f, span=None) -> PrimExpr:
    """Conditional whose untaken branch is not evaluated (safe for guarded loads)."""
    t, f = _unify(t, f)
    return Call(t.dtype, "tir.if_then_else", (_to_expr(cond), t, f))


def likely(cond, span=None) -> PrimExpr:
    cond = _to_expr(cond)
    return Call(cond.dtype, "tir.likely", (cond,))


def reinterpret(dtype: str, value, span=None) -> PrimExpr:
    return Call(dtype, "tir.reinterpret", (_to_expr(value),))


def _bitwise(name: str):
    def f(x, y=None, span=None) -> PrimExpr:
        if y is None:
            x = _to_expr(x)
            return Call(x.dtype, "tir." + name, (x,))
        x, y = _unify(x, y)
        return Call(x.dtype, "tir." + name, (x, y))

    f.__name__ = name
    return f


bitwise_and = _bitwise("bitwise_and")
bitwise_or = _bitwise("bitwise_or")
bitwise_xor = _bitwise("bitwise_xor")
bitwise_not = _bitwise("bitwise_not")
shift_left = _bitwise("shift_left")
shift_right = _bitwise("shift_right")


def min(a, b, span=None) -> PrimExpr:  # noqa: A001
    return Min(a, b)


def max(a, b, span=None) -> PrimExpr:  # noqa: A001
    return Max(a, b)


def floordiv(a, b, span=None) -> PrimExpr:
    return FloorDiv(a, b)


def floormod(a, b, span=None) -> PrimExpr:
    return FloorMod(a, b)


def truncdiv(a, b, span=None) -> PrimExpr:
    return Div(a, b)


def truncmod(a, b, span=None) -> PrimExpr:
    return Mod(a, b)


indexdiv = floordiv
indexmod = floormod


def div(a, b, span=None) -> PrimExpr:
    return Div(a, b)


def all(*args, span=None) -> PrimExpr:  # noqa: A001
    """Logical and of the arguments."""
    out = _to_expr(args[0])
    for a in args[1:]:
        out = And(out, a)
    return out


def any(*args, span=None) -> PrimExpr:  # noqa: A001
    """Logical or of the arguments."""
    out = _to_expr(args[0])
    for a in args[1:]:
        out = Or(out, a)
    return out


def truth(x) -> PrimExpr:
    """``x`` as a bool: itself when bool, else ``x != 0`` (a number's truth, as numpy's)."""
    x = _to_expr(x)
    if x.dtype == "bool":
        return x
    zero = FloatImm(x.dtype, 0.0) if x.dtype.startswith(("float", "bfloat")) else IntImm(x.dtype, 0)
    return NE(x, zero)


def same_dtype(v: PrimExpr, dtype: str) -> PrimExpr:
    """``v`` cast to ``dtype`` unless it already is (a logical op's 0 / 1 in its operand's
    dtype, which Relay's and Relax's type rules keep)."""
    return v if v.dtype == dtype else Cast(dtype, v)


def logical_not(x, span=None) -> PrimExpr:
    """``not x`` (bool); a number is negated by its truth (``x == 0``), never bitwise."""
    return Not(truth(x))


def logical_and(a, b, span=None) -> PrimExpr:
    """``a and b`` (bool) of the operands' truths."""
    return And(truth(a), truth(b))


def logical_or(a, b, span=None) -> PrimExpr:
    """``a or b`` (bool) of the operands' truths."""
    return Or(truth(a), truth(b))


def logical_xor(a, b, span=None) -> PrimExpr:
    """``a xor b`` (bool) of the operands' truths."""
    return NE(truth(a), truth(b))


def max_value(dtype: str, span=None) -> PrimExpr:
    """The largest finite value of ``dtype``."""
    if dtype == "bool":
        return IntImm("bool", 1)
    if dtype.startswith(("float", "bfloat")):
        return FloatImm(dtype, float(np.finfo(np.dtype(dtype)).max))
    return IntImm(dtype, int(np.iinfo(np.dtype(dtype)).max))


def min_value(dtype: str, span=None) -> PrimExpr:
    """The smallest finite value of ``dtype``."""
    if dtype == "bool":
        return IntImm("bool", 0)
    if dtype.startswith(("float", "bfloat")):
        return FloatImm(dtype, float(np.finfo(np.dtype(dtype)).min))
    return IntImm(dtype, int(np.iinfo(np.dtype(dtype)).min))


def infinity(dtype: str, span=None) -> PrimExpr:
    return FloatImm(dtype, float("inf"))


__all__ = [
    "call_intrin", "call_extern", "call_pure_extern", "abs", "if_then_else", "likely",
    "reinterpret", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left",
    "shift_right", "min", "max", "floordiv", "floormod", "truncdiv", "truncmod", "indexdiv",
    "indexmod", "div", "all", "any", "truth", "same_dtype", "logical_not", "logical_and",
    "logical_or", "logical_xor", "max_value", "min_value", "infinity", "power",
    *UNARY_FLOAT_OPS, *BINARY_FLOAT_OPS, *BOOL_OPS,
]
