"""A QDQ model's conv weight as its int8 values and their scale: ``DequantizeLinear`` of a
constant int8 weight (no zero point, or zero ones; one scale, or one per output channel) is
``q * scale``, and ``conv(x, q * scale) == conv(x, q) * scale`` per output channel. The Conv
converter passes ``q`` to conv2d as int8 (the schedules widen it as they load it: a quarter
of the weight bytes to stream) and scales the result, where the dequantized weight would be
folded into float32 values (only rounding differs: the scale is applied to the sum rather
than to each weight).

``remember`` is called by the DequantizeLinear converter (``ops_extra``), ``int8_weight_and_
scale`` by Conv's (``ops_nn``); the context's ``int8_weights`` holds what one tells the
other, by ONNX tensor name. (The checks are ``frontend_common.onnx_quant``'s, shared with the
Relax importer.)

On a host with AVX-512 VNNI a Conv whose input is a DequantizeLinear of an 8-bit activation
(constant scalar scale and zero point) and whose weight is such an int8 weight reads both as they
are: ``vnni_conv``, an int32 conv (``schedule/conv_vnni``) whose result is scaled by both
scales. ``int_conv`` (QLinearConv, ConvInteger) takes the same form.) A depthwise Conv of such
an input and weight reads the 8-bit activation as it is (``depthwise_qdq_conv``, as
``int_conv`` does with ``onnx_quant.depthwise_data``), so its producer stores 8-bit values."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import (
    QRANGE,
    UNKNOWN,
    BatchMatmulVnniPlan,
    activation_qparams,
    conv_output_scale,
    depthwise_data,
    dequantized_weight_scale,
    dequantized_zero_point_weight,
    float_pieces,
    int_batch_matmul_operands,
    keeps_int8_weight,
    qdq_matmul_operands,
    qdq_weight_operands,
    vnni_conv,
)
from ... import expr as _expr
from ... import op as _op
from ..vnni_int import vnni_int_conv, vnni_int_matmul


def remember(ctx, q, scale, zp, axis: int, block: int) -> None:
    """Note the output of the current DequantizeLinear node when a Conv may read ``q`` itself
    (``onnx_quant.dequantized_weight_scale``)."""
    zv = None if zp is None else ctx.maybe_value(zp)
    s = dequantized_weight_scale(ctx.maybe_value(q), ctx.dtype(q), ctx.maybe_value(scale),
                                 UNKNOWN if zp is not None and zv is None else zv, axis, block)
    if s is not None:
        ctx.int8_weights[ctx.node.output[0]] = (q, s)
    else:  # (a MatMul's weight with a zero point, uint8: read on VNNI with it)
        found = dequantized_zero_point_weight(ctx.maybe_value(q), ctx.dtype(q),
                                              ctx.maybe_value(scale), zv, axis, block)
        if found is not None:
            ctx.zp_weights[ctx.node.output[0]] = (q, *found)
    act = activation_qparams(ctx.dtype(q), ctx.maybe_value(scale), None if zp is None else
                             UNKNOWN if zv is None else zv, block)
    if act is not None:
        ctx.act_inputs[ctx.node.output[0]] = (q, *act)


def int8_weight_and_scale(ctx, groups: int, kernel) -> tuple | None:
    """``(q, scale)`` when the current Conv node's weight is a DequantizeLinear output that
    ``remember`` noted and ``keeps_int8_weight`` lets a conv read as it is: ``q`` the int8
    expression, ``scale`` a float32 constant of shape ``()`` or ``(1, O, 1, 1)`` to multiply
    the conv's output with. Else None."""
    found = ctx.int8_weights.get(ctx.node.input[1]) if len(ctx.node.input) > 1 else None
    if found is None:
        return None
    q, s = found
    if not keeps_int8_weight("int8", ctx.maybe_value(q), None, groups, kernel):
        return None
    return q, ctx.const(conv_output_scale(s, ctx.shape(q)[0]))


def squeezed(x):
    """``(x4, axes)`` when ``x`` is ``squeeze(x4, axes)`` of named axes (a 1-D conv's row,
    ``ops_extra.int_conv``), else None."""
    if isinstance(x, _expr.Call) and getattr(x.op, "name", "") == "squeeze" and \
            x.attrs.axis is not None:
        return x.args[0], [int(a) for a in x.attrs.axis]
    return None


def as_row(x):
    """A 1-D ``[N, C, L]`` tensor as the one row of ``[N, C, 1, L]``: the tensor that a squeeze
    of axis 2 made it from, where it is one (so that nothing stands between that tensor's
    producer and the op that takes the row, e.g. an int8 input's uint8 shift), else
    ``expand_dims``."""
    found = squeezed(x)
    if found is not None and found[1] == [2]:
        return found[0]
    return _op.expand_dims(x, 2)


