"""TFLite flatbuffer -> Relay (NHWC, as the file is); float32 builtin ops of mobile models.

float16 weights behind DEQUANTIZE, int8/uint8 weights (behind DEQUANTIZE or inside float ops,
as dynamic-range quantization writes them) are dequantized at import; QUANTIZE->DEQUANTIZE pairs
are computed; operators on quantized (int8 / uint8 / int16) activations take ``quantized``'s
converters; the custom SSD detection head is ``detection``'s.

Weights are re-laid out at import the way TVM does (conv HWIO, depthwise HWOI), so
``ConvertLayout({"nn.conv2d": ["NCHW", "default"]})`` can move the model to NCHW afterwards
(relay.build and the Relay VM at opt_level 3 do it themselves: ``transform.ConvertNHWCConvs``).

This module reads the model and runs each operator's converter; the float converters are in the
``convert_*`` modules (by op family), the registry and ``OpContext`` in ``op_context``, tensor
types and quantization parameters in ``tensor_data``.
"""

from __future__ import annotations

import collections

import numpy as np

from ....ir.module import IRModule
from ....tir.expr import Any
from ... import expr as _expr
from ...analysis import free_vars
from ...transform.infer_type import InferType
from ..common import Folder, ImportError_, unsupported_error
from . import (  # noqa: F401 - their converters register themselves in CONVERTERS
    convert_elementwise,
    convert_index,
    convert_nn,
    convert_quantize,
    convert_shape,
    convert_spatial,
)

# the names this module held before it was split stay importable from it
from .convert_nn import (  # noqa: F401
    _conv_pads,
    pool_window,
    transpose_conv_window,
)
from .convert_quantize import (  # noqa: F401
    round_half_away,
)
from .op_context import (  # noqa: F401
    CONVERTERS,
    OpContext,
    _op_names,
    register,
)
from .tensor_data import (  # noqa: F401
    _TENSOR_TYPES,
    _per_axis,
    dequantize_array,
    quant_params,
)


def input_shape(name: str, t, given) -> tuple:
    """The shape of input ``name`` (tensor ``t``): the user's (``given``; -1, None or
    ``relay.Any()`` marks a dimension dynamic: it becomes ``Any``), else the stored shape.
    The stored ``shape_signature`` is not applied on its own: a model whose batch is -1 there
    still imports at its stored batch, as before (``from_tflite`` documents how to ask)."""
    stored = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    if given is None:
        return stored
    given = tuple(given)
    if len(given) != len(stored):
        raise ImportError_(f"shape_dict[{name!r}] = {given} has rank {len(given)}; the model's "
                           f"input has shape {stored} (rank {len(stored)})")
    out = []
    for k, d in enumerate(given):
        if d is None or isinstance(d, Any) or (isinstance(d, int | np.integer) and int(d) == -1):
            out.append(Any())
            continue
        try:
            d = int(d)
        except TypeError as e:
            raise ImportError_(f"shape_dict[{name!r}] = {given}: dimension {k} is {d!r}, not an "
                               "int, -1 or relay.Any()") from e
        if d < 1:
            raise ImportError_(f"shape_dict[{name!r}] = {given}: dimension {k} is {d}")
        out.append(d)
    return tuple(out)


def _dynamic_hint(ctx) -> str:
    """Where an operator's input has a dynamic dim: say so (its converter needs that size)."""
    from .tensor_data import infer_shape

    for e in ctx.inputs:
        try:
            shape = infer_shape(e) if e is not None else ()
        except ImportError_:
            continue
        if None in shape:
            dims = ", ".join("?" if d is None else str(d) for d in shape)
            return (f" (an input has the dynamic shape ({dims}); this operator needs the size "
                    "of that dim: import it with a static shape_dict)")
    return ""


