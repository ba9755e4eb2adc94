"""ATen operators -> Relay, shared by the TorchScript importer and the FX (torch.compile) one.

A converter takes the op's arguments in schema order (tensors as Relay expressions; ints,
floats, lists, None, bools as Python values) and returns an expression, a Python value (for
size arithmetic), or a tuple of them. Names are the op names without namespace or overload
("conv2d", "native_layer_norm", ...).

This module holds the table (``ATEN``, ``register``), ``AtenContext`` and the helpers the op
families share (``_pair``, ``_binary``, ``_scalar_like``, ``_norm_dim``, ...); the converters
are in the ``aten_*`` modules, an op family each.
"""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_promote import tensors_dtype, with_number_dtype
from ... import expr as _expr
from ... import op as _op
from ..common import Folder, ImportError_, infer_dtype, infer_shape

__all__ = ["ATEN", "AtenContext", "DType", "torch_dtype"]

ATEN: dict = {}

# c10::ScalarType codes as TorchScript passes them
_SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
                 6: "float32", 7: "float64", 11: "bool"}


class DType(str):
    """A dtype argument (the walkers wrap torch.dtype / ScalarType arguments in it)."""


def torch_dtype(d) -> str:
    """A dtype name from a torch.dtype, a ScalarType code or a string."""
    if d is None:
        return "float32"
    if isinstance(d, DType):
        return str(d)
    if isinstance(d, int):
        if d not in _SCALAR_TYPES:
            raise ImportError_(f"PyTorch scalar type {d} is not supported")
        return _SCALAR_TYPES[d]
    s = str(d).replace("torch.", "")
    return {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32", "bool": "bool"}.get(s, s)


def register(*names):
    def deco(fn):
        for n in names:
            ATEN[n] = fn
        return fn

    return deco


class AtenContext:
    """Shape/dtype queries and constant folding for converters."""

    def __init__(self):
        self.fold = Folder()
        self.op_name = "?"
        # fake quantization as qnn.quantize / qnn.dequantize pairs (from_pytorch's
        # fake_quantize_as_qnn, for FakeQuantizationToInteger; ``aten_fake_quant``)
        self.fake_quantize_as_qnn = False
        # max-pool indices built so far -> their pool's (kernel, stride, padding, dilation),
        # for max_unpool's gather form (frontend_common.unpool_plan)
        self.pool_geometry: dict = {}

    @staticmethod
    def shape(e):
        return infer_shape(e)

    @staticmethod
    def dtype(e):
        return infer_dtype(e)

    def fail(self, detail: str) -> ImportError_:
        return ImportError_(f"aten::{self.op_name}: {detail}")


def _is_expr(v) -> bool:
    return isinstance(v, _expr.Expr)


def _scalar_like(ctx, value, like):
    """``value`` (a number) as a constant of ``like``'s dtype; anything else is refused (a
    ``None`` or a string read as a number became NaN)."""
    if np.asarray(value).dtype.kind not in "biuf":
        raise TypeError(f"expected a number or a tensor, got {type(value).__name__} "
                        f"{value!r}")
    dt = ctx.dtype(like)
    return _expr.const(np.array(value, dtype=dt), dt)


def _pair(ctx, a, b):
    """Two operands as Relay expressions of the dtype torch gives their result
    (``frontend_common.torch_promote``): a Python number takes the tensor's dtype unless it
    lifts the tensor (a float with an integer tensor: float32)."""
    if _is_expr(a) and _is_expr(b):
        da, db = ctx.dtype(a), ctx.dtype(b)
        if da != db:
            target = tensors_dtype(da, db, ctx.shape(a) == (), ctx.shape(b) == ())
            a = a if da == target else _op.cast(a, target)
            b = b if db == target else _op.cast(b, target)
        return a, b
    if _is_expr(a):
        a = _lifted(ctx, a, b)
        return a, _scalar_like(ctx, b, a)
    b = _lifted(ctx, b, a)
    return _scalar_like(ctx, a, b), b


def _lifted(ctx, tensor, number):
    """``tensor`` cast to the dtype of its result with the Python ``number``."""
    dt = ctx.dtype(tensor)
    target = with_number_dtype(dt, number)
    return tensor if target == dt else _op.cast(tensor, target)


def _binary(relay_fn, py_fn):
    def convert(ctx, args):
        a, b = args[0], args[1]
        if not _is_expr(a) and not _is_expr(b):
            return py_fn(a, b)
        alpha = args[2] if len(args) > 2 and relay_fn in (_op.add, _op.subtract) else 1
        a, b = _pair(ctx, a, b)
        if alpha not in (1, None):
            b = _op.multiply(b, _scalar_like(ctx, alpha, b))
        if relay_fn is _op.add and ctx.dtype(a) == "bool":  # torch adds bools as ``or``
            return _op.logical_or(a, b)
        return relay_fn(a, b)

    return convert


def _norm_dim(d, nd):
    return d + nd if d < 0 else d
