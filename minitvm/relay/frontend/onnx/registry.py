"""The ONNX operator table (op_type -> converter) and the context converters receive."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ... import expr as _expr
from ..common import ImportError_, const_value, infer_dtype, infer_shape

__all__ = ["CONVERTERS", "register", "Context", "onnx_dtype", "NeedsConstantInput"]

# op_type -> converter(ctx, inputs, attrs) -> Expr | list[Expr]
CONVERTERS: dict[str, Callable] = {}


def register(*op_types: str):
    """Register one converter under one or more ONNX op types."""

    def deco(fn):
        for name in op_types:
            CONVERTERS[name] = fn
        return fn

    return deco


_ONNX_DTYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
}


def onnx_dtype(code: int) -> str:
    """The dtype name of an ONNX TensorProto element type."""
    if code not in _ONNX_DTYPES:
        raise ImportError_(f"ONNX element type {code} is not supported (supported: "
                           f"{', '.join(sorted(set(_ONNX_DTYPES.values())))})")
    return _ONNX_DTYPES[code]


class NeedsConstantInput(ImportError_):
    """A graph input is used where a constant is required (a shape, axes, pads, ...).

    ``input_name`` names it: a caller that knows the input's value (the ONNX backend, at run
    time) can re-import with that input bound as a constant.
    """

    def __init__(self, message: str, input_name: str):
        super().__init__(message)
        self.input_name = input_name


class Context:
    """What a converter may ask about: the opset, the node, static shapes and constants."""

    def __init__(self, opset: int, fold, graph_inputs=()):
        self.opset = opset
        self.fold = fold
        self.node = None
        self.graph_inputs = set(graph_inputs)

    def where(self) -> str:
        n = self.node
        return f"{n.op_type} node {n.name!r}" if n is not None and n.name else (
            n.op_type if n is not None else "?")

    def fail(self, detail: str) -> ImportError_:
        return ImportError_(f"{self.where()}: {detail}")

    def shape(self, e) -> tuple[int, ...]:
        return infer_shape(e)

    def ndim(self, e) -> int:
        return len(infer_shape(e))

    def dtype(self, e) -> str:
        return infer_dtype(e)

    def value(self, e, what: str) -> np.ndarray:
        """The constant value of an input, or a clear error saying it must be constant."""
        e = self.fold(e)
        v = const_value(e)
        if v is None and e in self.graph_inputs:
            raise NeedsConstantInput(
                f"{self.where()}: {what} must be a constant, but it is the graph input "
                f"{e.name_hint!r}: bind it with from_onnx(..., const_inputs={{"
                f"'{e.name_hint}': value}})", e.name_hint)
        if v is None:
            raise self.fail(f"{what} must be a constant (or computable from static shapes); "
                            "dynamic values are not supported")
        return v

    def maybe_value(self, e) -> np.ndarray | None:
        return None if e is None else const_value(self.fold(e))

    @staticmethod
    def const(value, dtype: str | None = None):
        arr = np.asarray(value, dtype=dtype)
        return _expr.const(arr, str(arr.dtype))