class TFLiteImporter:
    def __init__(self, model, shape_dict, dtype_dict):
        from .validate import check_model

        self.model = model
        self.op_names = _op_names()
        check_model(model, self._code_name)
        self.subgraph = model.Subgraphs(0)
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dict(dtype_dict or {})
        self.exprs: dict[int, object] = {}
        self.fold = Folder()

    def _opcode_name(self, op) -> str:
        return self._code_name(self.model.OperatorCodes(op.OpcodeIndex()))

    def _code_name(self, code) -> str:
        """The name of an ``OperatorCode`` (``CONV_2D``, ``CUSTOM:<code>``)."""
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == 32:  # CUSTOM
            return "CUSTOM:" + (code.CustomCode() or b"?").decode()
        return self.op_names.get(builtin, f"builtin#{builtin}")

    def tensor_expr(self, idx: int):
        if idx in self.exprs:
            return self.exprs[idx]
        t = self.subgraph.Tensors(idx)
        name = (t.Name() or b"").decode()
        dtype = _TENSOR_TYPES.get(t.Type())
        if dtype is None:
            raise ImportError_(f"tensor {name!r} has unsupported TFLite type {t.Type()}")
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        data = self.model.Buffers(t.Buffer()).DataAsNumpy() if t.Buffer() < \
            self.model.BuffersLength() else 0
        if isinstance(data, np.ndarray) and data.size:
            arr = np.frombuffer(data.tobytes(), dtype=dtype).reshape(shape).copy()
            e = _expr.const(arr, dtype)
        else:
            raise ImportError_(f"tensor {name!r} (index {idx}) is used before any operator "
                               "produces it and has no data (malformed model)")
        self.exprs[idx] = e
        return e

    def run(self):
        from . import detection  # noqa: F401 - registers the custom detection operator
        from .layout import convert_in_nchw
        from .quantized import converter as quantized_converter

        sg = self.subgraph
        counts: collections.Counter = collections.Counter()
        for i in range(sg.OperatorsLength()):
            name = self._opcode_name(sg.Operators(i))
            if name not in CONVERTERS:
                counts[name] += 1
        if counts:
            raise unsupported_error("TFLite", dict(counts))
        params = []
        for idx in sg.InputsAsNumpy():
            t = sg.Tensors(int(idx))
            name = (t.Name() or b"").decode()
            shape = input_shape(name, t, self.shape_dict.get(name))
            dtype = self.dtype_dict.get(name, _TENSOR_TYPES.get(t.Type(), "float32"))
            v = _expr.var(name, shape=shape, dtype=dtype)
            self.exprs[int(idx)] = v
            params.append(v)
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            name = self._opcode_name(op)
            ctx = OpContext(self, op, name)
            ctx.index = i
            try:
                out = convert_in_nchw(ctx, quantized_converter(ctx) or CONVERTERS[name])
            except ImportError_:
                raise
            except Exception as e:  # noqa: BLE001 - name the operator in any failure
                raise ImportError_(f"{name} (operator {i}): cannot convert: "
                                   f"{type(e).__name__}: {e}{_dynamic_hint(ctx)}") from e
            outs = out if isinstance(out, list) else [out]
            for idx, e in zip(op.OutputsAsNumpy(), outs):
                self.exprs[int(idx)] = self.fold(e)
        outs = [self.tensor_expr(int(i)) for i in sg.OutputsAsNumpy()]
        body = outs[0] if len(outs) == 1 else _expr.Tuple(outs)
        known = set(params)
        func = _expr.Function(params + [v for v in free_vars(body) if v not in known], body)
        return InferType()(IRModule.from_expr(func)), {}


def load_model(model):
    """A ``tflite.Model`` from a Model, bytes, or a path; clear errors for bad files."""
    import tflite

    if isinstance(model, tflite.Model):
        return model
    if isinstance(model, str) or hasattr(model, "__fspath__"):
        with open(model, "rb") as f:
            model = f.read()
    if not isinstance(model, bytes | bytearray):
        raise TypeError(f"from_tflite expects a tflite.Model, bytes or a file path, got "
                        f"{type(model).__name__}")
    buf = bytes(model)
    if len(buf) < 8 or buf[4:8] != b"TFL3":
        raise ImportError_("not a TFLite flatbuffer (missing the 'TFL3' file identifier)")
    try:
        m = tflite.Model.GetRootAsModel(buf, 0)
        if m.SubgraphsLength() < 1:
            raise ImportError_("the TFLite model has no subgraph")
        m.Subgraphs(0).OperatorsLength()
    except ImportError_:
        raise
    except Exception as e:  # noqa: BLE001 - flatbuffers raises assorted errors on junk
        raise ImportError_(f"malformed TFLite flatbuffer: {type(e).__name__}: {e}") from e
    return m
