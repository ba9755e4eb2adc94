"""The FakeQuantizationToInteger rules of TVM v0.19's op set: each takes the call (arguments
already integer) and the affine-type map and returns ``[new expression, its affine type]``.

Layout/selection ops keep their input's type unchanged; conv2d/dense/batch_matmul become qnn
ops accumulating in int32 with scale ``x_scale * w_scale`` and zero point 0; add/subtract/
multiply and concatenate become the qnn ops with the region's output parameters; pools and mean
compute in int32; relu/clip compare with quantized bounds; sqrt/rsqrt/exp/erf/sigmoid/tanh/
abs/log become qnn unary ops (lookup tables once canonicalized).

Differences from TVM: a batch_matmul keeps its transpose flags (TVM drops them); leaky_relu
is rewritten as ``qnn.leaky_relu`` of the integer input with the output's parameters (TVM wraps
the float op and reports the input's type).
"""

from __future__ import annotations

import numpy as np

from ...ir.affine_type import TensorAffineType, TupleAffineType
from ...ir.module import IRModule
from ...ir.structural import structural_equal
from ..expr import Constant, const
from ..op import op as _reg
from ..op import tensor as _t
from ..op import transform as _tr
from ..op.nn import nn as _nn

register = _reg.register_fake_quantization_to_integer


def _qnn():
    from ..qnn import op as qnn

    return qnn


def fold_constant(expr):
    """FoldConstantExpr in an empty module (quantization parameters become constants)."""
    from .fold_constant import FoldConstantExpr

    return FoldConstantExpr(expr, IRModule())


def get_zeros(scale):
    """int32 zero points shaped like ``scale``."""
    return fold_constant(_t.cast(_t.zeros_like(scale), "int32"))


def infer_shape(expr):
    """The static shape of a closed expression."""
    from .infer_type import InferTypeLocal

    return [int(d) for d in InferTypeLocal(expr).shape]


def approx_equal(x, y) -> bool:
    """Constants equal up to float tolerance, other expressions structurally equal."""
    x, y = fold_constant(x), fold_constant(y)
    if isinstance(x, Constant) and isinstance(y, Constant):
        a, b = x.data.numpy(), y.data.numpy()
        return a.shape == b.shape and bool(np.allclose(a, b))
    return structural_equal(x, y)


def _same_params(a: TensorAffineType, b: TensorAffineType) -> bool:
    return (approx_equal(a.scale, b.scale) and approx_equal(a.zero_point, b.zero_point)
            and a.dtype == b.dtype)


def _attrs(call) -> dict:
    a = call.attrs
    return {k: getattr(a, k) for k in a.keys()} if a is not None else {}


@register("qnn.dequantize")
def dequantize(expr, type_map):
    """The integer input stands for the dequantized value."""
    return [expr.args[0], type_map[expr]]


@register("qnn.quantize")
def quantize(expr, type_map):
    """The region's result: requantized unless its parameters already match."""
    out = expr.args[0]
    t = type_map[out]
    in_scale, in_zp = fold_constant(t.scale), fold_constant(t.zero_point)
    if not (approx_equal(in_scale, expr.args[1]) and approx_equal(in_zp, expr.args[2])
            and t.dtype == expr.attrs.out_dtype):
        out = _qnn().requantize(out, in_scale, in_zp, expr.args[1], expr.args[2],
                                out_dtype=expr.attrs.out_dtype, axis=t.axis)
    return [out, TensorAffineType(expr.args[1], expr.args[2], expr.attrs.out_dtype,
                                  expr.attrs.axis)]


def register_unary_identity(op_name: str):
    """Ops that move or select values: the integer op is the same op, same type."""

    def identity(expr, type_map):
        if len(expr.args) != 1:
            raise ValueError(f"{op_name}: expected one input")
        return [expr, type_map[expr.args[0]]]

    return register(op_name, identity)


for _name in ("reshape", "squeeze", "strided_slice", "transpose", "expand_dims",
              "nn.max_pool2d", "nn.batch_flatten", "nn.depth_to_space", "max", "min",
              "image.resize2d"):
    register_unary_identity(_name)


def _to_int32(arg, t, out_t):
    """``arg`` as int32 in ``out_t``'s parameters (a cast when they already match)."""
    if _same_params(t, out_t):
        return _t.cast(arg, "int32")
    return _qnn().requantize(arg, t.scale, t.zero_point, out_t.scale, out_t.zero_point,
                             out_dtype="int32", axis=t.axis)


@register("broadcast_to")
def broadcast_to(expr, type_map):
    arg = expr.args[0]
    return [_tr.broadcast_to(arg, expr.attrs.shape), type_map[arg]]


