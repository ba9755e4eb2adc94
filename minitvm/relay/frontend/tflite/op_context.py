"""The converter registry (``CONVERTERS``, filled by ``register``) and what a converter gets: one
operator's ``OpContext`` (inputs, options, errors), and the helpers the converters share (fused
activations, output dtypes, constant operands)."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from ..common import ImportError_
from .tensor_data import _TENSOR_TYPES, dequantize_array, quant_params

CONVERTERS: dict = {}


def register(*names):
    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn

    return deco


def _op_names() -> dict[int, str]:
    import tflite

    return {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}


def _options_names() -> dict[int, str]:
    import tflite

    return {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}


class OpContext:
    """One operator: its inputs (expressions, None for absent), options, and helpers."""

    def __init__(self, importer, op, name: str):
        self.importer = importer
        self.op = op
        self.name = name
        self.index: int | None = None  # the operator's position in the subgraph, if known
        self.input_ids = [int(i) for i in op.InputsAsNumpy()]
        self.layout = "NHWC"  # of the 4-D inputs; NCHW where ``layout.convert_in_nchw`` says
        self.inputs = [importer.tensor_expr(i) if i >= 0 else None for i in self.input_ids]
        if name in ("DEQUANTIZE", "QUANTIZE"):
            return
        float_out = op.OutputsLength() and importer.subgraph.Tensors(
            int(op.Outputs(0))).Type() == 0
        for k, i in enumerate(self.input_ids):
            t = importer.subgraph.Tensors(i) if i >= 0 else None
            q = quant_params(t) if t is not None else None
            if q is None:
                continue
            if float_out and isinstance(self.inputs[k], _expr.Constant):
                # dynamic-range ("hybrid") models: int8 weights of a float op; computed here
                # with the weights dequantized
                self.inputs[k] = _expr.const(dequantize_array(self.inputs[k].data.numpy(), q))

    def options(self):
        """The op's BuiltinOptions table, decoded into its generated class."""
        import tflite

        table = self.op.BuiltinOptions()
        if table is None:
            return None
        cls_name = _options_names().get(self.op.BuiltinOptionsType())
        cls = getattr(tflite, cls_name, None) if cls_name else None
        if cls is None:
            return None
        opt = cls()
        opt.Init(table.Bytes, table.Pos)
        return opt

    def value(self, k: int, what: str) -> np.ndarray:
        v = self.importer.fold(self.inputs[k])
        if not isinstance(v, _expr.Constant):
            raise ImportError_(f"{self.name}: {what} must be a constant tensor")
        return v.data.numpy()

    def fail(self, detail: str) -> ImportError_:
        return ImportError_(f"{self.name}: {detail}")


# ------------------------------------------------------------------ what the converters share
_ACT = {0: None, 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH"}


def _activation(ctx, x, code):
    kind = _ACT.get(code, "?")
    if kind is None:
        return x
    if kind == "RELU":
        return _nn.relu(x)
    if kind == "RELU6":
        return _op.clip(x, 0.0, 6.0)
    if kind == "RELU_N1_TO_1":
        return _op.clip(x, -1.0, 1.0)
    if kind == "TANH":
        return _op.tanh(x)
    raise ctx.fail(f"fused activation {code} is not supported")


def _out_dtype(ctx, k: int = 0) -> str:
    """The dtype the model declares for output ``k`` of this operator."""
    t = ctx.importer.subgraph.Tensors(int(ctx.op.Outputs(k)))
    return _TENSOR_TYPES.get(t.Type(), "float32")


def _fconst(v, dtype="float32"):
    return _expr.const(np.array(v, dtype))


def _ints(ctx, k: int, what: str) -> list[int]:
    return [int(v) for v in ctx.value(k, what).reshape(-1)]


def _axis(a: int, ndim: int) -> int:
    return a + ndim if a < 0 else a


def _dims(ctx, shape, what: str = "the output shape") -> list[int]:
    """A shape from ``infer_shape`` (None: a dynamic dim, the batch) as a reshape target: its
    one None as -1; more than one cannot be told apart, a clear error."""
    shape = list(shape)
    if shape.count(None) > 1:
        dims = ", ".join("?" if d is None else str(d) for d in shape)
        raise ctx.fail(f"{what} ({dims}) has more than one dynamic dimension; only one (the "
                       "batch) is supported")
    return [-1 if d is None else int(d) for d in shape]


def merge_leading(x, k: int):
    """``x`` with its first ``k`` dims merged into one (``k`` 0: a new leading 1), by Relay's
    special reshape values (-3 merges two dims, -2 copies the rest), so run-time dims among
    them or after them need no size at import."""
    if k == 0:
        return _op.expand_dims(x, 0)
    for _ in range(k - 1):
        x = _op.reshape(x, [-3, -2])
    return x


def split_leading(ctx, x, dims, like=None, what: str = "the output shape"):
    """``x``'s first dim split into ``dims`` (None: a run-time size), the rest kept (-2): the
    inverse of ``merge_leading``. One run-time size is what the others leave; with more, their
    sizes are read when the model runs from the leading dims of ``like`` (the tensor that was
    merged), the known dims then restored to the type."""
    dims = list(dims)
    if not dims:
        return _op.squeeze(x, [0])
    if dims.count(None) > 1:
        if like is None:
            shown = ", ".join("?" if d is None else str(d) for d in dims)
            raise ctx.fail(f"{what}: the leading dims ({shown}) hold more than one run-time "
                           "size, which one merged dim cannot be split back into")
        from .tensor_data import infer_shape

        k, rest = len(dims), infer_shape(x)[1:]
        sizes = _op.concatenate([
            _op.strided_slice(_op.shape_of(like, "int64"), [0], [k]),
            _op.strided_slice(_op.shape_of(x, "int64"), [1], [1 + len(rest)])], 0)
        known = [0 if d is None else d for d in dims + list(rest)]
        return _op.reshape(_op.reshape(x, sizes), known)  # (a dyn.reshape, then the type)
    for i in range(len(dims) - 1):
        rest = dims[i + 1:]
        d = -1 if dims[i] is None else dims[i]
        r = -1 if None in rest else int(np.prod(rest))
        x = _op.reshape(x, [0] * i + [-4, d, r, -2])
    return x
