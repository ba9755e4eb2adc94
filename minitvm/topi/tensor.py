"""Computes of the elementwise and broadcast operators (relay/op/tensor.py)."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .broadcast import int_or_float_power
from .math import UNARY_FUNCS
from .reference.tensor import clip_range
from .utils import (
    compute,
    fast_erf,
    fast_exp,
    fast_tanh,
    fconst,
    load_bcast,
    out_dims,
    out_tensor_types,
)


def _float(x):
    return x if x.dtype.startswith("float") else E.Cast("float32", x)


def _log(x):
    return tir_op.log(x)


def _sign(x):
    s = E.Select(x > fconst(0, x.dtype), fconst(1, x.dtype),
                 E.Select(x < fconst(0, x.dtype), fconst(-1, x.dtype), fconst(0, x.dtype)))
    return E.Select(tir_op.isnan(x), x, s) if x.dtype.startswith("float") else s  # sign(nan)=nan


_UNARY = {
    "negative": lambda x: -x,
    # exp/tanh/erf/sigmoid: the IEEE intrinsics (codegen's vmath: inf/nan propagate, no early
    # overflow); the fast_* variants are FastMath's approximations
    "exp": tir_op.exp, "fast_exp": fast_exp,
    "log": _log, "log2": tir_op.log2, "log10": tir_op.log10,
    "sqrt": tir_op.sqrt, "rsqrt": lambda x: E.FloatImm(x.dtype, 1.0) / tir_op.sqrt(x),
    "tanh": tir_op.tanh, "fast_tanh": fast_tanh, "sigmoid": tir_op.sigmoid,
    "erf": tir_op.erf, "fast_erf": fast_erf,
    "abs": tir_op.abs, "floor": tir_op.floor, "ceil": tir_op.ceil, "trunc": tir_op.trunc,
    "round": tir_op.round, "sin": tir_op.sin, "cos": tir_op.cos, "tan": tir_op.tan,
    "asin": tir_op.asin, "acos": tir_op.acos, "atan": tir_op.atan, "sinh": tir_op.sinh,
    "cosh": tir_op.cosh, "asinh": tir_op.asinh, "acosh": tir_op.acosh, "atanh": tir_op.atanh,
    "copy": lambda x: x, "stop_gradient": lambda x: x,
    "nn.relu": lambda x: E.Max(x, fconst(0, x.dtype)),
    "sign": lambda x: _sign(x),
    # (one rule with Relax's ``topi.logical_not``: the negated truth in the operand's dtype,
    # as Relay's identity type relation and TVM's Relax type rule keep it)
    "logical_not": UNARY_FUNCS["logical_not"],
    "bitwise_not": tir_op.bitwise_not,
    "isnan": tir_op.isnan, "isinf": tir_op.isinf, "isfinite": tir_op.isfinite,
}


def _floor_div(a, b):
    if a.dtype.startswith("float"):
        return tir_op.floor(a / b)
    return E.FloorDiv(a, b)


def _floor_mod(a, b):
    if a.dtype.startswith("float"):
        from .broadcast import float_floor_mod

        return float_floor_mod(a, b)
    return E.FloorMod(a, b)


def _trunc_mod(a, b):
    return E.Mod(a, b)


_BINARY = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b if a.dtype.startswith("float") else E.Div(a, b),
    "floor_divide": _floor_div, "floor_mod": _floor_mod, "mod": _trunc_mod,
    "maximum": E.Max, "minimum": E.Min, "power": int_or_float_power,
    "equal": E.EQ, "not_equal": E.NE, "less": E.LT, "less_equal": E.LE, "greater": E.GT,
    "greater_equal": E.GE, "logical_and": tir_op.logical_and, "logical_or": tir_op.logical_or,
    "logical_xor": tir_op.logical_xor,
    "bitwise_and": tir_op.bitwise_and, "bitwise_or": tir_op.bitwise_or,
    "bitwise_xor": tir_op.bitwise_xor, "left_shift": tir_op.shift_left,
    "right_shift": tir_op.shift_right, "atan2": tir_op.atan2,
}


def _out(out_type):
    t = out_tensor_types(out_type)[0]
    return out_dims(t), t.dtype


def _make_unary(name, f):
    def fcompute(attrs, inputs, out_type):
        shape, dtype = _out(out_type)
        x = inputs[0]
        return [te.compute(shape, lambda *i: _cast_to(f(x[i] if i else x[()]), dtype),
                           name=name.replace(".", "_"))]

    return fcompute


def _cast_to(v, dtype):
    return v if v.dtype == dtype else E.Cast(dtype, v)


def _make_binary(name, f):
    def fcompute(attrs, inputs, out_type):
        shape, dtype = _out(out_type)
        a, b = inputs
        return [te.compute(shape, lambda *i: _cast_to(f(load_bcast(a, i), load_bcast(b, i)),
                                                       dtype), name=name)]

    return fcompute


for _n, _f in _UNARY.items():
    compute(_n)(_make_unary(_n, _f))
for _n, _f in _BINARY.items():
    compute(_n)(_make_binary(_n, _f))


@compute("nn.leaky_relu")
def _leaky_relu(attrs, inputs, out_type):
    shape, dtype = _out(out_type)
    x = inputs[0]
    alpha = E.FloatImm(dtype, float(attrs.alpha))
    return [te.compute(shape, lambda *i: E.Select(x[i] > E.FloatImm(dtype, 0.0), x[i],
                                                  x[i] * alpha), name="leaky_relu")]


def clip_bounds(a_min: float, a_max: float, dtype: str) -> tuple[E.PrimExpr, E.PrimExpr]:
    """``clip``'s bounds as ``dtype`` constants; for integer dtypes truncated (as TVM's
    ``const(a_min, dtype)`` and the numpy reference do) and held in the dtype's range, so the
    float attribute of ``clamp(min=1)`` (a_max = float max, or inf) does not wrap around
    (``reference.tensor.clip_range``: the one rule)."""
    if dtype.startswith(("float", "bfloat")):
        return fconst(a_min, dtype), fconst(a_max, dtype)
    lo, hi = clip_range(a_min, a_max, dtype)
    return E._to_expr(int(lo), dtype), E._to_expr(int(hi), dtype)


@compute("clip")
def _clip(attrs, inputs, out_type):
    shape, dtype = _out(out_type)
    x = inputs[0]
    lo, hi = clip_bounds(float(attrs.a_min), float(attrs.a_max), dtype)
    return [te.compute(shape, lambda *i: E.Min(E.Max(load_bcast(x, i), lo), hi), name="clip")]


def _cast(attrs, inputs, out_type):
    shape, dtype = _out(out_type)
    x = inputs[0]
    return [te.compute(shape, lambda *i: _cast_to(load_bcast(x, i), dtype), name="cast")]


compute("cast")(_cast)
compute("cast_like")(_cast)


@compute("where")
def _where(attrs, inputs, out_type):
    shape, dtype = _out(out_type)
    c, a, b = inputs

    def f(*i):
        cond = load_bcast(c, i)
        if cond.dtype != "bool":
            cond = E.NE(cond, fconst(0, cond.dtype))
        return E.Select(cond, load_bcast(a, i), load_bcast(b, i))

    return [te.compute(shape, f, name="where")]


def _fill(value_of):
    def fcompute(attrs, inputs, out_type):
        shape, dtype = _out(out_type)
        return [te.compute(shape, lambda *i: value_of(attrs, inputs, dtype), name="full")]

    return fcompute


compute("zeros")(_fill(lambda a, x, dt: fconst(0, dt)))
compute("ones")(_fill(lambda a, x, dt: fconst(1, dt)))
compute("zeros_like")(_fill(lambda a, x, dt: fconst(0, dt)))
compute("ones_like")(_fill(lambda a, x, dt: fconst(1, dt)))
compute("full")(_fill(lambda a, x, dt: _cast_to(x[0][()], dt)))
compute("full_like")(_fill(lambda a, x, dt: _cast_to(x[1][()], dt)))