def _exact_qat_bias(b, x_t) -> None:
    """Raise unless the float constant bias ``b`` is exactly integers of ``x_t``'s (scalar)
    scale within int32 -- else quantizing it would round it (to ~1e-6 of a QAT head's
    outputs), and in QAT mode the bias is added to the dequantized result in float instead,
    as the float program adds it."""
    scale = fold_constant(x_t.scale)
    if isinstance(scale, Constant) and scale.data.numpy().size == 1:
        s = float(scale.data.numpy().reshape(()))
        bv = b.data.numpy().astype(np.float64)
        q = np.round(bv / s)
        if s > 0 and np.all(np.abs(q) <= np.iinfo(np.int32).max) and \
                np.array_equal((q * s).astype(b.data.numpy().dtype), b.data.numpy()):
            return
    raise ValueError("nn.bias_add: quantizing the float bias would round it (QAT mode: the "
                     "float add stays)")


@register("nn.bias_add")
def bias_add(expr, type_map):
    """The bias added to the integers: a quantized bias requantized to the input's parameters,
    a float constant quantized to them (TVM's rule). In QAT mode (no region output type) a
    float bias that quantizing would round stays a float add of the dequantized result
    (``_exact_qat_bias``)."""
    x, b = expr.args
    x_t = type_map[x]
    if b in type_map:
        b_t = type_map[b]
        if not _same_params(x_t, b_t):
            b = _qnn().requantize(b, b_t.scale, b_t.zero_point, fold_constant(x_t.scale),
                                  fold_constant(x_t.zero_point), out_dtype=x_t.dtype, axis=0)
    else:
        if not isinstance(b, Constant) or not str(b.data.dtype).startswith(("float", "bfloat")):
            raise TypeError("bias_add: an unquantized bias must be a float constant")
        if expr not in type_map:
            _exact_qat_bias(b, x_t)
        b = _qnn().quantize(b, x_t.scale, x_t.zero_point, axis=0, out_dtype=x_t.dtype)
    return [_nn.bias_add(x, b, expr.attrs.axis), x_t]


def _conv_like(make):
    def rewrite(expr, type_map):
        attrs = _attrs(expr)
        attrs.pop("out_dtype", None)
        x, weight = expr.args
        x_t, w_t = type_map[x], type_map[weight]
        scale = fold_constant(_t.multiply(x_t.scale, w_t.scale))
        out = make(_qnn())(x, weight, x_t.zero_point, w_t.zero_point, x_t.scale, w_t.scale,
                           **attrs)
        layout = attrs["out_layout"] or attrs["data_layout"]
        return [out, TensorAffineType(scale, get_zeros(scale), out.attrs.out_dtype,
                                      layout.index("C"))]

    return rewrite


register("nn.conv2d", _conv_like(lambda q: q.conv2d))
register("nn.conv2d_transpose", _conv_like(lambda q: q.conv2d_transpose))


def _exact_wide_dense(x, x_t, w_t, weight) -> None:
    """Raise unless the int32 sums of a dense of ``x``'s wider values (16- or 32-bit: a QAT
    global pool's sums) less their scalar zero point and the constant 8-bit ``weight`` (zero
    points ``w_t``'s) are exact: every output's sum of |x - z_x| * |w - z_w| at most
    2**31 - 1, with |x - z_x| bounded by ``int_range`` (the pool's window times the 8-bit
    span, where it can tell; else the dtype's)."""
    from .fake_quantization_to_integer_bounds import int_range

    w = fold_constant(weight)
    zp, x_zp = fold_constant(w_t.zero_point), fold_constant(x_t.zero_point)
    found = int_range(x, x_t.dtype) if x_t.dtype in ("int16", "uint16", "int32") else None
    if found is None or not isinstance(w, Constant) or not isinstance(zp, Constant) or \
            not isinstance(x_zp, Constant) or x_zp.data.numpy().size != 1:
        raise ValueError(f"nn.dense: no exact integer form for {x_t.dtype} data (stays float)")
    z = int(x_zp.data.numpy().reshape(()))
    x_max = max(abs(found[0] - z), abs(found[1] - z))
    wv = w.data.numpy().astype(np.int64)
    zv = np.asarray(zp.data.numpy(), np.int64).reshape(-1, 1)
    if int(np.abs(wv - zv).sum(axis=1).max(initial=0)) * x_max > np.iinfo(np.int32).max:
        raise ValueError("nn.dense: the int32 sums could overflow (stays float)")


