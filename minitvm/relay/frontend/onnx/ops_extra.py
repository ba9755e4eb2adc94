"""ONNX ops of exported real-world models beyond the core set: QuantizeLinear /
DequantizeLinear (QDQ models), DynamicQuantizeLinear / MatMulInteger / ConvInteger (what
onnxruntime's quantize_dynamic writes), GroupNormalization, LpNormalization,
MeanVarianceNormalization, Swish and CumProd."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common.fold_plan import onnx_col2im_geometry
from ....frontend_common.onnx_finite import quantizes_finite, reciprocal_scale
from ....frontend_common.onnx_quant import (
    NAN_QUANTIZES_TO,
    QRANGE,
    UNKNOWN,
    depthwise_data,
    fake_quant_bounds,
    float_pieces,
    keeps_int8_weight,
    row_conv_attrs,
    scalar_qparams,
    vnni_batch_matmul,
    vnni_conv,
    vnni_matmul,
)
from ... import expr as _expr
from ... import op as _op
from ..common import dynamic_quantize_uint8
from ..fold import col2im
from ..vnni_int import vnni_int_conv, vnni_int_matmul
from .ops_nn import _conv_common, matmul
from .qdq_qnn import dequantize_linear as _qnn_dequantize
from .qdq_qnn import quantize_linear as _qnn_quantize
from .qdq_softmax import quantized_softmax
from .qdq_weight import as_row, vnni_batch_int_matmul
from .qdq_weight import remember as remember_int8_weight
from .registry import onnx_dtype, register

_QRANGE = QRANGE


def _scalar(ctx, x, value):
    return ctx.const(np.array(value, dtype=ctx.dtype(x)))


def _along(ctx, param, ndim: int, axis: int, x_shape=None, block: int = 0):
    """A per-axis (1-D) quantization parameter reshaped to broadcast along ``axis``; a
    blocked one (``block`` > 0, one value per ``block`` elements) repeated to ``x_shape``."""
    if block:
        axis = _om.axis_attr(axis, ndim, "the quantization axis")
        d = x_shape[axis % ndim]
        return _op.take(param, ctx.const(np.arange(d, dtype="int64") // block), axis=axis % ndim)
    if len(ctx.shape(param)) != 1 or ndim == 0:
        return param
    if ctx.shape(param)[0] != 1:  # (one value: a per-tensor parameter, whatever the axis)
        axis = _om.axis_attr(axis, ndim, "the quantization axis")
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return _op.reshape(param, shape)


@register("QuantizeLinear")
def _quantize_linear(ctx, ins, attrs):
    if ctx.qdq_as_qnn:
        return _qnn_quantize(ctx, ins, attrs)
    x, scale = ins[0], ins[1]
    zp = ins[2] if len(ins) > 2 else None
    out_dtype = ctx.dtype(zp) if zp is not None else "uint8"
    if attrs.get("output_dtype"):
        out_dtype = onnx_dtype(int(attrs["output_dtype"]))
    if out_dtype not in _QRANGE:
        raise ctx.fail(f"quantizing to {out_dtype} is not supported")
    fused = quantized_softmax(ctx, scale, zp, out_dtype)
    if fused is not None:  # (ORT's QDQ softmax: its integer kernel)
        return fused
    shape, bs = ctx.shape(x), int(attrs.get("block_size", 0))
    nd, axis, dt = len(shape), int(attrs.get("axis", 1)), ctx.dtype(x)
    finite = quantizes_finite(ctx.node, ctx.finite)  # (no NaN select, and a multiply)
    y = _op.round(_scaled(ctx, x, scale, finite, lambda s: _along(ctx, s, nd, axis, shape, bs)))
    if zp is not None:  # (round is half to even, as ONNX asks)
        y = _op.add(y, _op.cast(_along(ctx, zp, nd, axis, shape, bs), dt))
    lo, hi = _QRANGE[out_dtype]
    y = _op.clip(y, float(lo), float(hi))  # (integer outputs saturate; a NaN to the lowest)
    if not finite:
        y = _op.where(_op.isnan(y), ctx.const(np.array(NAN_QUANTIZES_TO[out_dtype], dt)), y)
    zv = None if zp is None else ctx.maybe_value(zp)
    qparams = scalar_qparams(ctx.maybe_value(scale), zv, bs) if zp is None or zv is not None \
        else None
    if qparams is not None:  # (a DequantizeLinear of it may skip the 8-bit round trip)
        ctx.quantized[ctx.node.output[0]] = (x, qparams, out_dtype, finite)
    return _op.cast(y, out_dtype)


def _scaled(ctx, x, scale, finite: bool, shaped):
    """``x / scale`` (``shaped`` makes a scale broadcast along x), as ``x * (1 / scale)`` with
    the reciprocal folded at import where x cannot be NaN (``onnx_finite.reciprocal_scale``)."""
    dt = ctx.dtype(x)
    sv = ctx.maybe_value(scale) if finite else None
    r = None if sv is None else reciprocal_scale(np.asarray(sv).astype(dt))
    if r is not None:
        return _op.multiply(x, shaped(ctx.const(r)))
    return _op.divide(x, _op.cast(shaped(scale), dt))


def _fake_quant(ctx, scale, zp, bs: int):
    """``onnx_quant.fake_quant_bounds``' form of the current DequantizeLinear when its input is
    a QuantizeLinear's output with the same scalar scale and zero point, else None."""
    if ctx.node.op_type != "DequantizeLinear":  # (a QLinear op's dequantized inputs)
        return None
    found = ctx.quantized.get(ctx.node.input[0])
    if found is None:
        return None
    zv = None if zp is None else ctx.maybe_value(zp)
    if zp is not None and zv is None:
        return None
    x, qparams, q_dtype, finite = found
    bounds = fake_quant_bounds(q_dtype, qparams, scalar_qparams(ctx.maybe_value(scale), zv, bs))
    if bounds is None or ctx.dtype(x) != "float32":
        return None
    s, lo, hi = (ctx.const(np.array(v, "float32")) for v in bounds)
    y = _op.clip(_op.round(_scaled(ctx, x, s, finite, lambda v: v)), bounds[1], bounds[2])
    return _op.multiply(y if finite else _op.where(_op.isnan(y), lo, y), s)


