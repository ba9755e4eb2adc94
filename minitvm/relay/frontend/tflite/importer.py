"""TFLite flatbuffer -> Relay (NHWC, as the file is); float32 builtin ops of mobile models.

float16 weights behind DEQUANTIZE, int8/uint8 weights (behind DEQUANTIZE or inside float ops,
as dynamic-range quantization writes them) are dequantized at import; QUANTIZE->DEQUANTIZE pairs
are computed; operators on quantized (int8 / uint8 / int16) activations take ``quantized``'s
converters; the custom SSD detection head is ``detection``'s.

Weights are re-laid out at import the way TVM does (conv HWIO, depthwise HWOI), so
``ConvertLayout({"nn.conv2d": ["NCHW", "default"]})`` can move the model to NCHW afterwards
(relay.build and the Relay VM at opt_level 3 do it themselves: ``transform.ConvertNHWCConvs``).
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
from ..common import Folder, ImportError_, infer_dtype, infer_shape, unsupported_error

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
                out = convert_in_nchw(ctx, quantized_converter(ctx) or CONVERTERS[name])
            except ImportError_:
                raise
            except Exception as e:  # noqa: BLE001 - name the operator in any failure
                raise ImportError_(f"{name} (operator {i}): cannot convert: "
                                   f"{type(e).__name__}: {e}") from e
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
    _, h, wd, c = infer_shape(x)
    o, kh, kw, ci = infer_shape(w)
    if c % ci or o % (c // ci):
        raise ctx.fail(f"input channels {c} do not match the filter's {ci} (per group)")
    pads = _conv_pads(opt.Padding(), h, wd, kh, kw, opt.StrideH(), opt.StrideW(),
                      opt.DilationHFactor(), opt.DilationWFactor())
    w_hwio = _op.transpose(w, (1, 2, 3, 0))
    out = _nn.conv2d(x, w_hwio, strides=(opt.StrideH(), opt.StrideW()), padding=pads,
                     dilation=(opt.DilationHFactor(), opt.DilationWFactor()), channels=o,
                     groups=c // ci,
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


def pool_window(ctx, kind: str):
    """The pooling of ``ctx.inputs[0]`` over the operator's windows, its fused activation not
    applied."""
    x = ctx.inputs[0]
    opt = ctx.options()
    shape = infer_shape(x)
    h, w = (shape[1], shape[2]) if ctx.layout == "NHWC" else (shape[2], shape[3])
    kh, kw = opt.FilterHeight(), opt.FilterWidth()
    sh, sw = opt.StrideH(), opt.StrideW()
    pads = _conv_pads(opt.Padding(), h, w, kh, kw, sh, sw, 1, 1)
    if kind == "max":
        return _nn.max_pool2d(x, (kh, kw), (sh, sw), (1, 1), pads, layout=ctx.layout)
    return _nn.avg_pool2d(x, (kh, kw), (sh, sw), (1, 1), pads, layout=ctx.layout,
                          count_include_pad=False)


def _pool(kind):
    def convert(ctx):
        out = pool_window(ctx, kind)
        return _activation(ctx, out, ctx.options().FusedActivationFunction())

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
register("REDUCE_ANY")(_reduce(_op.any))
register("REDUCE_ALL")(_reduce(_op.all))


@register("RESHAPE")
def _reshape(ctx):
    x = ctx.inputs[0]
    opt = ctx.options()
    has_attr = opt is not None and opt.NewShapeLength() > 0
    shape_in = ctx.importer.fold(ctx.inputs[1]) if len(ctx.inputs) > 1 and \
        ctx.inputs[1] is not None else None
    if isinstance(shape_in, _expr.Constant):
        shape = [int(v) for v in shape_in.data.numpy().reshape(-1)]
    elif has_attr:  # the attribute is the fallback when the shape input is computed
        shape = [int(v) for v in opt.NewShapeAsNumpy()]
    elif shape_in is not None:
        raise ctx.fail("the new shape must be a constant tensor (or the new_shape attribute)")
    else:  # neither: the output tensor's declared shape
        t = ctx.importer.subgraph.Tensors(int(ctx.op.Outputs(0)))
        shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
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
    axis = int(opt.Axis())
    if ctx.layout == "NCHW":  # (``layout.convert_in_nchw``: 4-D inputs in NCHW)
        axis = (0, 2, 3, 1)[axis % 4]
    out = _op.concatenate([e for e in ctx.inputs if e is not None], axis)
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
    opt = ctx.options()
    dims = [int(d) for d in opt.SqueezeDimsAsNumpy()] if opt is not None and \
        opt.SqueezeDimsLength() else None
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
    batch = tuple(int(d) for d in np.broadcast_shapes(sa[:-2], sb[:-2]))
    if sa[:-2] != batch:  # batch dims broadcast (e.g. a rank-2 constant right operand)
        a = _op.broadcast_to(a, batch + sa[-2:])
    if sb[:-2] != batch:
        b = _op.broadcast_to(b, batch + sb[-2:])
    nb = int(np.prod(batch)) if batch else 1
    a3 = _op.reshape(a, (nb,) + sa[-2:])
    b3 = _op.reshape(b, (nb,) + sb[-2:])
    out = _nn.batch_matmul(a3, b3, transpose_b=tb)
    n = sb[-2] if tb else sb[-1]
    return _op.reshape(out, batch + (sa[-2], n))


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


# ------------------------------------------------------------------ more builtin ops
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


@register("TRANSPOSE_CONV")
def _transpose_conv(ctx):
    # inputs: output_shape, weights (O, kh, kw, I), input (NHWC), optional bias
    out = transpose_conv_window(ctx)
    b = ctx.inputs[3] if len(ctx.inputs) > 3 else None
    if b is not None:
        out = _nn.bias_add(out, b, axis=3)
    opt = ctx.options()
    act = opt.FusedActivationFunction() if hasattr(opt, "FusedActivationFunction") else 0
    return _activation(ctx, out, act)


def transpose_conv_window(ctx):
    """TRANSPOSE_CONV of ``ctx.inputs[2]`` (NHWC) by the weights ``ctx.inputs[1]`` (O, kh, kw,
    I) to the output shape of input 0, in NHWC: no bias, no fused activation."""
    out_shape = _ints(ctx, 0, "the output shape")
    w, x = ctx.inputs[1], ctx.inputs[2]
    opt = ctx.options()
    _, h, wd, _ = infer_shape(x)
    o, kh, kw, _ = infer_shape(w)
    strides = (opt.StrideH(), opt.StrideW())
    pads, out_pad = [], []
    for n_in, k, s, n_out in ((h, kh, strides[0], out_shape[1]), (wd, kw, strides[1],
                                                                     out_shape[2])):
        total = (n_in - 1) * s + k - n_out
        if total >= 0:
            pads.append((total // 2, total - total // 2))
            out_pad.append(0)
        elif -total < s:
            pads.append((0, 0))
            out_pad.append(-total)
        else:
            raise ctx.fail(f"output shape {out_shape} is not reachable from input {h}x{wd} "
                           f"with stride {strides} and kernel {kh}x{kw}")
    w_iohw = _op.transpose(w, (3, 0, 1, 2))
    xt = _op.transpose(x, (0, 3, 1, 2))
    out = _nn.conv2d_transpose(xt, w_iohw, strides=strides,
                               padding=(pads[0][0], pads[1][0], pads[0][1], pads[1][1]),
                               channels=o, kernel_size=(kh, kw), data_layout="NCHW",
                               kernel_layout="IOHW", output_padding=tuple(out_pad))
    return _op.transpose(out, (0, 2, 3, 1))


for _n, _f in {"POW": _op.power, "FLOOR_DIV": _op.floor_divide, "FLOOR_MOD": _op.floor_mod,
               "LESS": _op.less, "GREATER": _op.greater, "EQUAL": _op.equal,
               "NOT_EQUAL": _op.not_equal, "LESS_EQUAL": _op.less_equal,
               "GREATER_EQUAL": _op.greater_equal, "LOGICAL_AND": _op.logical_and,
               "ATAN2": _op.atan2,
               "LOGICAL_OR": _op.logical_or}.items():
    register(_n)(_binary(_f))

for _n, _f in {"ROUND": _op.round, "SIGN": _op.sign, "LOGICAL_NOT": _op.logical_not,
               "ZEROS_LIKE": _op.zeros_like}.items():
    register(_n)(lambda ctx, _f=_f: _f(ctx.inputs[0]))


@register("RELU_0_TO_1")
def _relu_0_1(ctx):
    return _op.clip(ctx.inputs[0], 0.0, 1.0)


@register("ELU")
def _elu(ctx):
    x = ctx.inputs[0]
    return _op.where(_op.greater(x, _fconst(0.0)), x, _op.subtract(_op.exp(x), _fconst(1.0)))


@register("PRELU")
def _prelu(ctx):
    x, alpha = ctx.inputs[0], ctx.inputs[1]  # alpha broadcasts against x
    return _op.where(_op.greater(x, _fconst(0.0)), x, _op.multiply(alpha, x))


@register("EXPAND_DIMS")
def _expand_dims(ctx):
    x = ctx.inputs[0]
    a = _ints(ctx, 1, "the axis")[0]
    ndim = len(infer_shape(x))
    return _op.expand_dims(x, a + ndim + 1 if a < 0 else a)


@register("PACK")
def _pack(ctx):
    opt = ctx.options()
    xs = [e for e in ctx.inputs if e is not None]
    ndim = len(infer_shape(xs[0]))
    return _op.stack(xs, _axis(int(opt.Axis()), ndim + 1))


@register("UNPACK")
def _unpack(ctx):
    x = ctx.inputs[0]
    shape = infer_shape(x)
    axis = _axis(int(ctx.options().Axis()), len(shape))
    n = shape[axis]
    parts = _op.split(x, n, axis)
    return [_op.squeeze(parts[i], [axis]) for i in range(n)]


def _split_at(x, axis, sizes):
    points, acc = [], 0
    for s in sizes[:-1]:
        acc += s
        points.append(acc)
    parts = _op.split(x, points, axis)
    return [parts[i] for i in range(len(sizes))]


@register("SPLIT")
def _split(ctx):
    x = ctx.inputs[1]
    shape = infer_shape(x)
    axis = _axis(_ints(ctx, 0, "the split axis")[0], len(shape))
    n = int(ctx.options().NumSplits())
    if shape[axis] % n:
        raise ctx.fail(f"axis {axis} of size {shape[axis]} does not split into {n} parts")
    return _split_at(x, axis, [shape[axis] // n] * n)


@register("SPLIT_V")
def _split_v(ctx):
    x = ctx.inputs[0]
    shape = infer_shape(x)
    sizes = _ints(ctx, 1, "the split sizes")
    axis = _axis(_ints(ctx, 2, "the split axis")[0], len(shape))
    if -1 in sizes:
        sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    if sum(sizes) != shape[axis]:
        raise ctx.fail(f"split sizes {sizes} do not add up to {shape[axis]}")
    return _split_at(x, axis, sizes)


@register("SLICE")
def _slice(ctx):
    x = ctx.inputs[0]
    shape = infer_shape(x)
    begin, size = _ints(ctx, 1, "the begin"), _ints(ctx, 2, "the size")
    end = [d if s == -1 else b + s for b, s, d in zip(begin, size, shape)]
    return _op.strided_slice(x, begin, end)


@register("STRIDED_SLICE")
def _strided_slice(ctx):
    """Resolves begin/end/strides and the five masks statically (TF semantics), then slices
    positive-stride axes with strided_slice, reversed ones with take, and reshapes."""
    x = ctx.inputs[0]
    shape = infer_shape(x)
    ndim = len(shape)
    begin, end = _ints(ctx, 1, "the begin"), _ints(ctx, 2, "the end")
    strides = _ints(ctx, 3, "the strides") if len(ctx.inputs) > 3 and ctx.inputs[3] is not \
        None else [1] * len(begin)
    opt = ctx.options()
    bm, em, elm = opt.BeginMask(), opt.EndMask(), opt.EllipsisMask()
    nm, sm = opt.NewAxisMask(), opt.ShrinkAxisMask()
    if opt.Offset() if hasattr(opt, "Offset") else False:
        raise ctx.fail("the 'offset' form of STRIDED_SLICE is not supported")
    n = len(begin)
    if not elm:  # an implicit ellipsis at the end
        elm = 1 << n
        begin, end, strides, n = begin + [0], end + [0], strides + [1], n + 1
    consumed = sum(1 for i in range(n) if not (elm >> i) & 1 and not (nm >> i) & 1)
    ranges, out_shape, dim = [], [], 0  # ranges: per input dim (start, stop, step)
    for i in range(n):
        if (elm >> i) & 1:
            for _ in range(ndim - consumed):
                ranges.append((0, shape[dim], 1))
                out_shape.append(shape[dim])
                dim += 1
            continue
        if (nm >> i) & 1:
            out_shape.append(1)
            continue
        if dim >= ndim:
            raise ctx.fail(f"the slice spec indexes {dim + 1} dims of a rank-{ndim} input")
        d = shape[dim]
        if (sm >> i) & 1:
            b = begin[i] + d if begin[i] < 0 else begin[i]
            if not 0 <= b < d:
                raise ctx.fail(f"index {begin[i]} is out of range for axis {dim} of size {d}")
            ranges.append((b, b + 1, 1))
        else:
            if strides[i] == 0:
                raise ctx.fail("a stride is 0")
            s = slice(None if (bm >> i) & 1 else begin[i], None if (em >> i) & 1 else end[i],
                      strides[i])
            r = s.indices(d)
            ranges.append(r)
            out_shape.append(len(range(*r)))
        dim += 1
    if dim != ndim:
        raise ctx.fail(f"the slice spec covers {dim} dims of a rank-{ndim} input")
    pos = [r if r[2] > 0 else (0, shape[k], 1) for k, r in enumerate(ranges)]
    out = x
    if any(r != (0, shape[k], 1) for k, r in enumerate(pos)):
        out = _op.strided_slice(out, [max(r[0], 0) for r in pos],
                                [max(r[1], r[0], 0) for r in pos], [r[2] for r in pos])
    for k, r in enumerate(ranges):
        if r[2] < 0:
            out = _op.take(out, _expr.const(np.array(list(range(*r)), "int32")), axis=k)
    return _op.reshape(out, out_shape)


@register("MIRROR_PAD")
def _mirror_pad(ctx):
    pads = ctx.value(1, "the paddings").astype("int64")
    mode = "REFLECT" if int(ctx.options().Mode()) == 0 else "SYMMETRIC"
    return _nn.mirror_pad(ctx.inputs[0], [tuple(int(v) for v in p) for p in pads], mode=mode)


@register("GATHER")
def _gather(ctx):
    x, idx = ctx.inputs[0], ctx.inputs[1]
    opt = ctx.options()
    ndim = len(infer_shape(x))
    axis = _axis(int(opt.Axis()), ndim) if opt is not None else 0
    bd = int(opt.BatchDims()) if opt is not None and hasattr(opt, "BatchDims") else 0
    return _op.take(x, idx, axis=axis, batch_dims=bd, mode="fast")


@register("GATHER_ND")
def _gather_nd(ctx):
    x, idx = ctx.inputs[0], ctx.inputs[1]
    r = len(infer_shape(idx))
    return _op.gather_nd(x, _op.transpose(idx, [r - 1] + list(range(r - 1))))


@register("TILE")
def _tile(ctx):
    return _op.tile(ctx.inputs[0], _ints(ctx, 1, "the multiples"))


@register("BROADCAST_TO")
def _broadcast_to(ctx):
    return _op.broadcast_to(ctx.inputs[0], _ints(ctx, 1, "the target shape"))


def _resize(method):
    def convert(ctx):
        x = ctx.inputs[0]
        size = _ints(ctx, 1, "the output size")
        opt = ctx.options()
        align = bool(opt.AlignCorners()) if opt is not None else False
        half = bool(opt.HalfPixelCenters()) if opt is not None else False
        if align:
            mode = "align_corners"
        elif half:
            mode = "half_pixel" if method == "linear" else "tf_half_pixel_for_nn"
        else:
            mode = "asymmetric"
        rounding = "round_prefer_ceil" if align else "floor"
        return _op.image.resize2d(x, size, layout="NHWC", method=method,
                                  coordinate_transformation_mode=mode,
                                  rounding_method=rounding if method != "linear" else "")

    return convert


register("RESIZE_BILINEAR")(_resize("linear"))
register("RESIZE_NEAREST_NEIGHBOR")(_resize("nearest_neighbor"))


@register("SPACE_TO_DEPTH")
def _space_to_depth(ctx):
    return _nn.space_to_depth(ctx.inputs[0], int(ctx.options().BlockSize()), layout="NHWC")


@register("DEPTH_TO_SPACE")
def _depth_to_space(ctx):
    return _nn.depth_to_space(ctx.inputs[0], int(ctx.options().BlockSize()), layout="NHWC",
                              mode="DCR")


@register("L2_NORMALIZATION")
def _l2_norm(ctx):
    x = ctx.inputs[0]
    out = _nn.l2_normalize(x, 1e-12, axis=[len(infer_shape(x)) - 1])
    opt = ctx.options()
    return _activation(ctx, out, opt.FusedActivationFunction() if opt is not None else 0)


@register("LOCAL_RESPONSE_NORMALIZATION")
def _lrn(ctx):
    x = ctx.inputs[0]
    opt = ctx.options()
    size = 2 * int(opt.Radius()) + 1
    # TFLite's alpha multiplies the plain window sum; Relay's lrn divides alpha by size.
    return _nn.lrn(x, size=size, axis=len(infer_shape(x)) - 1, bias=float(opt.Bias()),
                   alpha=float(opt.Alpha()) * size, beta=float(opt.Beta()))


def _arg(fn):
    def convert(ctx):
        x = ctx.inputs[0]
        axis = _axis(_ints(ctx, 1, "the axis")[0], len(infer_shape(x)))
        return _op.cast(fn(x, axis=[axis]), _out_dtype(ctx))

    return convert


register("ARG_MAX")(_arg(_op.argmax))
register("ARG_MIN")(_arg(_op.argmin))


@register("CAST")
def _cast(ctx):
    return _op.cast(ctx.inputs[0], _out_dtype(ctx))


@register("SHAPE")
def _shape(ctx):
    shape = infer_shape(ctx.inputs[0])
    return _expr.const(np.array(shape, _out_dtype(ctx)))


@register("FILL")
def _fill(ctx):
    shape = _ints(ctx, 0, "the shape")
    value = ctx.inputs[1]
    return _op.full(value, shape, dtype=_out_dtype(ctx))


@register("SELECT", "SELECT_V2")
def _select(ctx):
    return _op.where(ctx.inputs[0], ctx.inputs[1], ctx.inputs[2])


@register("SPACE_TO_BATCH_ND")
def _space_to_batch(ctx):
    pads = ctx.value(2, "the paddings").astype("int64").tolist()
    return _nn.space_to_batch_nd(ctx.inputs[0], _ints(ctx, 1, "the block shape"), pads)


@register("BATCH_TO_SPACE_ND")
def _batch_to_space(ctx):
    crops = ctx.value(2, "the crops").astype("int64").tolist()
    return _nn.batch_to_space_nd(ctx.inputs[0], _ints(ctx, 1, "the block shape"), crops)


@register("REVERSE_V2")
def _reverse(ctx):
    x = ctx.inputs[0]
    ndim = len(infer_shape(x))
    for a in _ints(ctx, 1, "the axes"):
        x = _op.reverse(x, _axis(a, ndim))
    return x


@register("ADD_N")
def _add_n(ctx):
    out = ctx.inputs[0]
    for e in ctx.inputs[1:]:
        out = _op.add(out, e)
    return out


@register("RANGE")
def _range(ctx):
    vals = [ctx.value(k, "the range bounds").reshape(-1)[0] for k in range(3)]
    return _expr.const(np.arange(*vals).astype(_out_dtype(ctx)))


@register("RANK")
def _rank(ctx):
    return _expr.const(np.array(len(infer_shape(ctx.inputs[0])), _out_dtype(ctx)))


@register("ONE_HOT")
def _one_hot(ctx):
    depth = _ints(ctx, 1, "the depth")[0]
    opt = ctx.options()
    axis = int(opt.Axis()) if opt is not None else -1
    return _op.one_hot(ctx.inputs[0], ctx.inputs[2], ctx.inputs[3], depth, axis,
                       _out_dtype(ctx))


@register("CUMSUM")
def _cumsum(ctx):
    x = ctx.inputs[0]
    axis = _axis(_ints(ctx, 1, "the axis")[0], len(infer_shape(x)))
    opt = ctx.options()
    exclusive = bool(opt.Exclusive()) if opt is not None else False
    rev = bool(opt.Reverse()) if opt is not None else False
    if rev:
        x = _op.reverse(x, axis)
    out = _op.cumsum(x, axis=axis, exclusive=exclusive)
    return _op.reverse(out, axis) if rev else out


@register("TOPK_V2")
def _topk(ctx):
    k = _ints(ctx, 1, "k")[0]
    out = _op.topk(ctx.inputs[0], k=k, axis=-1, ret_type="both", dtype=_out_dtype(ctx, 1))
    return [out[0], out[1]]


@register("EMBEDDING_LOOKUP")
def _embedding_lookup(ctx):
    return _op.take(ctx.inputs[1], ctx.inputs[0], axis=0, mode="fast")


@register("SCATTER_ND")
def _scatter_nd(ctx):
    idx, updates = ctx.inputs[0], ctx.inputs[1]
    shape = _ints(ctx, 2, "the output shape")
    r = len(infer_shape(idx))
    base = _op.zeros(shape, _out_dtype(ctx))
    return _op.scatter_nd(base, _op.transpose(idx, [r - 1] + list(range(r - 1))), updates,
                          mode="add")
