"""TFLite flatbuffer -> Relay (NHWC, as the file is); float32 builtin ops of mobile models.

Weights are re-laid out at import the way TVM does (conv HWIO, depthwise HWOI), so
``ConvertLayout({"nn.conv2d": ["NCHW", "default"]})`` can move the model to NCHW afterwards.
"""

from __future__ import annotations

import collections

import numpy as np

from ....ir.module import IRModule
from ... import expr as _expr
from ... import op as _op
from ...analysis import free_vars
from ...op import nn as _nn
from ...transform.infer_type import InferType
from ..common import Folder, ImportError_, infer_shape, unsupported_error

_TENSOR_TYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool",
                 7: "int16", 9: "int8", 10: "float64"}

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
        self.inputs = [importer.tensor_expr(i) if i >= 0 else None for i in op.InputsAsNumpy()]
        self.input_ids = list(op.InputsAsNumpy())

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


class TFLiteImporter:
    def __init__(self, model, shape_dict, dtype_dict):
        self.model = model
        self.subgraph = model.Subgraphs(0)
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dict(dtype_dict or {})
        self.exprs: dict[int, object] = {}
        self.fold = Folder()
        self.op_names = _op_names()

    def _opcode_name(self, op) -> str:
        code = self.model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == 32:  # CUSTOM
            return "CUSTOM:" + (code.CustomCode() or b"?").decode()
        return self.op_names.get(builtin, f"builtin#{builtin}")

    def tensor_expr(self, idx: int):
        if idx in self.exprs:
            return self.exprs[idx]
        t = self.subgraph.Tensors(idx)
        name = (t.Name() or b"").decode()
        if t.Quantization() is not None and t.Quantization().ScaleLength():
            raise ImportError_(f"tensor {name!r} is quantized: quantized TFLite models are not "
                               "supported (float32 models are)")
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
            shape = self.shape_dict.get(name, tuple(int(d) for d in t.ShapeAsNumpy()))
            dtype = self.dtype_dict.get(name, _TENSOR_TYPES.get(t.Type(), "float32"))
            v = _expr.var(name, shape=tuple(int(d) for d in shape), dtype=dtype)
            self.exprs[int(idx)] = v
            params.append(v)
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            name = self._opcode_name(op)
            ctx = OpContext(self, op, name)
            try:
                out = CONVERTERS[name](ctx)
            except ImportError_:
                raise
            except Exception as e:  # noqa: BLE001 - name the operator in any failure
                raise ImportError_(f"{name} (operator {i}): cannot convert: "
                                   f"{type(e).__name__}: {e}") from e
            outs = out if isinstance(out, list) else [out]
            for idx, e in zip(op.OutputsAsNumpy(), outs):
                self.exprs[int(idx)] = self.fold(e)
        outs = [self.exprs[int(i)] for i in sg.OutputsAsNumpy()]
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


# ------------------------------------------------------------------ converters
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