@register("DequantizeLinear")
def _dequantize_linear(ctx, ins, attrs):
    if ctx.qdq_as_qnn:
        return _qnn_dequantize(ctx, ins, attrs)
    x, scale = ins[0], ins[1]
    zp = ins[2] if len(ins) > 2 else None
    shape, bs = ctx.shape(x), int(attrs.get("block_size", 0))
    nd, axis = len(shape), int(attrs.get("axis", 1))
    fake = _fake_quant(ctx, scale, zp, bs)
    if fake is not None:  # (a Conv / MatMul may still read x itself)
        remember_int8_weight(ctx, x, scale, zp, axis, bs)
        return fake
    fdt = ctx.dtype(scale)
    wide = "float64" if ctx.dtype(x) == "int32" else fdt  # int32 exceeds float32's mantissa
    y = _op.cast(x, wide)
    if zp is not None:
        y = _op.subtract(y, _op.cast(_along(ctx, zp, nd, axis, shape, bs), wide))
    if wide != fdt:
        y = _op.cast(y, fdt)
    remember_int8_weight(ctx, x, scale, zp, axis, bs)  # (a Conv may read x itself)
    return _op.multiply(y, _along(ctx, scale, nd, axis, shape, bs))


@register("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx, ins, attrs):
    """uint8 quantization over the tensor's range widened to hold 0: scale (max - min) / 255,
    zero point round(-min / scale); outputs (y, scale, zero point). An all-zero input quantizes
    to 0 with scale 1 and zero point 0, as onnxruntime does."""
    q, scale, zp = dynamic_quantize_uint8(ins[0], ctx.dtype(ins[0]))
    return [q, scale, _op.cast(zp, "uint8")]


def _zp_value(ctx, zp):
    """A zero point for ``onnx_quant``: its value, None when absent, UNKNOWN otherwise."""
    if zp is None:
        return None
    v = ctx.maybe_value(zp)
    return UNKNOWN if v is None else v


def _shifted(ctx, q, zp, acc: str, axis: int | None = None):
    """``q - zp`` in the accumulation dtype; a 1-D zero point broadcast along ``axis``."""
    y = _op.cast(q, acc)
    if zp is None:
        return y
    z = _op.cast(zp, acc)
    if axis is not None and len(ctx.shape(zp)) == 1:
        shape = [1] * ctx.ndim(q)
        shape[axis] = -1
        z = _op.reshape(z, shape)
    return _op.subtract(y, z)


def _float_pieces(ctx, x, x_zp, w, w_zp, out_axis: int, k_axis: int, batch_axes=()):
    """``onnx_quant.float_pieces`` for these inputs: the reduction ranges to sum in float32
    exactly, or None (int32)."""
    return float_pieces(ctx.dtype(x), _zp_value(ctx, x_zp), ctx.dtype(w), ctx.shape(w),
                        ctx.maybe_value(w), _zp_value(ctx, w_zp), out_axis, k_axis,
                        batch_axes)


def _sum_pieces(parts, acc: str):
    out = parts[0]
    if len(parts) == 1:
        return out, acc
    out = _op.cast(out, "int32")
    for p in parts[1:]:
        out = _op.add(out, _op.cast(p, "int32"))
    return out, "int32"


def add_to_product(acc, b, b_value):
    """``acc + b`` for an integer product ``acc`` (int32) and a term ``b`` (an expression;
    ``b_value`` its value when known, else None). Where ``acc`` is ``subtract(y, c)`` of a
    constant ``c`` (``VnniConvPlan.zero_point_sums``: the input zero point's share) and the
    known ``b`` (a bias) broadcasts within ``c``'s shape, the result is ``subtract(y, c - b)``:
    one constant, one integer op an element fewer in the conv's epilogue. Exact: int32 sums
    wrap alike in either order."""
    if b_value is not None and isinstance(acc, _expr.Call) and \
            getattr(acc.op, "name", "") == "subtract" and \
            isinstance(acc.args[1], _expr.Constant):
        c = acc.args[1].data.numpy()
        bv = np.asarray(b_value)
        if c.dtype == bv.dtype == np.int32 and \
                np.broadcast_shapes(c.shape, bv.shape) == c.shape:
            folded = (c.astype(np.int64) - bv).astype(np.int32)  # (wraps as int32 does)
            return _op.subtract(acc.args[0], _expr.const(folded, "int32"))
    return _op.add(acc, b)


def int_matmul(ctx, a, a_zp, b, b_zp):
    """(A - a_zero_point) @ (B - b_zero_point) of 8-bit A (..., M, K) and B (K, N), a per-row
    A and per-column B zero point broadcast: (product, its dtype: float32 or int32), exact
    (see ``_float_pieces``; on VNNI, ``onnx_quant.vnni_matmul``'s int32 product, or for two
    activations of one batch shape ``vnni_batch_matmul``'s)."""
    bv, a_zv, b_zv = ctx.maybe_value(b), _zp_value(ctx, a_zp), _zp_value(ctx, b_zp)
    if ctx.ndim(a) >= 2 and vnni_matmul(ctx.dtype(a), a_zv, a_zp is not None and
                                        int(np.prod(ctx.shape(a_zp))) == 1, ctx.dtype(b), bv,
                                        b_zv):
        return vnni_int_matmul(ctx, a, a_zp, a_zv, bv, ctx.dtype(b), b_zv), "int32"
    if bv is None and vnni_batch_matmul(ctx.dtype(a), a_zv, ctx.shape(a), ctx.dtype(b), b_zv,
                                        ctx.shape(b)):  # (two activations: attention's)
        return vnni_batch_int_matmul(ctx, a, a_zv, b, b_zv), "int32"
    ranges = _float_pieces(ctx, a, a_zp, b, b_zp, -1, -2, range(ctx.ndim(b) - 2))
    acc = "int32" if ranges is None else "float32"
    a_s, b_s = _shifted(ctx, a, a_zp, acc, -2), _shifted(ctx, b, b_zp, acc, -1)
    if ranges is None or len(ranges) == 1:
        return matmul(ctx, a_s, b_s), acc
    nd_a, nd_b = ctx.ndim(a), ctx.ndim(b)
    parts = [matmul(ctx, _op.strided_slice(a_s, [lo], [hi], axes=[nd_a - 1]),
                    _op.strided_slice(b_s, [lo], [hi], axes=[nd_b - 2])) for lo, hi in ranges]
    return _sum_pieces(parts, acc)


def as_row_conv(ctx, x, w, attrs):
    """A 1-D integer conv's input ``[N, C, L]``, weight ``[O, C, K]`` and attributes as the 2-D
    conv's over one row (``[N, C, 1, L]``, ``[O, C, 1, K]``: ``row_conv_attrs``); a caller
    that requantizes does so before squeezing the row away, so that its epilogue fuses into
    the conv (a squeeze between them ends the conv's fused group)."""
    wv = ctx.maybe_value(w)
    w = ctx.const(np.ascontiguousarray(wv[:, :, None, :])) if wv is not None else \
        _op.expand_dims(w, 2)
    return as_row(x), w, row_conv_attrs(attrs)


def int_conv(ctx, x, x_zp, w, w_zp, attrs):
    """The 2-D convolution of (x - x_zero_point) with (w - w_zero_point), padding being the
    zero point (0 once shifted), a per-output-channel weight zero point broadcast: (result,
    its dtype: float32 or int32), exact (see ``_float_pieces``; a grouped convolution is not
    split)."""
    if ctx.ndim(x) == 3:  # (1-D: the 2-D conv over one row)
        x, w, attrs = as_row_conv(ctx, x, w, attrs)
        y, acc = int_conv(ctx, x, x_zp, w, w_zp, attrs)
        return _op.squeeze(y, [2]), acc
    n, kernel, strides, dil, begin, end = _conv_common(ctx, x, w, attrs)
    if n != 2:
        raise ctx.fail(f"{n}-D integer convolution is not supported (1-D and 2-D are)")
    wshape = ctx.shape(w)
    groups = int(attrs.get("group", 1))
    wv, x_zv = ctx.maybe_value(w), _zp_value(ctx, x_zp)
    if vnni_conv(ctx.dtype(x), x_zv, ctx.dtype(w), wv, _zp_value(ctx, w_zp), groups,
                 wshape[0]):
        return vnni_int_conv(ctx, x, x_zv, w, wv, strides, dil, begin, end, groups,
                             kernel), "int32"
    ranges = _float_pieces(ctx, x, x_zp, w, w_zp, 0, 1)
    if ranges is not None and groups != 1 and len(ranges) > 1:
        ranges = None
    acc = "int32" if ranges is None else "float32"
    xs, ws = _shifted(ctx, x, x_zp, acc), _shifted(ctx, w, w_zp, acc, 0)
    as_read = depthwise_data(ctx.dtype(x), x_zv, groups, wshape) \
        if ranges is not None and len(ranges) == 1 else None
    if as_read == "as_is":  # (8-bit data the depthwise schedule widens as it reads it)
        xs = x
    elif as_read == "shift":
        xs = _op.cast(_op.add(_op.cast(x, "int16"), ctx.const(np.array(128, "int16"))),
                      "uint8")
    if ranges is not None and len(ranges) == 1 and \
            keeps_int8_weight(ctx.dtype(w), ctx.maybe_value(w), _zp_value(ctx, w_zp), groups,
                              kernel):
        ws = w  # (read as int8 and widened by the kernel: a quarter of the weight bytes)

    def conv(xp, wp):
        return _op.nn.conv2d(xp, wp, strides=strides, padding=(begin[0], begin[1], end[0],
                                                                end[1]),
                             dilation=dil, groups=groups, channels=wshape[0],
                             kernel_size=kernel, out_dtype=acc)

    if ranges is None or len(ranges) == 1:
        return conv(xs, ws), acc
    parts = [conv(_op.strided_slice(xs, [lo], [hi], axes=[1]),
                  _op.strided_slice(ws, [lo], [hi], axes=[1])) for lo, hi in ranges]
    return _sum_pieces(parts, acc)


@register("MatMulInteger")
def _matmul_integer(ctx, ins, attrs):
    """int32 (A - a_zero_point) @ (B - b_zero_point), computed as float32 when that is exact
    (see ``_acc_dtype``)."""
    out, acc = int_matmul(ctx, ins[0], _opt(ins, 2), ins[1], _opt(ins, 3))
    return out if acc == "int32" else _op.cast(out, "int32")


@register("ConvInteger")
def _conv_integer(ctx, ins, attrs):
    """int32 convolution of (x - x_zero_point) with (w - w_zero_point), computed as float32
    when that is exact (see ``_acc_dtype``); a constant weight with zero points on VNNI with
    the input's window sums (``qdq_weight.vnni_zp_int_conv``, as QLinearConv)."""
    from .qdq_weight import vnni_zp_int_conv

    x, w, x_zp, w_zp = ins[0], ins[1], _opt(ins, 2), _opt(ins, 3)
    row = ctx.ndim(x) == 3
    if row:  # (1-D: the 2-D conv over one row)
        x, w, attrs = as_row_conv(ctx, x, w, attrs)
    out = vnni_zp_int_conv(ctx, x, x_zp, w, w_zp, attrs)
    out, acc = int_conv(ctx, x, x_zp, w, w_zp, attrs) if out is None else (out, "int32")
    out = out if acc == "int32" else _op.cast(out, "int32")
    return _op.squeeze(out, [2]) if row else out


def _opt(ins, i):
    return ins[i] if len(ins) > i else None


@register("GroupNormalization")
def _group_norm(ctx, ins, attrs):
    x, scale, bias = ins[0], ins[1], ins[2]
    shape = ctx.shape(x)
    groups, eps = int(attrs["num_groups"]), float(attrs.get("epsilon", 1e-5))
    c = shape[1]
    g = _op.reshape(x, [shape[0], groups, -1])
    mean = _op.mean(g, [2], keepdims=True)
    cent = _op.subtract(g, mean)
    var = _op.mean(_op.multiply(cent, cent), [2], keepdims=True)
    y = _op.reshape(_op.divide(cent, _op.sqrt(_op.add(var, _scalar(ctx, x, eps)))), shape)
    if ctx.shape(scale)[0] != c:  # opset 18's per-group scale and bias
        scale, bias = _op.repeat(scale, c // groups, 0), _op.repeat(bias, c // groups, 0)
    per = [c] + [1] * (len(shape) - 2)
    return _op.add(_op.multiply(y, _op.reshape(scale, per)), _op.reshape(bias, per))


@register("LpNormalization")
def _lp_norm(ctx, ins, attrs):
    x = ins[0]
    axis, p = int(attrs.get("axis", -1)), int(attrs.get("p", 2))
    if p == 1:
        n = _op.sum(_op.abs(x), [axis], keepdims=True)
    elif p == 2:
        n = _op.sqrt(_op.sum(_op.multiply(x, x), [axis], keepdims=True))
    else:
        raise ctx.fail(f"p={p} is not supported (1 or 2)")
    # a zero norm gives 0 (the spec's 0/0 = 0), not NaN
    zero = _scalar(ctx, x, 0)
    is_zero = _op.equal(n, zero)
    safe = _op.where(is_zero, _scalar(ctx, x, 1), n)
    return _op.where(is_zero, zero, _op.divide(x, safe))


@register("MeanVarianceNormalization")
def _mvn(ctx, ins, attrs):
    x = ins[0]
    axes = [int(a) for a in attrs.get("axes", [0, 2, 3])]
    cent = _op.subtract(x, _op.mean(x, axes, keepdims=True))
    var = _op.mean(_op.multiply(cent, cent), axes, keepdims=True)
    return _op.divide(cent, _op.sqrt(_op.add(var, _scalar(ctx, x, 1e-9))))


@register("Swish")
def _swish(ctx, ins, attrs):
    x = ins[0]
    alpha = float(attrs.get("alpha", 1.0))
    return _op.multiply(x, _op.sigmoid(_op.multiply(x, _scalar(ctx, x, alpha))))


@register("CumProd")
def _cumprod(ctx, ins, attrs):
    x = ins[0]
    axis = int(np.asarray(ctx.value(ins[1], "CumProd's axis")).reshape(-1)[0])
    exclusive = bool(attrs.get("exclusive", 0))
    if attrs.get("reverse", 0):  # the scan of the flipped input, flipped back
        return _op.reverse(_op.cumprod(_op.reverse(x, axis), axis, exclusive=exclusive), axis)
    return _op.cumprod(x, axis, exclusive=exclusive)



@register("Col2Im")
def _col2im(ctx, ins, attrs):
    """Col2Im (opset 18): ``relay.frontend.fold.col2im``."""
    geometry = onnx_col2im_geometry(ctx.value(ins[1], "Col2Im's image_shape"),
                                    ctx.value(ins[2], "Col2Im's block_shape"), attrs, ctx.fail)
    return col2im(ins[0], ctx.shape(ins[0]), *geometry, ctx.fail)