@register("nn.dense")
def dense(expr, type_map):
    """qnn.dense of 8-bit data, or of 16- or 32-bit data (a QAT global pool's exact sums)
    where its int32 sums provably do not overflow; the float dense stays otherwise."""
    x, weight = expr.args
    x_t, w_t = type_map[x], type_map[weight]
    if x_t.dtype not in ("int8", "uint8"):
        _exact_wide_dense(x, x_t, w_t, weight)
    scale = fold_constant(_t.multiply(x_t.scale, w_t.scale))
    out = _qnn().dense(x, weight, x_t.zero_point, w_t.zero_point, x_t.scale, w_t.scale,
                       expr.attrs.units)
    return [out, TensorAffineType(scale, get_zeros(scale), out.attrs.out_dtype, 1)]


@register("nn.batch_matmul")
def batch_matmul(expr, type_map):
    x, y = expr.args
    x_t, y_t = type_map[x], type_map[y]
    scale = fold_constant(_t.multiply(x_t.scale, y_t.scale))
    out = _qnn().batch_matmul(x, y, x_t.zero_point, y_t.zero_point, x_t.scale, y_t.scale)
    a = expr.attrs
    if (a.transpose_a, a.transpose_b) != (False, True):
        from ...ir.op import Op
        from ..expr import Call

        out = Call(Op.get("qnn.batch_matmul"), out.args,
                   type(out.attrs)(out_dtype=out.attrs.out_dtype, transpose_a=a.transpose_a,
                                   transpose_b=a.transpose_b))
    return [out, TensorAffineType(scale, const(0), out.attrs.out_dtype, x_t.axis)]


@register("concatenate")
def concat(expr, type_map):
    from ..expr import Tuple

    tuple_type = type_map[expr.args[0]]
    out_t = type_map[expr]
    out = _qnn().concatenate(expr.args[0], Tuple([t.scale for t in tuple_type.types]),
                             Tuple([t.zero_point for t in tuple_type.types]), out_t.scale,
                             out_t.zero_point, axis=expr.attrs.axis)
    return [out, out_t]


@register("topk")
def topk(expr, type_map):
    if expr.attrs.ret_type != "values":
        raise ValueError("topk: only ret_type='values' keeps quantized values")
    return [expr, type_map[expr.args[0]]]


@register("split")
def split(expr, type_map):
    t = type_map[expr.args[0]]
    sections = expr.attrs.indices_or_sections
    n = int(sections) if isinstance(sections, int) or hasattr(sections, "value") else (
        len(sections) + 1)
    return [expr, TupleAffineType([t] * n)]


def _per_channel_bound(value, scale_shape, ndim, axis):
    b_shape = [1] * ndim
    b_shape[axis] = -1
    return _tr.reshape(_tr.broadcast_to(value, scale_shape), b_shape)


@register("clip")
def clip(expr, type_map):
    arg = expr.args[0]
    t = type_map[arg]
    amin, amax = expr.attrs.a_min, expr.attrs.a_max
    scale, zp = fold_constant(t.scale), fold_constant(t.zero_point)
    if (isinstance(scale, Constant) and scale.data.numpy().size == 1
            and isinstance(zp, Constant) and zp.data.numpy().size == 1):
        s, z = scale.data.numpy().item(), zp.data.numpy().item()
        return [_t.clip(arg, int(amin / s + z), int(amax / s + z)), t]
    lo, hi = const(float(amin)), const(float(amax))
    scale_shape = infer_shape(scale)
    if scale_shape and scale_shape[0] > 1:
        ndim = len(infer_shape(arg))
        lo = _per_channel_bound(lo, scale_shape, ndim, t.axis)
        hi = _per_channel_bound(hi, scale_shape, ndim, t.axis)
    qnn = _qnn()
    lo = fold_constant(qnn.quantize(lo, scale, zp, t.axis, t.dtype))
    hi = fold_constant(qnn.quantize(hi, scale, zp, t.axis, t.dtype))
    return [_t.minimum(_t.maximum(arg, lo), hi), t]


@register("nn.relu")
def relu(expr, type_map):
    arg = expr.args[0]
    t = type_map[arg]
    scale_shape = infer_shape(t.scale)
    if len(scale_shape) > 1:
        raise ValueError("relu: the scale must be a scalar or 1-D")
    zp = t.zero_point
    if len(scale_shape) == 1 and scale_shape[0] > 1:
        zp = _per_channel_bound(zp, scale_shape, len(infer_shape(arg)), t.axis)
    return [_t.maximum(arg, fold_constant(_t.cast(zp, t.dtype))), t]


@register("nn.leaky_relu")
def leaky_relu(expr, type_map):
    arg = expr.args[0]
    x_t, out_t = type_map[arg], type_map[expr]
    out = _qnn().leaky_relu(arg, expr.attrs.alpha, x_t.scale, x_t.zero_point, out_t.scale,
                            out_t.zero_point)
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, x_t.dtype, out_t.axis)]


