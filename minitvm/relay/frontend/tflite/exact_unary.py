"""Elementwise quantized operators TFLite computes with kernels of their own (LEAKY_RELU,
HARD_SWISH on int8 / uint8; ABS, SQRT, NEG, RSQRT on int8): their results on all 256 input values,
computed at import step for step as those kernels (``fixed_point``, float32 where the kernel
takes float), become a table the op looks up (one ``take``).

Through float (dequantize, the float op, quantize) they were a step off LiteRT on up to 40 of
the 256 values (LEAKY_RELU alpha 0.1, HARD_SWISH 17 of 256): TFLite rescales in fixed point
(LEAKY_RELU: two multipliers, one per sign) or in 16-bit fixed point with a truncating final
multiply (HARD_SWISH), not by rounding the float result. LiteRT's int8 ABS rescales |x - zero
point| in fixed point (83 of 4096 values a step off through float), its SQRT truncates the
float32 quotient toward zero (1718-2109 of 4096 off), and its NEG negates the stored int8
values, the quantization ignored (-(-128) wraps to -128; every value was off)."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op
from . import fixed_point as fp

OPS = ("LEAKY_RELU", "HARD_SWISH", "ABS", "SQRT", "NEG", "RSQRT")
INT8_ONLY = frozenset({"ABS", "SQRT", "NEG", "RSQRT"})
INT16 = frozenset({"ABS", "NEG", "LEAKY_RELU"})  # (int16 too: a table of 65536)  # (LiteRT has no uint8 kernel for these)


def _values(dtype: str) -> np.ndarray:
    lo, hi = QRANGE[dtype]
    return np.arange(lo, hi + 1, dtype="int64")


def leaky_relu_table(dtype: str, qi, qo, alpha: float) -> np.ndarray:
    """TFLite's QuantizeLeakyRelu on every ``dtype`` value: x - zero point rescaled by
    in_scale / out_scale where >= 0, by in_scale * alpha / out_scale below, + the output's
    zero point, saturated. ``qi`` / ``qo``: (scale, zero point)."""
    si, so, a = (np.float64(np.float32(v)) for v in (qi[0], qo[0], alpha))
    v = _values(dtype) - qi[1]
    pos = fp.multiply(v, *fp.quantize_multiplier(si / so))
    neg = fp.multiply(v, *fp.quantize_multiplier(si * a / so))
    return np.clip(np.where(v >= 0, pos, neg) + qo[1], *QRANGE[dtype])


def hard_swish_table(dtype: str, qi, qo) -> np.ndarray:
    """TFLite's quantized HardSwish on every ``dtype`` value: x - zero point on a 7-bit finer
    scale (int16), times the output multiplier (Q15, rounding) and times the "relu-ish" factor
    (x rescaled so 3.0 is 2**15, saturated to [-1, 1), mapped to [0, 1)) with a truncating
    multiply, then the output shift (rounding half away) and zero point, saturated."""
    f32 = np.float32
    hires = f32(1.0 / 128.0) * f32(qi[0])
    m, out_exp = fp.quantize_multiplier(float(hires / f32(qo[0])))
    out_m16 = fp.downscale_multiplier16(m)
    m, relu_exp = fp.quantize_multiplier(float(hires / f32(3.0 / 32768.0)))
    relu_m16 = fp.downscale_multiplier16(m)
    v = (_values(dtype) - qi[1]) * 128
    pre = fp.rounding_doubling_high_mul16(v, out_m16)
    r = v
    if relu_exp > 0:
        r = fp.saturating_left_shift16(r, relu_exp - 1)
    r = fp.rounding_doubling_high_mul16(r, relu_m16)
    if relu_exp > 0:
        r = fp.saturating_left_shift16(r, 1)
    elif relu_exp < 0:
        r = fp.rounding_divide_by_pot(r, -relu_exp)
    r = (r + (1 << 15)) >> 1
    out = fp.rounding_divide_by_pot(fp.doubling_high_mul16(r, pre), -out_exp)
    return np.clip(out + qo[1], *QRANGE[dtype])


def abs_table(dtype: str, qi, qo) -> np.ndarray:
    """LiteRT's quantized ABS: |x - zero point|, rescaled by in_scale / out_scale (a float32
    quotient made a Q31 multiplier; skipped where the scales are equal), + the output's zero
    point, saturated."""
    v = np.abs(_values(dtype) - qi[1])
    si, so = np.float32(qi[0]), np.float32(qo[0])
    if si != so:
        v = fp.multiply(v, *fp.quantize_multiplier(float(si / so)))
    return np.clip(v + qo[1], *QRANGE[dtype])


def sqrt_table(dtype: str, qi, qo) -> np.ndarray:
    """LiteRT's quantized SQRT, in float32: sqrt(in_scale * (x - zero point)) / out_scale
    truncated toward zero, + the output's zero point, saturated. (LiteRT stops on a negative
    input; those values give the output's zero point here.)"""
    f = np.float32(qi[0]) * (_values(dtype) - qi[1]).astype("float32")
    root = np.sqrt(np.maximum(f, np.float32(0.0)))
    q = np.trunc(root / np.float32(qo[0])).astype("int64") + qo[1]
    return np.clip(np.where(f < 0, qo[1], q), *QRANGE[dtype])


