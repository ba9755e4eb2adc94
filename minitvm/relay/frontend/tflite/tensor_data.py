"""TFLite tensor data as the importer reads it: the flatbuffer's tensor types, a tensor's
quantization parameters, and dequantizing constant data per tensor or per axis."""

from __future__ import annotations

import numpy as np

from ....ir.type import TensorType
from ....tir.expr import IntImm
from ... import expr as _expr
from ..common import ImportError_, infer_type

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


def infer_shape(expr) -> tuple:
    """The shape of a tensor expression, None for a dimension that is not static (the batch of
    a model imported with ``shape_dict={"x": (relay.Any(), ...)}``): the converters read the
    static dims they need (channels, spatial sizes) and handle a None batch where they use it,
    so a model types with ``Any`` and ``relay.vm.compile`` builds it once for every batch."""
    t = infer_type(expr)
    if not isinstance(t, TensorType):
        raise ImportError_(f"expected a tensor, got a value of type {t}")
    return tuple(int(d) if isinstance(d, int | np.integer | IntImm) else None for d in t.shape)
