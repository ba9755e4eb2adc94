"""TVM's ``topi`` elementwise math on te tensors (``topi.exp``, ``topi.cast``, ``topi.nn.relu``...).

Shapes may be symbolic. Stages are named as TVM's Python topi names them (``compute`` over axes
``i0, i1``...; ``T_cast`` over ``ax0``... for the C++ ones), so legalized Relax prints as TVM's.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .broadcast import ax_names, const_like

__all__ = ["unary", "cast", "UNARY_FUNCS", "elemwise"]


def _float(x):
    return x if x.dtype.startswith(("float", "bfloat")) else E.Cast("float32", x)


def _sign(x):
    z = const_like(0, x.dtype)
    s = E.Select(x > z, const_like(1, x.dtype), E.Select(x < z, const_like(-1, x.dtype), z))
    return E.Select(tir_op.isnan(x), x, s) if x.dtype.startswith("float") else s  # sign(nan)


def _round(x):
    return tir_op.round(x) if x.dtype.startswith("float") else x


def _int_safe(f):
    """Rounding functions are the identity on integers (as numpy)."""
    return lambda x: f(x) if x.dtype.startswith("float") else x


#: Relax unary op name -> scalar function (input dtype preserved unless stated)
UNARY_FUNCS = {
    "abs": tir_op.abs,
    "negative": lambda x: -x,
    "exp": tir_op.exp, "log": tir_op.log, "sqrt": tir_op.sqrt,
    "rsqrt": lambda x: const_like(1, x.dtype) / tir_op.sqrt(x),
    "sin": tir_op.sin, "cos": tir_op.cos, "tan": tir_op.tan, "asin": tir_op.asin,
    "acos": tir_op.acos, "atan": tir_op.atan, "sinh": tir_op.sinh, "cosh": tir_op.cosh,
    "asinh": tir_op.asinh, "acosh": tir_op.acosh, "atanh": tir_op.atanh,
    "tanh": tir_op.tanh, "erf": tir_op.erf, "sigmoid": tir_op.sigmoid,
    "floor": _int_safe(tir_op.floor), "ceil": _int_safe(tir_op.ceil),
    "trunc": _int_safe(tir_op.trunc), "round": _round,
    "sign": _sign, "square": lambda x: x * x,
    "logical_not": lambda x: tir_op.same_dtype(tir_op.logical_not(x), x.dtype),
    "bitwise_not": tir_op.bitwise_not,
    "isnan": tir_op.isnan, "isinf": tir_op.isinf, "isfinite": tir_op.isfinite,
    "relu": lambda x: E.Max(x, const_like(0, x.dtype)),
}


def elemwise(x, f, name: str = "compute"):
    """``f`` applied to every element of ``x`` (axes ``i0, i1``... as TVM's Python topi)."""
    if not x.shape:
        return te.compute((), lambda: f(x[()]), name=name)
    return te.compute(x.shape, lambda *i: f(x[i]), name=name)


def unary(name: str, x):
    """The elementwise op ``name`` (a key of ``UNARY_FUNCS``) of te tensor ``x``."""
    return elemwise(x, UNARY_FUNCS[name])


def _unary_api(name: str):
    def fn(x):
        return unary(name, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``topi.{name}``: elementwise {name}."
    return fn


for _n in UNARY_FUNCS:
    globals()[_n] = _unary_api(_n)
    __all__.append(_n)


def cast(x, dtype: str):
    """``topi.cast``: ``x`` converted to ``dtype`` (stage ``T_cast``)."""
    def conv(v):
        if v.dtype == dtype:
            return v
        if dtype == "bool":
            return E.NE(v, const_like(0, v.dtype))
        return E.Cast(dtype, v)

    if not x.shape:
        return te.compute((), lambda: conv(x[()]), name="T_cast")
    return te.compute(x.shape, lambda *i: conv(x[i]), name="T_cast",
                      varargs_names=ax_names(len(x.shape)))