def vnni_qdq_conv(ctx, strides, dil, begin, end, groups: int, kernel):
    """The current Conv node as ``vnni_conv`` over its input's 8-bit values and its weight's
    8-bit ones (zero points, e.g. weight_type=QUInt8's, by ``VnniConvPlan``'s window sums),
    scaled back to float32 (``s_x * s_w``, per output channel), when its input and weight are
    DequantizeLinear outputs ``remember`` noted and ``onnx_quant.vnni_conv`` lets the host
    take it (a 1-D conv as the 2-D one over a row); else None."""
    found = qdq_weight_operands(ctx)
    if found is None:
        return None
    (qx, sx, zx), (qw, sw, zw) = found
    wv, w_dtype = ctx.maybe_value(qw), ctx.dtype(qw)
    row = len(kernel) == 1 and wv is not None  # (1-D: the 2-D conv over one row)
    if row:
        wv = np.ascontiguousarray(wv[:, :, None, :])
        qx = as_row(qx)
        strides, dil, kernel = [1, *strides], [1, *dil], [1, *kernel]
        begin, end = [0, *begin], [0, *end]
    o = ctx.shape(qw)[0]
    if not vnni_conv(ctx.dtype(qx), zx, w_dtype, wv, zw, groups, o, weight_zero_points=True):
        return None
    y = vnni_int_conv(ctx, qx, zx, None, wv, strides, dil, begin, end, groups, kernel,
                      w_dtype, zw)
    scale = conv_output_scale((sw * sx).astype("float32"), o)
    y = _op.multiply(_op.cast(y, "float32"), ctx.const(scale))
    return _op.squeeze(y, [2]) if row else y


def depthwise_qdq_conv(ctx, strides, dil, begin, end, groups: int, kernel):
    """The current Conv node, depthwise, as a float32 conv of its input's 8-bit values (or
    their uint8 shift: ``onnx_quant.depthwise_data``) and its weight's 8-bit ones less their
    zero points as float32 integers, scaled by ``s_x * s_w`` (per output channel), when its
    input and weight are DequantizeLinear outputs ``remember`` noted and float32 sums them
    exactly (one ``float_pieces`` piece): ``schedule/depthwise.widened_data`` widens the 8-bit
    input as it copies each plane, a quarter of the bytes of the dequantized float32 input.
    Else None."""
    found = qdq_weight_operands(ctx)
    if found is None:
        return None
    (qx, sx, zx), (qw, sw, zw) = found
    wv, wshape = ctx.maybe_value(qw), ctx.shape(qw)
    as_read = depthwise_data(ctx.dtype(qx), zx, groups, wshape)
    if as_read is None or wv is None or (zw is not None and np.size(zw) not in (1, wshape[0])):
        return None
    ranges = float_pieces(ctx.dtype(qx), zx, ctx.dtype(qw), wshape, wv, zw, 0, 1)
    if ranges is None or len(ranges) != 1:
        return None
    if as_read == "shift":
        qx = _op.cast(_op.add(_op.cast(qx, "int16"), ctx.const(np.array(128, "int16"))),
                      "uint8")
    wf = np.asarray(wv, "float32")
    if zw is not None:
        wf = wf - np.asarray(zw, "float32").reshape(-1, 1, 1, 1)
    y = _op.nn.conv2d(qx, ctx.const(wf), strides=strides,
                      padding=(begin[0], begin[1], end[0], end[1]), dilation=dil,
                      groups=groups, channels=wshape[0], kernel_size=kernel,
                      out_dtype="float32")
    scale = conv_output_scale((sw * sx).astype("float32"), wshape[0])
    return _op.multiply(y, ctx.const(scale))


def vnni_zp_int_conv(ctx, x, x_zp, w, w_zp, attrs):
    """A QLinearConv's integer conv (``ops_qlinear``) whose constant weight has nonzero zero
    points (weight_type=QUInt8, WeightSymmetric=False) as ``vnni_int_conv``'s int32 conv with
    window sums, where ``onnx_quant.vnni_conv`` takes it; else None (``ops_extra.int_conv``'s
    float32 or int32 pieces). A 1-D conv as the 2-D one over a row."""
    from .ops_extra import _zp_value, as_row_conv
    from .ops_nn import _conv_common

    wv, w_zv = ctx.maybe_value(w), _zp_value(ctx, w_zp)
    if wv is None or w_zv is None or w_zv is UNKNOWN or not np.any(np.asarray(w_zv)) and \
            ctx.dtype(w) == "int8":
        return None  # (no zero points: ops_extra.int_conv takes it as it is)
    row = ctx.ndim(x) == 3
    if row:
        x, w, attrs = as_row_conv(ctx, x, w, attrs)
        wv = ctx.maybe_value(w)
    n, kernel, strides, dil, begin, end = _conv_common(ctx, x, w, attrs)
    groups, x_zv = int(attrs.get("group", 1)), _zp_value(ctx, x_zp)
    if n != 2 or not vnni_conv(ctx.dtype(x), x_zv, ctx.dtype(w), wv, w_zv, groups,
                               ctx.shape(w)[0], weight_zero_points=True):
        return None
    return vnni_int_conv(ctx, x, x_zv, None, wv, strides, dil, begin, end, groups, kernel,
                         ctx.dtype(w), w_zv)


