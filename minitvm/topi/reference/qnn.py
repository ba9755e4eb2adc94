"""Numpy references of the quantized (``qnn.*``) operators, with the exact semantics of their
canonical integer lowering: quantize rounds half to even (``round``); requantize with the
``int64`` compute dtype (TVM's default) multiplies ``q - zp`` (int32) by TVM's fixed-point form of
the scale ratio (a 31-bit significand and a shift) in int64 and rounds half up ("UPWARD") or half
away from zero ("TONEAREST") at the shift, with the ``float32`` / ``float64`` compute dtypes in
float64; integer products accumulate in int32, results saturate to the output dtype."""

from __future__ import annotations

import numpy as np

from ..utils import reference
from .nn import conv2d_nchw
from .utils import np_from_primal, np_to_primal


def dtype_range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def per_axis(v, axis: int, ndim: int) -> np.ndarray:
    """A scalar or a 1-D per-channel parameter shaped to broadcast along ``axis``."""
    v = np.asarray(v)
    if v.ndim == 0 or v.size == 1:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = v.size
    return v.reshape(shape)


def round_mode(x: np.ndarray, rounding: str) -> np.ndarray:
    if rounding in ("TONEAREST",):
        return np.sign(x) * np.floor(np.abs(x) + 0.5)
    return np.floor(x + 0.5)  # "UPWARD" (TVM's default, also for "None")


def fixed_point_multiplier_shift(ratio) -> tuple[np.ndarray, np.ndarray]:
    """TVM's fixed-point form of float64 ``ratio`` (elementwise): ``ratio ~= m * 2**(s - 31)``
    with ``m`` the significand of ``frexp`` times 2**31 rounded half away from zero (2**31
    itself becomes 2**30 with ``s + 1``); 0 for a zero ratio."""
    sig, exp = np.frexp(np.asarray(ratio, "float64"))
    m = np.sign(sig) * np.floor(np.abs(sig) * 2.0 ** 31 + 0.5)
    carry = m == 2.0 ** 31
    return (np.where(carry, m / 2, m).astype("int64"),
            (exp + carry.astype(exp.dtype)).astype("int64"))


def fixed_point_multiply_values(x, m, s, rounding: str) -> np.ndarray:
    """int32 ``x`` times ``m * 2**(s - 31)`` (arrays broadcasting together) as TVM's int64
    lowering computes it: ``x << max(s, 0)``, times ``m``, plus the rounding offset (half, or
    half - 1 for negative products under "TONEAREST"), arithmetic shift right by
    ``31 + max(-s, 0)``, wrapped to int32."""
    x = np.asarray(x).astype("int64")
    s = np.asarray(s, "int64")
    total = 31 + np.maximum(-s, 0)
    with np.errstate(over="ignore"):
        prod = (x << np.maximum(s, 0)) * np.asarray(m, "int64")
        half = np.int64(1) << (total - 1)
        if rounding == "TONEAREST":
            half = np.where(prod >= 0, half, half - 1)
        return ((prod + half) >> total).astype("int32")


def requantize_values(q, in_scale, in_zp, out_scale, out_zp, axis, rounding, out_dtype,
                      saturate: bool = True, compute: str = "float64") -> np.ndarray:
    """``q`` requantized; ``compute="int64"`` is TVM's fixed-point lowering (int32 values
    unsaturated when ``saturate`` is False), other compute dtypes multiply in float64."""
    nd = np.ndim(q)
    if compute == "int64":
        in_s = per_axis(in_scale, axis, nd).astype("float32")
        out_s = per_axis(out_scale, axis, nd).astype("float32")
        shifted = (np.asarray(q).astype("int32")
                   - per_axis(in_zp, axis, nd).astype("int32"))
        ratio = in_s.astype("float64") / out_s.astype("float64")
        m, s = fixed_point_multiplier_shift(ratio)
        scaled = np.where(in_s == out_s, shifted,
                          fixed_point_multiply_values(shifted, m, s, rounding))
        with np.errstate(over="ignore"):
            out = scaled.astype("int32") + per_axis(out_zp, axis, nd).astype("int32")
        if saturate:
            lo, hi = dtype_range(out_dtype)
            out = np.clip(out, lo, hi)
            return out.astype(out_dtype)
        return out
    mult = (per_axis(in_scale, axis, nd).astype("float64")
            / per_axis(out_scale, axis, nd).astype("float64"))
    shifted = np.asarray(q).astype("int64") - per_axis(in_zp, axis, nd).astype("int64")
    out = round_mode(shifted.astype("float64") * mult, rounding) \
        + per_axis(out_zp, axis, nd).astype("float64")
    if saturate:
        lo, hi = dtype_range(out_dtype)
        out = np.clip(out, lo, hi)
    return out.astype(out_dtype)


@reference("qnn.quantize")
def _quantize(attrs, args, out_type):
    data, scale, zp = args
    nd = np.ndim(data)
    q = np.round(data.astype("float32") / per_axis(scale, attrs.axis, nd).astype("float32"))
    q = q + per_axis(zp, attrs.axis, nd).astype("float32")
    lo, hi = dtype_range(out_type.dtype)
    return np.clip(q, lo, hi).astype(out_type.dtype)


@reference("qnn.dequantize")
def _dequantize(attrs, args, out_type):
    data, scale, zp = args
    nd = np.ndim(data)
    shifted = data.astype("int32") - per_axis(zp, attrs.axis, nd).astype("int32")
    return (shifted.astype("float32")
            * per_axis(scale, attrs.axis, nd).astype("float32")).astype(out_type.dtype)


