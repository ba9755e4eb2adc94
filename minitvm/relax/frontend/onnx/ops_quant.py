"""Quantized ONNX ops beyond QuantizeLinear / DequantizeLinear: what onnxruntime's
quantize_dynamic writes (DynamicQuantizeLinear, MatMulInteger, ConvInteger) and its QOperator
format (QLinearConv, QLinearMatMul, com.microsoft QGemm / QLinearAdd / QLinearMul /
QLinearGlobalAveragePool / QLinearAveragePool / QLinearSigmoid / QLinearLeakyRelu /
QLinearConcat).

Integer products are taken exactly with float32 kernels, the reduction split where a partial
sum could pass 2**24 (``frontend_common.onnx_quant``, shared with Relay's importer), else in
int32; on a host with AVX-512 VNNI a conv ``onnx_quant.vnni_conv`` allows is an int32 conv of
the 8-bit values themselves, and a matmul ``onnx_quant.vnni_matmul`` allows an int32 matmul
(``qdq_vnni``). QLinear Conv / MatMul / Gemm requantize in float32 with the multiplier
x_scale * w_scale / y_scale, as onnxruntime does; the others dequantize, run the float op's
converter and quantize its result."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common.onnx_quant import (
    QLINEAR_FLOAT_OPS,
    QRANGE,
    UNKNOWN,
    depthwise_data,
    float_pieces,
    keeps_int8_weight,
    qlinear_float_attrs,
    row_conv_attrs,
    vnni_batch_matmul,
    vnni_conv,
    vnni_matmul,
)
from ... import op as _op
from ...expr import Call, Constant, Var, const
from ..common import dynamic_quantize_uint8
from ..vnni_int import int_matmul as vnni_int_matmul
from .context import CONVERTERS, Context, register
from .ops_nn import _spatial_pads
from .qdq_softmax import qlinear_softmax
from .qdq_vnni import as_row, int_batch_matmul, squeezed
from .qdq_vnni import int_conv as vnni_int_conv


def _opt(ins, i):
    return ins[i] if len(ins) > i and ins[i] is not None else None


def _zp_value(ctx: Context, zp):
    if zp is None:
        return None
    v = ctx.known(zp)
    return UNKNOWN if v is None or v.dtype == object else v


@register("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx: Context, ins, attrs):
    """uint8 over the tensor's range widened to hold 0: scale (max - min) / 255, zero point
    round(-min / scale); an all-zero input gets scale 1 and zero point 0 (as onnxruntime)."""
    x = ctx.expr(ins[0])
    q, scale, zp = dynamic_quantize_uint8(ctx, x, ctx.dtype(x))
    return [q, scale, ctx.emit(_op.astype(zp, "uint8"))]


def _shifted(ctx: Context, q, zp, acc: str, axis: int | None = None):
    """``q - zp`` in the accumulation dtype (folded when both are known), a 1-D zero point
    broadcast along ``axis``."""
    qv, zv = ctx.known(q), (ctx.known(zp) if zp is not None else np.zeros((), "int64"))
    nd = ctx.ndim(q)
    if qv is not None and zv is not None and qv.dtype != object and zv.dtype != object:
        z = zv.astype("int64")
        if axis is not None and z.ndim == 1:
            shape = [1] * nd
            shape[axis] = -1
            z = z.reshape(shape)
        return const((qv.astype("int64") - z).astype(acc))
    y = _op.astype(ctx.expr(q), acc)
    if zp is None:
        return y
    z = ctx.emit(_op.astype(ctx.expr(zp), acc))
    if axis is not None and ctx.ndim(zp) == 1:
        shape = [1] * nd
        shape[axis] = -1
        z = _op.reshape(z, ctx.shape_expr(shape))
    return _op.subtract(y, z)


def _pieces(ctx: Context, x, x_zp, w, w_zp, out_axis, k_axis, batch_axes=()):
    wv = ctx.known(w)
    if wv is not None and wv.dtype == object:
        wv = None
    if any(not isinstance(d, int) for d in ctx.shape(w)):
        return None
    return float_pieces(ctx.dtype(x), _zp_value(ctx, x_zp), ctx.dtype(w), ctx.shape(w), wv,
                        _zp_value(ctx, w_zp), out_axis, k_axis, batch_axes)


def _bound(ctx: Context, v):
    """A constant as it is, a call bound in the dataflow block."""
    return v if ctx.known(v) is not None else ctx.emit(v)


def _slice(ctx: Context, v, axis: int, lo: int, hi: int):
    """``v[lo:hi]`` along ``axis``: sliced at import when ``v`` is a constant (the weights: a
    run-time slice of them cost more than the convolution)."""
    k = ctx.known(v)
    if k is not None and k.dtype != object:
        idx = [slice(None)] * k.ndim
        idx[axis] = slice(lo, hi)
        return const(np.ascontiguousarray(k[tuple(idx)]))
    return _op.strided_slice(v, [axis], [lo], [hi])


def _sum_pieces(ctx: Context, parts, acc: str):
    if len(parts) == 1:
        return parts[0], acc
    out = ctx.emit(_op.astype(parts[0], "int32"))
    for p in parts[1:]:
        out = ctx.emit(_op.add(out, _op.astype(p, "int32")))
    return out, "int32"


def int_matmul(ctx: Context, a, a_zp, b, b_zp):
    """(A - a_zero_point) @ (B - b_zero_point) of 8-bit A (..., M, K) and B (..., K, N), a
    per-row A and per-column B zero point broadcast: (product, its dtype), exact (on VNNI,
    ``onnx_quant.vnni_matmul``'s int32 product, or for two activations of one batch shape
    ``vnni_batch_matmul``'s)."""
    bv, a_zv, b_zv = ctx.known(b), _zp_value(ctx, a_zp), _zp_value(ctx, b_zp)
    if bv is not None and bv.dtype != object and ctx.ndim(a) >= 2 and \
            vnni_matmul(ctx.dtype(a), a_zv, a_zp is not None and ctx.ndim(a_zp) <= 1 and
                        int(np.prod(ctx.shape(a_zp))) == 1, ctx.dtype(b), bv, b_zv):
        return vnni_int_matmul(ctx, ctx.expr(a), a_zp, a_zv, bv, ctx.dtype(b), b_zv), "int32"
    if (bv is None or bv.dtype == object) and \
            vnni_batch_matmul(ctx.dtype(a), a_zv, ctx.shape(a), ctx.dtype(b), b_zv,
                              ctx.shape(b)):  # (two activations: attention's)
        return int_batch_matmul(ctx, ctx.expr(a), a_zv, ctx.expr(b), b_zv), "int32"
    ranges = _pieces(ctx, a, a_zp, b, b_zp, -1, -2, range(ctx.ndim(b) - 2))
    acc = "int32" if ranges is None else "float32"
    a_s, b_s = _shifted(ctx, a, a_zp, acc, ctx.ndim(a) - 2), \
        _shifted(ctx, b, b_zp, acc, ctx.ndim(b) - 1)
    if ranges is None or len(ranges) == 1:
        return ctx.emit(_op.matmul(a_s, b_s, out_dtype=None if acc == "float32" else acc)), acc
    a_s, b_s = _bound(ctx, a_s), _bound(ctx, b_s)
    na, nb = ctx.ndim(a), ctx.ndim(b)
    parts = [ctx.emit(_op.matmul(_slice(ctx, a_s, na - 1, lo, hi),
                                 _slice(ctx, b_s, nb - 2, lo, hi)))
             for lo, hi in ranges]
    return _sum_pieces(ctx, parts, acc)


def _row_conv(ctx: Context, x, w, attrs, x_zp, w_zp):
    """A 1-D integer conv's operands ``(x, x_zp, w, w_zp, attrs)`` as the 2-D conv's over one
    row (``[N, C, 1, L]``, ``[O, C, 1, K]``: ``row_conv_attrs``); a caller that requantizes
    does so before squeezing the row away, so that its epilogue fuses into the conv (a squeeze
    between them ends the conv's fused group)."""
    wv = ctx.known(w)
    w = np.ascontiguousarray(wv[:, :, None, :]) if wv is not None and wv.dtype != object \
        else ctx.emit(_op.expand_dims(ctx.expr(w), 2))
    return as_row(ctx, ctx.expr(x)), x_zp, w, w_zp, row_conv_attrs(attrs)


def int_conv(ctx: Context, x, x_zp, w, w_zp, attrs):
    """The 2-D convolution of (x - x_zero_point) with (w - w_zero_point), the padding being
    the zero point (0 once shifted), a per-output-channel weight zero point broadcast:
    (result, its dtype), exact (a grouped convolution is not split); a 1-D one as the 2-D
    conv over one row."""
    if ctx.ndim(x) == 3:
        y, acc = int_conv(ctx, *_row_conv(ctx, x, w, attrs, x_zp, w_zp))
        return ctx.emit(_op.squeeze(y, [2])), acc
    wshape = ctx.shape(w)
    kernel = [int(k) for k in attrs.get("kernel_shape", wshape[2:])]
    if len(kernel) != 2:
        raise ctx.fail(f"{len(kernel)}-D integer convolution is not supported (1-D and 2-D "
                       "are)")
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    dil = [int(d) for d in attrs.get("dilations", [1, 1])]
    pads = _spatial_pads(ctx, attrs, ctx.shape(x)[2:], kernel, strides, dil)
    groups = int(attrs.get("group", 1))
    wv, x_zv, w_zv = ctx.known(w), _zp_value(ctx, x_zp), _zp_value(ctx, w_zp)
    if wv is not None and wv.dtype != object and \
            vnni_conv(ctx.dtype(x), x_zv, ctx.dtype(w), wv, w_zv, groups, wshape[0],
                      weight_zero_points=True):  # (a weight zero point: window sums)
        return vnni_int_conv(ctx, ctx.expr(x), x_zv, wv, strides, pads, dil, ctx.dtype(w),
                             w_zv), "int32"
    ranges = _pieces(ctx, x, x_zp, w, w_zp, 0, 1)
    if ranges is not None and groups != 1 and len(ranges) > 1:
        ranges = None
    acc = "int32" if ranges is None else "float32"
    xs, ws = _shifted(ctx, x, x_zp, acc), _shifted(ctx, w, w_zp, acc, 0)
    narrow = ranges is not None and len(ranges) == 1 and \
        keeps_int8_weight(ctx.dtype(w), ctx.known(w), _zp_value(ctx, w_zp), groups, kernel)
    if narrow:
        ws = ctx.expr(w)  # (read as int8 and widened by the kernel: a quarter of the bytes)
    as_read = depthwise_data(ctx.dtype(x), x_zv, groups, wshape) \
        if ranges is not None and len(ranges) == 1 and ctx.known(x) is None else None
    if as_read is not None:  # (8-bit data the depthwise schedule widens as it reads it)
        xs = ctx.expr(x) if as_read == "as_is" else _op.astype(_op.add(
            _op.astype(ctx.expr(x), "int16"), const(np.array(128, "int16"))), "uint8")

    def conv(xp, wp):
        return ctx.emit(_op.nn.conv2d(xp, wp, strides, pads, dil, groups,
                                      out_dtype=acc if narrow or as_read or acc != "float32"
                                      else None))

    if ranges is None or len(ranges) == 1:
        return conv(xs, ws), acc
    xs, ws = _bound(ctx, xs), _bound(ctx, ws)
    parts = [conv(_slice(ctx, xs, 1, lo, hi), _slice(ctx, ws, 1, lo, hi)) for lo, hi in ranges]
    return _sum_pieces(ctx, parts, acc)


@register("MatMulInteger")
def _matmul_integer(ctx: Context, ins, attrs):
    out, acc = int_matmul(ctx, ins[0], _opt(ins, 2), ins[1], _opt(ins, 3))
    return out if acc == "int32" else ctx.emit(_op.astype(out, "int32"))


@register("ConvInteger")
def _conv_integer(ctx: Context, ins, attrs):
    out, acc = int_conv(ctx, ins[0], _opt(ins, 2), ins[1], _opt(ins, 3), attrs)
    return out if acc == "int32" else ctx.emit(_op.astype(out, "int32"))


def _along(ctx: Context, param, ndim: int, axis: int):
    """A 1-D (per-channel) parameter shaped to broadcast along ``axis``; a scalar as it is."""
    p = ctx.expr(param)
    shape = ctx.shape(p)
    if len(shape) != 1 or shape[0] == 1:
        return _op.reshape(p, ctx.shape_expr([])) if shape else p
    s = [1] * ndim
    s[_om.axis_attr(axis, ndim, "the quantization axis")] = -1
    return _op.reshape(p, ctx.shape_expr(s))


def _add_to_product(ctx: Context, acc, b, bv):
    """``acc + b``; where the int32 ``acc`` is bound to ``subtract(y, c)`` of a constant ``c``
    (``VnniConvPlan.zero_point_sums``) and ``b``'s value ``bv`` (a bias, shaped as ``b``) is
    known and broadcasts within ``c``'s shape, ``subtract(y, c - b)``: one constant, one
    integer op an element fewer in the conv's epilogue (exact: int32 sums wrap alike in either
    order)."""
    bound = ctx.bb.lookup_binding(acc) if bv is not None and isinstance(acc, Var) else None
    if isinstance(bound, Call) and getattr(bound.op, "name", "") == "relax.subtract" and \
            isinstance(bound.args[1], Constant):
        c = bound.args[1].data.numpy()
        if c.dtype == bv.dtype == np.int32 and \
                np.broadcast_shapes(c.shape, bv.shape) == c.shape:
            folded = (c.astype(np.int64) - bv).astype(np.int32)  # (wraps as int32 does)
            return ctx.emit(_op.subtract(bound.args[0], const(folded)))
    return ctx.emit(_op.add(acc, b))


def _f32(ctx: Context, v):
    e = ctx.expr(v)
    return e if ctx.dtype(e) == "float32" else _op.astype(e, "float32")


def _requantize(ctx: Context, acc, acc_dt, bias, x_s, w_s, w_axis, y_s, y_zp):
    """round(float(acc + bias) * (x_scale * w_scale / y_scale)) + y_zero_point, saturated to
    y_zero_point's dtype (uint8 without one); x_scale * w_scale * float(acc) without y_scale."""
    nd = ctx.ndim(acc)
    if bias is not None:
        b = ctx.expr(bias)
        b = b if ctx.dtype(b) == acc_dt else _op.astype(b, acc_dt)
        bv = ctx.known(bias)
        if bv is not None and bv.dtype != object:
            bv = bv.astype(acc_dt)
            if w_axis == 1:
                bv = bv.reshape([-1 if i == 1 else 1 for i in range(nd)]) \
                    if bv.ndim == 1 and bv.size != 1 else bv.reshape(())
        else:
            bv = None
        b = _along(ctx, ctx.emit(b), nd, w_axis) if w_axis == 1 else b
        acc = _add_to_product(ctx, acc, b, bv if acc_dt == "int32" else None)
    v = acc if acc_dt == "float32" else _op.astype(acc, "float32")
    mult = ctx.emit(_op.multiply(_f32(ctx, x_s), _f32(ctx, w_s)))
    if y_s is None:
        return ctx.emit(_op.multiply(v, _along(ctx, mult, nd, w_axis)))
    mult = ctx.emit(_op.divide(mult, _f32(ctx, y_s)))
    y = _op.round(_op.multiply(v, _along(ctx, mult, nd, w_axis)))
    out_dtype = ctx.dtype(y_zp) if y_zp is not None else "uint8"
    if y_zp is not None:
        y = _op.add(y, _op.astype(ctx.expr(y_zp), "float32"))
    lo, hi = QRANGE[out_dtype]
    return ctx.emit(_op.astype(_op.clip(y, float(lo), float(hi)), out_dtype))


@register("QLinearConv")
def _qlinear_conv(ctx: Context, ins, attrs):
    x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp = ins[:8]
    row = ctx.ndim(x) == 3  # (1-D: requantized before the row is squeezed away, so fused)
    if row:
        x, x_zp, w, w_zp, attrs = _row_conv(ctx, x, w, attrs, x_zp, w_zp)
    acc, acc_dt = int_conv(ctx, x, x_zp, w, w_zp, attrs)
    y = _requantize(ctx, acc, acc_dt, _opt(ins, 8), x_s, w_s, 1, y_s, y_zp)
    return ctx.emit(_op.squeeze(y, [2])) if row else y


@register("QLinearMatMul")
def _qlinear_matmul(ctx: Context, ins, attrs):
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = ins[:8]
    acc, acc_dt = int_matmul(ctx, a, a_zp, b, b_zp)
    return _requantize(ctx, acc, acc_dt, None, a_s, b_s, -1, y_s, y_zp)


def _transposed(ctx: Context, v):
    k = ctx.known(v)
    if k is not None and k.dtype != object:
        return np.ascontiguousarray(k.T)
    return ctx.emit(_op.permute_dims(ctx.expr(v), [1, 0]))


@register("com.microsoft.QGemm")
def _qgemm(ctx: Context, ins, attrs):
    """alpha * (A - a_zp) @ (B - b_zp) + C: C int32 (in a_scale * b_scale units) with a
    quantized output, float with a float one (no y_scale)."""
    a, a_s, a_zp, b, b_s, b_zp = ins[:6]
    c, y_s, y_zp = _opt(ins, 6), _opt(ins, 7), _opt(ins, 8)
    if attrs.get("transA", 0):
        a = _transposed(ctx, a)
    if attrs.get("transB", 0):
        b = _transposed(ctx, b)
    acc, acc_dt = int_matmul(ctx, a, a_zp, b, b_zp)
    alpha = float(attrs.get("alpha", 1.0))
    if alpha != 1.0:
        a_s = ctx.emit(_op.multiply(_f32(ctx, a_s), const(np.float32(alpha))))
    if y_s is None:
        out = _requantize(ctx, acc, acc_dt, None, a_s, b_s, -1, None, None)
        return out if c is None else ctx.emit(_op.add(out, ctx.expr(c)))
    return _requantize(ctx, acc, acc_dt, c, a_s, b_s, -1, y_s, y_zp)


def _deq(ctx: Context, x, scale, zp):
    return CONVERTERS["DequantizeLinear"](ctx, [x, scale] + ([zp] if zp is not None else []),
                                          {})


def _q(ctx: Context, y, scale, zp):
    return CONVERTERS["QuantizeLinear"](ctx, [y, scale] + ([zp] if zp is not None else []), {})


def _float_op(op_type: str, n_in: int):
    """The QLinear form of a float op over ``n_in`` quantized inputs (x, x_scale, x_zp each),
    then y_scale, y_zp."""

    def convert(ctx: Context, ins, attrs):
        attrs, error = qlinear_float_attrs(attrs, ctx.ndim(ins[0]))
        if error is not None:
            raise ctx.fail(error)
        xs = [_deq(ctx, ins[3 * i], ins[3 * i + 1], _opt(ins, 3 * i + 2)) for i in range(n_in)]
        saved = ctx.node
        try:  # the float converters read their op type off the node (pools)
            ctx.node = _Renamed(saved, op_type)
            y = CONVERTERS[op_type](ctx, xs, attrs)
        finally:
            ctx.node = saved
        return _q(ctx, y, ins[3 * n_in], _opt(ins, 3 * n_in + 1))

    return convert


class _Renamed:
    """A node seen as another op type (its float form), everything else as it is."""

    def __init__(self, node, op_type: str):
        self._node, self.op_type, self.domain = node, op_type, ""

    def __getattr__(self, name):
        return getattr(self._node, name)


for _name, _float, _inputs in QLINEAR_FLOAT_OPS:
    if _name != "com.microsoft.QLinearSoftmax":  # (below: ORT's integer kernel)
        register(_name)(_float_op(_float, _inputs))

_FLOAT_SOFTMAX = _float_op("Softmax", 1)


@register("com.microsoft.QLinearSoftmax")
def _qlinear_softmax(ctx: Context, ins, attrs):
    """ORT's integer softmax (``qdq_softmax``) where its parameters are known scalars, else
    the float softmax quantized."""
    _, error = qlinear_float_attrs(attrs, ctx.ndim(ins[0]))
    if error is not None:
        raise ctx.fail(error)
    out = qlinear_softmax(ctx, ins[0], ins[1], ins[3], _opt(ins, 4), attrs)
    return _FLOAT_SOFTMAX(ctx, ins, attrs) if out is None else out

_GLOBAL_AVERAGE_POOL = _float_op("GlobalAveragePool", 1)


@register("com.microsoft.QLinearGlobalAveragePool")
def _qlinear_global_average_pool(ctx: Context, ins, attrs):
    """``_float_op``'s form; a 3-D input that a 1-D QLinearConv made (the squeezed row of its
    2-D conv: ``int_conv``) is pooled as that row, and the pooled ``[N, C, 1, 1]`` squeezed:
    the squeeze of the whole row, a kernel of its own between the conv and the mean, goes
    (audio qop's last Conv1d, 128 x 50: 1.1 us, one thread)."""
    found = squeezed(ctx, ctx.expr(ins[0])) if ctx.ndim(ins[0]) == 3 and \
        not attrs.get("channels_last", 0) else None
    if found is None or found[1] != [2]:
        return _GLOBAL_AVERAGE_POOL(ctx, ins, attrs)
    xf = _deq(ctx, found[0], ins[1], _opt(ins, 2))
    y = ctx.emit(_op.squeeze(ctx.emit(_op.mean(xf, axis=[2, 3], keepdims=True)), [2]))
    return _q(ctx, y, ins[3], _opt(ins, 4))


@register("com.microsoft.QLinearConcat")
def _qlinear_concat(ctx: Context, ins, attrs):
    y_s, y_zp = ins[0], ins[1]
    xs = [_deq(ctx, ins[i], ins[i + 1], _opt(ins, i + 2)) for i in range(2, len(ins), 3)]
    return _q(ctx, CONVERTERS["Concat"](ctx, xs, attrs), y_s, y_zp)