def vnni_qdq_matmul(ctx, a, trans_b: bool):
    """The current MatMul / Gemm node's product ``a @ op(B)`` as ``vnni_matmul``'s int32 product
    of its input's 8-bit values and its weight's int8 ones, scaled back to float32 (``s_x *
    s_w``), when both are DequantizeLinear outputs ``remember`` noted
    (``onnx_quant.qdq_matmul_operands``); else None. ``a`` is the node's A input (not
    transposed)."""
    found = qdq_weight_operands(ctx)
    if found is None and ctx.node.op_type == "MatMul":
        return vnni_qdq_batch_matmul(ctx)
    if found is None or ctx.ndim(a) < 2:
        return None
    (qx, sx, zx), (qw, sw, zw) = found
    found = qdq_matmul_operands(ctx.dtype(qx), zx, ctx.maybe_value(qw), sw, sx, trans_b,
                                ctx.dtype(qw), zw)
    if found is None:
        return None
    bv, scale, bz = found
    y = vnni_int_matmul(ctx, qx, None, zx, bv, ctx.dtype(qw), bz)
    return _op.multiply(_op.cast(y, "float32"), ctx.const(scale))


def shifted_8bit(ctx, q, to: str):
    """The 8-bit ``q`` as the other 8-bit dtype ``to`` (int8 -> uint8: ``q + 128``; uint8 ->
    int8: ``q - 128``). Where ``q`` is a QuantizeLinear's saturating ``cast(clip(y, lo, hi))``
    of a float32 ``y``, the shifted quantization ``cast(clip(y + d, lo + d, hi + d))``: no int16
    round trip, and an epilogue the row kernels take as theirs (softmax of (1, 4, 128, 128)
    requantized to int8 then shifted to uint8, one thread, us: through int16 47.5, folded
    35.4; int8 alone 37.2)."""
    d = 128 if to == "uint8" else -128
    clip = q.args[0] if isinstance(q, _expr.Call) and getattr(q.op, "name", "") == "cast" \
        else None
    if isinstance(clip, _expr.Call) and getattr(clip.op, "name", "") == "clip" and \
            ctx.dtype(clip.args[0]) == "float32" and \
            (float(clip.attrs.a_min), float(clip.attrs.a_max)) == QRANGE[ctx.dtype(q)]:
        y = _op.add(clip.args[0], ctx.const(np.float32(d)))
        return _op.cast(_op.clip(y, float(clip.attrs.a_min) + d, float(clip.attrs.a_max) + d),
                        to)
    wide = _op.add(_op.cast(q, "int16"), ctx.const(np.array(d, "int16")))
    return _op.cast(wide, to)


def vnni_batch_int_matmul(ctx, a, a_zv, b, b_zv):
    """``onnx_quant.vnni_batch_matmul``'s form (``BatchMatmulVnniPlan``) of (a - a_zp) @
    (b - b_zp), both 8-bit activations (..., M, K) and (..., K, N) with scalar zero point
    values ``a_zv`` / ``b_zv`` (None when absent): the int32 ``nn.batch_matmul`` of the uint8
    rows and int8 columns (shifted where their dtype is the other), less each zero point
    times the other operand's sums (int32, summed at run time), plus ``K * z_a * z_b``; in
    the inputs' rank."""
    sa, sb = ctx.shape(a), ctx.shape(b)
    m, k, n = int(sa[-2]), int(sa[-1]), int(sb[-1])
    plan = BatchMatmulVnniPlan(ctx.dtype(a), a_zv, ctx.dtype(b), b_zv, k)
    if plan.shift_a:
        a = shifted_8bit(ctx, a, "uint8")
    if plan.shift_b:
        b = shifted_8bit(ctx, b, "int8")
    nb = int(np.prod(sa[:-2]))
    if len(sa) != 3:
        a, b = _op.reshape(a, (nb, m, k)), _op.reshape(b, (nb, k, n))
    y = _op.nn.batch_matmul(a, b, out_dtype="int32", transpose_b=False)
    for z, v, axis in ((plan.b_zero_point, a, 2), (plan.a_zero_point, b, 1)):
        if z:
            sums = _op.sum(_op.cast(v, "int32"), axis=[axis], keepdims=True)
            y = _op.subtract(y, _op.multiply(sums, ctx.const(np.array(z, "int32"))))
    if plan.constant:
        y = _op.add(y, ctx.const(np.array(plan.constant, "int64").astype("int32")))
    return y if len(sa) == 3 else _op.reshape(y, (*sa[:-2], m, n))


def vnni_qdq_batch_matmul(ctx):
    """The current MatMul node of two DequantizeLinear'd 8-bit activations (``remember``
    noted both: a QDQ transformer's Q @ K^T and P @ V) as ``vnni_batch_int_matmul``'s int32
    product scaled back to float32 (``s_a * s_b``), where ``onnx_quant.vnni_batch_matmul``
    takes it; else None."""
    found = int_batch_matmul_operands(ctx)
    if found is None:
        return None
    (qa, sa, za), (qb, sb, zb) = found
    y = vnni_batch_int_matmul(ctx, qa, za, qb, zb)
    return _op.multiply(_op.cast(y, "float32"), ctx.const(np.float32(sa) * np.float32(sb)))