def _same_pads(in_size, k, stride, dilation):
    eff = (k - 1) * dilation + 1
    out = -(-in_size // stride)
    total = max((out - 1) * stride + eff - in_size, 0)
    return total // 2, total - total // 2


def _conv_pads(padding, h, w, kh, kw, sh, sw, dh, dw):
    if padding == 1:  # VALID
        return (0, 0, 0, 0)
    t, b = _same_pads(h, kh, sh, dh)
    left, r = _same_pads(w, kw, sw, dw)
    return (t, left, b, r)


@register("CONV_2D")
def _conv2d(ctx):
    x, w = ctx.inputs[0], ctx.inputs[1]
    b = ctx.inputs[2] if len(ctx.inputs) > 2 else None
    opt = ctx.options()
    _, h, wd, _ = infer_shape(x)
    o, kh, kw, _ = infer_shape(w)
    pads = _conv_pads(opt.Padding(), h, wd, kh, kw, opt.StrideH(), opt.StrideW(),
                      opt.DilationHFactor(), opt.DilationWFactor())
    w_hwio = _op.transpose(w, (1, 2, 3, 0))
    out = _nn.conv2d(x, w_hwio, strides=(opt.StrideH(), opt.StrideW()), padding=pads,
                     dilation=(opt.DilationHFactor(), opt.DilationWFactor()), channels=o,
                     kernel_size=(kh, kw), data_layout="NHWC", kernel_layout="HWIO")
    if b is not None:
        out = _nn.bias_add(out, b, axis=3)
    return _activation(ctx, out, opt.FusedActivationFunction())


@register("DEPTHWISE_CONV_2D")
def _depthwise(ctx):
    x, w = ctx.inputs[0], ctx.inputs[1]
    b = ctx.inputs[2] if len(ctx.inputs) > 2 else None
    opt = ctx.options()
    _, h, wd, c = infer_shape(x)
    _, kh, kw, cm = infer_shape(w)
    pads = _conv_pads(opt.Padding(), h, wd, kh, kw, opt.StrideH(), opt.StrideW(),
                      opt.DilationHFactor(), opt.DilationWFactor())
    w_hwoi = _op.transpose(w, (1, 2, 3, 0))  # (1, kh, kw, C*M) -> (kh, kw, C*M, 1)
    out = _nn.conv2d(x, w_hwoi, strides=(opt.StrideH(), opt.StrideW()), padding=pads,
                     dilation=(opt.DilationHFactor(), opt.DilationWFactor()), groups=c,
                     channels=cm, kernel_size=(kh, kw), data_layout="NHWC",
                     kernel_layout="HWOI")
    if b is not None:
        out = _nn.bias_add(out, b, axis=3)
    return _activation(ctx, out, opt.FusedActivationFunction())


@register("FULLY_CONNECTED")
def _fully_connected(ctx):
    x, w = ctx.inputs[0], ctx.inputs[1]
    b = ctx.inputs[2] if len(ctx.inputs) > 2 else None
    opt = ctx.options()
    xs = infer_shape(x)
    units, k = infer_shape(w)
    flat = x if len(xs) == 2 else _op.reshape(x, (-1, k))
    out = _nn.dense(flat, w, units=units)
    if b is not None:
        out = _nn.bias_add(out, b, axis=-1)
    if opt is not None and opt.KeepNumDims() and len(xs) != 2:
        out = _op.reshape(out, xs[:-1] + (units,))
    return _activation(ctx, out, opt.FusedActivationFunction() if opt is not None else 0)


def _binary(fn):
    def convert(ctx):
        opt = ctx.options()
        out = fn(ctx.inputs[0], ctx.inputs[1])
        act = opt.FusedActivationFunction() if opt is not None and hasattr(
            opt, "FusedActivationFunction") else 0
        return _activation(ctx, out, act)

    return convert


register("ADD")(_binary(_op.add))
register("SUB")(_binary(_op.subtract))
register("MUL")(_binary(_op.multiply))
register("DIV")(_binary(_op.divide))
register("MAXIMUM")(_binary(_op.maximum))
register("MINIMUM")(_binary(_op.minimum))
register("SQUARED_DIFFERENCE")(_binary(lambda a, b: _op.multiply(_op.subtract(a, b),
                                                                 _op.subtract(a, b))))

_UNARY = {"RELU": _nn.relu, "LOGISTIC": _op.sigmoid, "TANH": _op.tanh, "EXP": _op.exp,
          "SQRT": _op.sqrt, "RSQRT": _op.rsqrt, "ABS": _op.abs, "NEG": _op.negative,
          "LOG": _op.log, "SIN": _op.sin, "COS": _op.cos, "FLOOR": _op.floor,
          "CEIL": _op.ceil}
for _n, _f in _UNARY.items():
    register(_n)(lambda ctx, _f=_f: _f(ctx.inputs[0]))


@register("RELU6")
def _relu6(ctx):
    return _op.clip(ctx.inputs[0], 0.0, 6.0)


@register("RELU_N1_TO_1")
def _relu_n1(ctx):
    return _op.clip(ctx.inputs[0], -1.0, 1.0)


@register("SQUARE")
def _square(ctx):
    return _op.multiply(ctx.inputs[0], ctx.inputs[0])


@register("HARD_SWISH")
def _hard_swish(ctx):
    x = ctx.inputs[0]
    six = _expr.const(np.array(6.0, "float32"))
    return _op.multiply(x, _op.divide(_op.clip(_op.add(x, _expr.const(np.array(
        3.0, "float32"))), 0.0, 6.0), six))


@register("LEAKY_RELU")
def _leaky_relu(ctx):
    return _nn.leaky_relu(ctx.inputs[0], float(ctx.options().Alpha()))


@register("GELU")
def _gelu(ctx):
    x = ctx.inputs[0]
    c = lambda v: _expr.const(np.array(v, "float32"))  # noqa: E731
    opt = ctx.options()
    if opt is not None and opt.Approximate():
        inner = _op.multiply(c(np.sqrt(2 / np.pi)), _op.add(x, _op.multiply(
            c(0.044715), _op.multiply(x, _op.multiply(x, x)))))
        return _op.multiply(_op.multiply(c(0.5), x), _op.add(c(1.0), _op.tanh(inner)))
    return _op.multiply(_op.multiply(c(0.5), x), _op.add(
        c(1.0), _op.erf(_op.multiply(x, c(1 / np.sqrt(2))))))


def _pool(kind):
    def convert(ctx):
        x = ctx.inputs[0]
        opt = ctx.options()
        _, h, w, _ = infer_shape(x)
        kh, kw = opt.FilterHeight(), opt.FilterWidth()
        sh, sw = opt.StrideH(), opt.StrideW()
        pads = _conv_pads(opt.Padding(), h, w, kh, kw, sh, sw, 1, 1)
        if kind == "max":
            out = _nn.max_pool2d(x, (kh, kw), (sh, sw), (1, 1), pads, layout="NHWC")
        else:
            out = _nn.avg_pool2d(x, (kh, kw), (sh, sw), (1, 1), pads, layout="NHWC",
                                 count_include_pad=False)
        return _activation(ctx, out, opt.FusedActivationFunction())

    return convert


register("MAX_POOL_2D")(_pool("max"))
register("AVERAGE_POOL_2D")(_pool("avg"))


def _reduce(fn):
    def convert(ctx):
        axes = [int(a) for a in ctx.value(1, "the reduction axes").reshape(-1)]
        opt = ctx.options()
        keep = bool(opt.KeepDims()) if opt is not None else False
        return fn(ctx.inputs[0], axes, keepdims=keep)

    return convert


register("MEAN")(_reduce(_op.mean))
register("SUM")(_reduce(_op.sum))
register("REDUCE_MAX")(_reduce(_op.max))
register("REDUCE_MIN")(_reduce(_op.min))
register("REDUCE_PROD")(_reduce(_op.prod))


@register("RESHAPE")
def _reshape(ctx):
    x = ctx.inputs[0]
    if len(ctx.inputs) > 1 and ctx.inputs[1] is not None:
        shape = [int(v) for v in ctx.value(1, "the new shape").reshape(-1)]
    else:
        shape = [int(v) for v in ctx.options().NewShapeAsNumpy()]
    total = int(np.prod(infer_shape(x)))
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = total // known
    return _op.reshape(x, shape)


@register("SOFTMAX")
def _softmax(ctx):
    x = ctx.inputs[0]
    beta = float(ctx.options().Beta())
    if beta != 1.0:
        x = _op.multiply(x, _expr.const(np.array(beta, "float32")))
    return _nn.softmax(x, axis=-1)


@register("LOG_SOFTMAX")
def _log_softmax(ctx):
    return _nn.log_softmax(ctx.inputs[0], axis=-1)


@register("CONCATENATION")
def _concat(ctx):
    opt = ctx.options()
    out = _op.concatenate([e for e in ctx.inputs if e is not None], int(opt.Axis()))
    return _activation(ctx, out, opt.FusedActivationFunction())


@register("PAD", "PADV2")
def _pad(ctx):
    pads = ctx.value(1, "the paddings").astype("int64")
    value = 0.0
    if ctx.name == "PADV2" and len(ctx.inputs) > 2:
        value = float(ctx.value(2, "the pad value").reshape(-1)[0])
    return _nn.pad(ctx.inputs[0], [tuple(p) for p in pads], pad_value=value)


@register("SQUEEZE")
def _squeeze(ctx):
    dims = [int(d) for d in ctx.options().SqueezeDimsAsNumpy()] if \
        ctx.options().SqueezeDimsLength() else None
    return _op.squeeze(ctx.inputs[0], axis=dims)


@register("TRANSPOSE")
def _transpose(ctx):
    return _op.transpose(ctx.inputs[0], [int(p) for p in ctx.value(1, "the permutation")])


@register("BATCH_MATMUL")
def _batch_matmul(ctx):
    a, b = ctx.inputs[0], ctx.inputs[1]
    opt = ctx.options()
    sa, sb = infer_shape(a), infer_shape(b)
    if opt is not None and opt.AdjX():
        a = _op.transpose(a, list(range(len(sa) - 2)) + [len(sa) - 1, len(sa) - 2])
        sa = sa[:-2] + (sa[-1], sa[-2])
    tb = bool(opt is not None and opt.AdjY())
    batch = sa[:-2]
    nb = int(np.prod(batch)) if batch else 1
    a3 = _op.reshape(a, (nb,) + sa[-2:])
    b3 = _op.reshape(b, (nb,) + sb[-2:])
    out = _nn.batch_matmul(a3, b3, transpose_b=tb)
    n = sb[-2] if tb else sb[-1]
    return _op.reshape(out, batch + (sa[-2], n))


@register("DEQUANTIZE")
def _dequantize(ctx):
    return _op.cast(ctx.inputs[0], "float32")
