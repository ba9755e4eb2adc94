"""TFLite tensor data as the importer reads it: the flatbuffer's tensor types, a tensor's
quantization parameters, and dequantizing constant data per tensor or per axis."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr

_TENSOR_TYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool",
                 7: "int16", 9: "int8", 10: "float64"}


def quant_params(t):
    """(scales, zero points, quantized dim) of a quantized tensor, else None."""
    q = t.Quantization()
    if q is None or not q.ScaleLength():
        return None
    zp = q.ZeroPointAsNumpy() if q.ZeroPointLength() else np.zeros(q.ScaleLength(), "int64")
    return (np.asarray(q.ScaleAsNumpy(), "float32"), np.asarray(zp, "int64"),
            int(q.QuantizedDimension()))


def dequantize_array(data: np.ndarray, q) -> np.ndarray:
    """(data - zero_point) * scale in float32, per tensor or along the quantized dim."""
    scale, zp, dim = q
    shape = [1] * data.ndim
    if scale.size > 1:
        shape[dim] = scale.size
    zp = zp if zp.size == scale.size else np.broadcast_to(zp.reshape(-1)[:1], scale.shape)
    return ((data.astype("float32") - zp.astype("float32").reshape(shape))
            * scale.reshape(shape)).astype("float32")


def _per_axis(v, dim: int, ndim: int, dtype: str):
    """A per-tensor scalar, or a per-axis vector shaped to broadcast along ``dim``."""
    if v.size == 1:
        return _expr.const(np.array(v.reshape(-1)[0], dtype), dtype)
    shape = [1] * ndim
    shape[dim] = v.size
    return _expr.const(v.astype(dtype).reshape(shape), dtype)
