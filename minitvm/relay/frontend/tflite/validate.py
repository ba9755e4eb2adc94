"""A TFLite model's tables checked before import: every index in range, every constant's bytes
matching its shape, every quantization usable; a malformed file gets one clear ``ImportError_``
naming the subgraph, operator or tensor, not a ``struct.error`` from deep in the converters
(the flatbuffer is read lazily: a damaged offset only fails where it is first followed)."""

from __future__ import annotations

import numpy as np

from ..common import ImportError_
from .tensor_data import _TENSOR_TYPES

__all__ = ["check_model"]

_ZERO_POINT_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
                     "int32": (-2 ** 31, 2 ** 31 - 1)}


def _tensor_name(t, idx: int) -> str:
    return f"tensor {(t.Name() or b'').decode(errors='replace')!r} (index {idx})"


def _check_quantization(t, where: str, dtype: str | None, shape: tuple) -> None:
    q = t.Quantization()
    if q is None or not q.ScaleLength() or dtype not in _ZERO_POINT_RANGE:
        return
    scale = np.asarray(q.ScaleAsNumpy(), "float64")
    if not np.all(np.isfinite(scale) & (scale > 0)):
        raise ImportError_(f"{where}: quantization scale {scale.tolist()} is not a positive "
                           "finite number")
    if q.ZeroPointLength():
        zp = np.asarray(q.ZeroPointAsNumpy(), "int64")
        lo, hi = _ZERO_POINT_RANGE[dtype]
        if np.any((zp < lo) | (zp > hi)):
            raise ImportError_(f"{where}: quantization zero point {zp.tolist()} is outside "
                               f"{dtype}'s range [{lo}, {hi}]")
    if scale.size > 1:
        dim = int(q.QuantizedDimension())
        if not 0 <= dim < len(shape) or shape[dim] != scale.size:
            raise ImportError_(f"{where}: {scale.size} per-channel quantization scales along "
                               f"quantized dimension {dim} of shape {shape}")


def _check_tensors(model, sg, s: int) -> int:
    n_buffers = model.BuffersLength()
    n = sg.TensorsLength()
    for i in range(n):
        t = sg.Tensors(i)
        where = f"subgraph {s} {_tensor_name(t, i)}"
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        if any(d < 0 for d in shape):
            raise ImportError_(f"{where}: negative dimension in shape {shape}")
        dtype = _TENSOR_TYPES.get(t.Type())
        _check_quantization(t, where, dtype, shape)
        b = t.Buffer()
        if not 0 <= b < n_buffers:
            raise ImportError_(f"{where}: buffer index {b} is out of range (the model has "
                               f"{n_buffers} buffers)")
        data = model.Buffers(b).DataAsNumpy() if b else 0
        if dtype is not None and isinstance(data, np.ndarray) and data.size:
            want = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            if data.size != want:
                raise ImportError_(f"{where}: its buffer holds {data.size} bytes; shape "
                                   f"{shape} of {dtype} needs {want}")
    return n


def _check_indices(ids, n: int, what: str, optional: bool) -> None:
    for k, v in enumerate(int(x) for x in ids):
        if not (0 <= v < n or optional and v == -1):
            raise ImportError_(f"{what} {k}: tensor index {v} is out of range (the subgraph "
                               f"has {n} tensors)")


def _check_subgraph(model, s: int, op_name) -> None:
    sg = model.Subgraphs(s)
    n = _check_tensors(model, sg, s)
    n_codes = model.OperatorCodesLength()
    _check_indices(sg.InputsAsNumpy() if sg.InputsLength() else (), n,
                   f"subgraph {s} input", False)
    _check_indices(sg.OutputsAsNumpy() if sg.OutputsLength() else (), n,
                   f"subgraph {s} output", False)
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = op.OpcodeIndex()
        if not 0 <= code < n_codes:
            raise ImportError_(f"subgraph {s} operator {i}: opcode index {code} is out of "
                               f"range (the model has {n_codes} operator codes)")
        name = f"{op_name(model.OperatorCodes(code))} (subgraph {s} operator {i})"
        _check_indices(op.InputsAsNumpy() if op.InputsLength() else (), n,
                       f"{name} input", True)
        _check_indices(op.OutputsAsNumpy() if op.OutputsLength() else (), n,
                       f"{name} output", False)


def check_model(model, op_name) -> None:
    """Raise ``ImportError_`` naming the first malformed table of ``model`` (a
    ``tflite.Model``); ``op_name(operator_code)`` names an operator code."""
    try:
        for s in range(model.SubgraphsLength()):
            _check_subgraph(model, s, op_name)
    except ImportError_:
        raise
    except Exception as e:  # noqa: BLE001 - flatbuffers raises assorted errors on junk
        raise ImportError_(f"malformed TFLite flatbuffer: {type(e).__name__}: {e}") from e