def rsqrt_table(dtype: str, qi, qo) -> np.ndarray:
    """LiteRT's int8 RSQRT: for v = x - zero point > 0, 1 / sqrt(v) as a fixed-point
    multiplier (``inv_sqrt_multiplier_exp``) applied to 1 with 20 bits of headroom, then
    rescaled by 1 / (sqrt(in_scale) * out_scale) (a float32 product, the quotient in double),
    the headroom taken back, + the output's zero point, saturated; v = 0 gives the largest
    value. (LiteRT stops on a negative v; those give the largest value here.)"""
    headroom = 20
    f32 = np.float32
    m0, shift = fp.quantize_multiplier(1.0 / float(np.sqrt(f32(qi[0])) * f32(qo[0])))
    hi = QRANGE[dtype][1]
    out = []
    for v in (_values(dtype) - qi[1]).tolist():
        if v <= 0:
            out.append(hi)
            continue
        im, ishift = fp.inv_sqrt_multiplier_exp(v)
        data = int(fp.multiply(np.int64(1), im, ishift + headroom))
        out.append(int(fp.multiply(np.int64(data), m0, shift - headroom)) + qo[1])
    return np.clip(np.array(out, "int64"), *QRANGE[dtype])


def neg_table(dtype: str) -> np.ndarray:
    """LiteRT's int8 / int16 NEG: the stored values negated, wrapping (-(-128) is -128)."""
    return (-_values(dtype)).astype(dtype)


def lookup(x, table: np.ndarray, in_dtype: str):
    """``table[x - lowest value of in_dtype]`` elementwise: one ``take`` of a 256-entry
    constant."""
    index = _op.cast(x, "int32")
    lo = QRANGE[in_dtype][0]
    if lo:
        index = _op.subtract(index, _expr.const(np.array(lo, "int32"), "int32"))
    return _op.take(_expr.const(table), index, axis=0, mode="fast")


def table(name: str, dtype: str, qi, qo, options) -> np.ndarray:
    """The 256 results of operator ``name`` (one of ``OPS``) in the output's dtype (the same
    as the input's, as TFLite requires)."""
    if name == "LEAKY_RELU":
        alpha = float(options.Alpha()) if options is not None else 0.0
        t = leaky_relu_table(dtype, qi, qo, alpha)
    elif name == "ABS":
        t = abs_table(dtype, qi, qo)
    elif name == "SQRT":
        t = sqrt_table(dtype, qi, qo)
    elif name == "NEG":
        t = neg_table(dtype)
    elif name == "RSQRT":
        t = rsqrt_table(dtype, qi, qo)
    else:
        t = hard_swish_table(dtype, qi, qo)
    return t.astype(dtype)