@reference("qnn.requantize")
def _requantize(attrs, args, out_type):
    data, in_scale, in_zp, out_scale, out_zp = args
    compute = attrs.compute_dtype if attrs.compute_dtype not in (None, "None") else "int64"
    return requantize_values(data, in_scale, in_zp, out_scale, out_zp, attrs.axis,
                             attrs.rounding, out_type.dtype, compute=compute)


@reference("qnn.simulated_quantize")
def _simulated_quantize(attrs, args, out_type):
    data, scale, zp = args
    nd = np.ndim(data)
    q = np.round(data / per_axis(scale, attrs.axis, nd)) + per_axis(zp, attrs.axis, nd)
    lo, hi = dtype_range(attrs.out_dtype)
    return np.clip(q, lo, hi).astype(out_type.dtype)


@reference("qnn.simulated_dequantize")
def _simulated_dequantize(attrs, args, out_type):
    data, scale, zp = args
    nd = np.ndim(data)
    return ((data - per_axis(zp, attrs.axis, nd)) * per_axis(scale, attrs.axis, nd)).astype(
        out_type.dtype)


@reference("qnn.conv2d")
def _qnn_conv2d(attrs, args, out_type):
    data, kernel, izp, kzp = args[:4]
    x = np_to_primal(data.astype("int32") - np.asarray(izp).astype("int32"),
                     attrs.data_layout, "NCHW")
    w = np_to_primal(kernel, attrs.kernel_layout, "OIHW").astype("int32")
    w = w - per_axis(kzp, 0, 4).astype("int32")
    pt, pl, pb, pr = (int(p) for p in attrs.padding)
    out = conv2d_nchw(x, w, tuple(int(s) for s in attrs.strides), (pt, pl, pb, pr),
                      tuple(int(d) for d in attrs.dilation), int(attrs.groups), "int32")
    return np_from_primal(out, "NCHW", attrs.out_layout or attrs.data_layout).astype(
        out_type.dtype)


@reference("qnn.dense")
def _qnn_dense(attrs, args, out_type):
    data, weight, izp, kzp = args[:4]
    x = data.astype("int64") - np.asarray(izp).astype("int64")
    w = weight.astype("int64") - per_axis(kzp, 0, 2).astype("int64")
    return (x @ w.T).astype(out_type.dtype)


def _binary(attrs, args, out_type, combine):
    lhs, rhs, ls, lzp, rs, rzp, os_, ozp = args
    return combine(lhs, rhs, ls, lzp, rs, rzp, os_, ozp, attrs, out_type.dtype)


def _add(lhs, rhs, ls, lzp, rs, rzp, os_, ozp, attrs, dtype, sign=1, compute="int64"):
    """Both sides requantized to the output's parameters (half up, unsaturated: int32 under
    the ``int64`` compute dtype, float64 otherwise), combined, the zero point taken once."""
    a = requantize_values(lhs, ls, lzp, os_, ozp, attrs.lhs_axis, "UPWARD", "float64", False,
                          compute)
    b = requantize_values(rhs, rs, rzp, os_, ozp, attrs.rhs_axis, "UPWARD", "float64", False,
                          compute)
    out = (a.astype("int64") + sign * b.astype("int64") - sign * np.asarray(ozp).astype("int64")
           if compute == "int64" else a + sign * b - sign * np.asarray(ozp).astype("float64"))
    lo, hi = dtype_range(dtype)
    return np.clip(out, lo, hi).astype(dtype)


@reference("qnn.add")
def _qnn_add(attrs, args, out_type):
    return _binary(attrs, args, out_type, _add)


@reference("qnn.subtract")
def _qnn_subtract(attrs, args, out_type):
    return _binary(attrs, args, out_type,
                   lambda *a: _add(*a, sign=-1))


@reference("qnn.mul")
def _qnn_mul(attrs, args, out_type, compute: str = "int64"):
    lhs, rhs, ls, lzp, rs, rzp, os_, ozp = args
    nd = max(np.ndim(lhs), np.ndim(rhs))
    a = lhs.astype("int64") - per_axis(lzp, attrs.lhs_axis, np.ndim(lhs)).astype("int64")
    b = rhs.astype("int64") - per_axis(rzp, attrs.rhs_axis, np.ndim(rhs)).astype("int64")
    if compute == "int64" and np.size(ls) == 1 and np.size(rs) == 1:
        # TVM: the int32 product requantized from the float32 product of the scales
        scale = np.float32(np.asarray(ls, "float32").reshape(()) *
                           np.asarray(rs, "float32").reshape(()))
        return requantize_values((a * b).astype("int32"), scale, 0, os_, ozp, -1, "UPWARD",
                                 out_type.dtype, compute="int64")
    scale = (per_axis(ls, attrs.lhs_axis, nd).astype("float64")
             * per_axis(rs, attrs.rhs_axis, nd).astype("float64"))
    return requantize_values((a * b).astype("int32"), scale, 0, os_, ozp, -1, "UPWARD",
                             out_type.dtype)  # per-channel scales: the product's scale


@reference("qnn.concatenate")
def _qnn_concatenate(attrs, args, out_type, compute: str = "int64"):
    data, scales, zps, os_, ozp = args
    parts = [requantize_values(d, s, z, os_, ozp, -1, "UPWARD", out_type.dtype,
                               compute=compute) for d, s, z in zip(data, scales, zps)]
    return np.concatenate(parts, axis=int(attrs.axis))
