"""DEQUANTIZE and QUANTIZE of float tensors (float16 weights, dynamic-range and QUANTIZE ->
DEQUANTIZE pairs) as LiteRT rounds them."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ..common import infer_dtype
from .op_context import _fconst, _out_dtype, register
from .tensor_data import _per_axis, infer_shape, quant_params


@register("DEQUANTIZE")
def _dequantize(ctx):
    """float16 -> float32, or (q - zero_point) * scale for an int8/uint8/int16 tensor; an 8-bit
    tensor with one scale and a zero point as LiteRT rounds it (q * scale - zero_point * scale
    in float32: 71-164 of the 256 values an ulp off the product form)."""
    x = ctx.inputs[0]
    t = ctx.importer.subgraph.Tensors(ctx.input_ids[0])
    q = quant_params(t)
    if q is None:
        return _op.cast(x, "float32")
    scale, zp, dim = q
    ndim = len(infer_shape(x))
    xf = _op.cast(x, "float32")
    if scale.size == 1 and np.any(zp) and infer_dtype(x) in ("int8", "uint8"):
        # LiteRT's float32 values: q * scale - zero_point * scale, each product rounded (the
        # codegen may contract that into one fused multiply-add, so a 256-entry table)
        lo = -128 if infer_dtype(x) == "int8" else 0
        s = scale.reshape(()).astype("float32")
        q = np.arange(lo, lo + 256).astype("float32")
        table = q * s - np.float32(zp.reshape(-1)[0]) * s
        index = _op.cast(x, "int32")
        if lo:
            index = _op.subtract(index, _expr.const(np.array(lo, "int32"), "int32"))
        return _op.take(_expr.const(table.astype("float32")), index, axis=0, mode="fast")
    if np.any(zp):
        xf = _op.subtract(xf, _per_axis(zp, dim, ndim, "float32"))
    return _op.multiply(xf, _per_axis(scale, dim, ndim, "float32"))


_QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def round_half_away(v):
    """Rounding half away from zero (C's round, TFLite's TfLiteRound), exactly: the
    fraction ``v - trunc(v)`` is exact in float, so no ``floor(v + 0.5)`` carry at
    0.49999997."""
    t = _op.trunc(v)
    return _op.where(_op.greater_equal(_op.abs(_op.subtract(v, t)), _fconst(0.5)),
                     _op.add(t, _op.sign(v)), t)


@register("QUANTIZE")
def _quantize(ctx):
    """float -> round(x / scale) + zero_point (rounding half away from zero, as TFLite's
    AffineQuantize), saturated to the output type."""
    t = ctx.importer.subgraph.Tensors(int(ctx.op.Outputs(0)))
    q = quant_params(t)
    dtype = _out_dtype(ctx)
    if q is None or dtype not in _QRANGE:
        raise ctx.fail(f"needs a quantized int8/uint8/int16 output, got {dtype}")
    if ctx.importer.subgraph.Tensors(ctx.input_ids[0]).Type() != 0:
        raise ctx.fail("requantizing an already quantized tensor is not supported")
    scale, zp, dim = q
    ndim = len(infer_shape(ctx.inputs[0]))
    v = round_half_away(_op.divide(ctx.inputs[0], _per_axis(scale, dim, ndim, "float32")))
    v = _op.add(v, _per_axis(zp, dim, ndim, "float32"))
    lo, hi = _QRANGE[dtype]
    return _op.cast(_op.clip(v, float(lo), float(hi)), dtype)
