"""Numpy references of the elementwise and broadcast operators (math, compare, cast, init ops)."""

from __future__ import annotations

import math

import numpy as np

from ..utils import reference
from .fp_errors import quietly


def _cast_out(fn):
    """Wrap a numpy ufunc so the result has the output type's dtype."""

    def impl(attrs, args, out_type):
        out = quietly(fn, *args)  # (np.errstate(all="ignore"), cheaper per call)
        return np.asarray(out).astype(out_type.dtype, copy=False)

    return impl


def _round_half_even(x):
    return np.round(x)


def _erf(x):
    """The error function; scipy's vectorized one when present, else a per-element loop."""
    try:
        from scipy.special import erf as sp_erf
    except ImportError:  # pragma: no cover - scipy is optional
        flat = np.asarray(x, dtype="float64").ravel()
        out = np.array([math.erf(v) for v in flat], dtype="float64")
        return out.reshape(np.shape(x))
    return sp_erf(x)


def _int_trunc_divide(a, b):
    """Exact truncating integer division (no float round trip, so int64 stays exact); ``x / 0``
    gives 0 and ``INT_MIN / -1`` wraps to INT_MIN, the values compiled code gives."""
    a, b = np.asarray(a), np.asarray(b)
    dt = np.result_type(a, b)
    with np.errstate(all="ignore"):
        zero = b == 0
        bs = np.where(zero, 1, b).astype(dt)
        q = np.floor_divide(a, bs)
        r = a - q * bs
        q = q + ((r != 0) & ((a < 0) != (bs < 0))).astype(dt)
        return np.where(zero, np.zeros((), dt), q).astype(dt)


def _divide(a, b):
    if np.issubdtype(np.result_type(a, b), np.integer):
        return _int_trunc_divide(a, b)
    return np.true_divide(a, b)


def _floor_divide(a, b):
    if np.issubdtype(np.result_type(a, b), np.integer):
        return np.floor_divide(a, b)
    return np.floor(np.true_divide(a, b))


# ------------------------------------------------------------------ unary / binary ufuncs
UNARY = {
    "exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh, "erf": _erf, "negative": np.negative, "abs": np.abs, "floor": np.floor,
    "ceil": np.ceil, "round": _round_half_even, "trunc": np.trunc, "sign": np.sign,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "fast_exp": np.exp, "fast_tanh": np.tanh,
    "fast_erf": _erf, "logical_not": np.logical_not, "bitwise_not": np.invert,
    "copy": np.copy, "stop_gradient": np.copy,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _divide,
    "floor_divide": _floor_divide, "mod": np.fmod, "floor_mod": np.mod, "power": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift, "atan2": np.arctan2,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}

for _name, _fn in {**UNARY, **BINARY}.items():
    reference(_name)(_cast_out(_fn))


# ------------------------------------------------------------------ where / clip / cast
@reference("where")
def _where(attrs, a, t):
    return np.where(a[0], a[1], a[2]).astype(t.dtype)


def clip_range(a_min: float, a_max: float, dtype) -> tuple:
    """``clip``'s bounds as values of ``dtype``: floats as given; for an integer dtype
    truncated toward zero (TVM casts the double attributes to the dtype, C's conversion) and
    saturated into the dtype's range (TVM's IntImm refuses a bound outside it; a bound below
    or above every value of the type clips nothing there). One rule for the compiled kernel
    (``topi.tensor.clip_bounds``) and the numpy references."""
    dt = np.dtype(str(dtype))
    if dt.kind not in "iub":
        return float(a_min), float(a_max)
    low, high = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
    lo = low if a_min <= low else min(math.trunc(a_min), high)
    hi = high if a_max >= high else max(math.trunc(a_max), low)
    return lo, hi


def clip_values(x: np.ndarray, a_min: float, a_max: float) -> np.ndarray:
    """``clip`` of ``x`` by the rule of ``clip_range``, in ``x``'s own dtype (no detour
    through float64, which would round int64 values)."""
    x = np.asarray(x)
    lo, hi = clip_range(a_min, a_max, x.dtype)
    if x.dtype.kind == "b":
        return np.minimum(np.maximum(x, bool(lo)), bool(hi))
    return np.minimum(np.maximum(x, np.asarray(lo, x.dtype)), np.asarray(hi, x.dtype))


@reference("clip")
def _clip(attrs, a, t):
    return clip_values(a[0], float(attrs.a_min), float(attrs.a_max)).astype(t.dtype)


def float_to_int(x, dtype) -> np.ndarray:
    """Cast ``x`` to ``dtype`` with one defined result for every float input, so compiled code
    (which follows the same rule) and this reference agree: C leaves NaN and out-of-range
    conversions undefined and numpy's answer for them varies by platform. Truncate toward zero
    through int32 (int64 for 64-bit targets and uint32); NaN or a value outside that range
    gives its minimum (x86's "integer indefinite"); then wrap to the target width. uint64 also
    takes [2**63, 2**64) exactly. In-range values convert as numpy converts them."""
    x, dt = np.asarray(x), np.dtype(dtype)
    if x.dtype.kind != "f" or dt.kind not in "iu":
        return quietly(x.astype, dt)
    xf = x.astype(np.float64)
    wide = np.int64 if dt.itemsize == 8 or (dt.kind == "u" and dt.itemsize == 4) else np.int32
    half = float(-np.iinfo(wide).min)
    ok = (xf >= -half) & (xf < half)
    r = np.where(ok, np.trunc(np.where(ok, xf, 0.0)), np.iinfo(wide).min).astype(wide)
    if dt == np.uint64:
        big = (xf >= 2.0 ** 63) & (xf < 2.0 ** 64)
        shifted = np.trunc(np.where(big, xf - 2.0 ** 63, 0.0)).astype(np.int64)
        r = np.where(big, shifted.view(np.uint64) | np.uint64(2 ** 63), r.view(np.uint64))
    return r.astype(dt)


@reference("cast")
@reference("cast_like")
def _cast(attrs, a, t):
    return float_to_int(a[0], t.dtype)


@reference("reinterpret")
def _reinterpret(attrs, a, t):
    # (np.ascontiguousarray makes a 0-d array 1-d: a scalar's bit cast came back shape (1,))
    x = np.asarray(a[0])
    return (x if x.flags.c_contiguous else x.copy(order="C")).view(t.dtype)


# ------------------------------------------------------------------ init ops
@reference("zeros_like")
def _zeros_like(attrs, a, t):
    return np.zeros(a[0].shape, t.dtype)


@reference("ones_like")
def _ones_like(attrs, a, t):
    return np.ones(a[0].shape, t.dtype)


@reference("full_like")
def _full_like(attrs, a, t):
    return np.full(a[0].shape, a[1], t.dtype)


@reference("zeros")
def _zeros(attrs, a, t):
    return np.zeros(tuple(t.shape), t.dtype)


@reference("ones")
def _ones(attrs, a, t):
    return np.ones(tuple(t.shape), t.dtype)


@reference("full")
def _full(attrs, a, t):
    return np.full(tuple(t.shape), a[0], t.dtype)