@register("nn.pad")
def pad(expr, type_map):
    arg = expr.args[0]
    t = type_map[arg]
    pad_value = expr.args[1]
    if pad_value in type_map:
        pad_t = type_map[pad_value]
        if not structural_equal(t, pad_t):
            pad_value = _qnn().requantize(pad_value, pad_t.scale, pad_t.zero_point, t.scale,
                                          t.zero_point, out_dtype=t.dtype, axis=pad_t.axis)
    else:
        if not isinstance(pad_value, Constant) or not str(pad_value.data.dtype).startswith(
                ("float", "bfloat")):
            raise TypeError("nn.pad: an unquantized pad value must be a float constant")
        pad_value = _qnn().quantize(pad_value, t.scale, t.zero_point)
    a = expr.attrs
    return [_nn.pad(arg, a.pad_width, pad_value, a.pad_mode), t]


@register("mean")
def mean(expr, type_map):
    arg = expr.args[0]
    t = type_map[arg]
    out = _t.cast(_tr_reduce_mean(_t.cast(arg, "int32"), expr.attrs), t.dtype)
    return [out, t]


def _tr_reduce_mean(x, attrs):
    from ..op.reduce import mean as _mean

    return _mean(x, attrs.axis, attrs.keepdims, attrs.exclude)


def get_binary_types(expr, type_map):
    """The inputs and affine types of a binary op; a float constant input is quantized with
    the other input's parameters."""
    left, right = expr.args
    left_t, right_t = type_map.get(left), type_map.get(right)
    out_t = type_map[expr]
    if left_t is None and right_t is None:
        raise TypeError("neither input is quantized")
    qnn = _qnn()
    if left_t is None:
        if not isinstance(left, Constant):
            raise TypeError("an unquantized binary input must be a constant")
        left = qnn.quantize(left, right_t.scale, right_t.zero_point, out_dtype=right_t.dtype)
        left_t = right_t
    if right_t is None:
        if not isinstance(right, Constant):
            raise TypeError("an unquantized binary input must be a constant")
        right = qnn.quantize(right, left_t.scale, left_t.zero_point, out_dtype=left_t.dtype)
        right_t = left_t
    if left_t.dtype != out_t.dtype:
        out_t = left_t
    return left, right, left_t, right_t, out_t


def register_binary_qnn(op_name: str, make):
    """A binary op that becomes the qnn op requantizing to the output parameters."""

    def binary(expr, type_map):
        left, right, left_t, right_t, out_t = get_binary_types(expr, type_map)
        out = make()(left, right, left_t.scale, left_t.zero_point, right_t.scale,
                     right_t.zero_point, out_t.scale, out_t.zero_point, left_t.axis,
                     right_t.axis)
        return [out, out_t]

    return register(op_name, binary)


register_binary_qnn("add", lambda: _qnn().add)
register_binary_qnn("multiply", lambda: _qnn().mul)
register_binary_qnn("subtract", lambda: _qnn().subtract)


def register_binary_identity(op_name: str, make):
    """A binary op computed on the integers once both inputs share the output parameters."""

    def binary(expr, type_map):
        left, right, left_t, right_t, out_t = get_binary_types(expr, type_map)
        qnn = _qnn()
        if left_t is not out_t:
            left = qnn.requantize(left, left_t.scale, left_t.zero_point, out_t.scale,
                                  out_t.zero_point, out_dtype=out_t.dtype, axis=left_t.axis)
        if right_t is not out_t:
            right = qnn.requantize(right, right_t.scale, right_t.zero_point, out_t.scale,
                                   out_t.zero_point, out_dtype=out_t.dtype, axis=right_t.axis)
        return [make(left, right), out_t]

    return register(op_name, binary)


register_binary_identity("minimum", _t.minimum)
register_binary_identity("maximum", _t.maximum)


def register_unary_qnn(op_name: str, qnn_name: str):
    """An elementwise function that becomes the qnn unary op (a lookup table once
    canonicalized)."""

    def unary(expr, type_map):
        arg = expr.args[0]
        x_t, out_t = type_map[arg], type_map[expr]
        out = getattr(_qnn(), qnn_name)(arg, x_t.scale, x_t.zero_point, out_t.scale,
                                        out_t.zero_point)
        return [out, out_t]

    return register(op_name, unary)


for _name in ("sqrt", "rsqrt", "exp", "erf", "sigmoid", "tanh", "abs", "log"):
    register_unary_qnn(_name, _name)


# the average pools' rules (an integer mean that rounds; QAT sums)
from . import fake_quantization_to_integer_pools  # noqa: E402, F401
