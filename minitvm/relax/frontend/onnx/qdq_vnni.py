"""8-bit convs on AVX-512 VNNI in the Relax importer, in the form Relay's importer takes
(``relay/frontend/onnx/qdq_weight``), the checks and plan shared through
``frontend_common.onnx_quant``: the int32 conv of the uint8 input itself and the constant int8
weight (``vnni_conv``, lowered to ``schedule/conv_vnni``), less the input zero point's share;
and the int32 matmul of 8-bit rows and a constant int8 weight (``vnni_matmul``, lowered to
``schedule/gemm_vnni``), less the zero point times the weight's column sums.

``remember_activation`` is called by DequantizeLinear (``ops_extra``); ``qdq_conv`` by Conv
(``ops_nn``: a QDQ model's input and weight both DequantizeLinear outputs), and
``qdq_depthwise`` where that declines a depthwise conv (its 8-bit input read as it is by
``schedule/depthwise``, on any host); ``int_conv`` by QLinearConv / ConvInteger
(``ops_quant``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import (
    QRANGE,
    UNKNOWN,
    BatchMatmulVnniPlan,
    activation_qparams,
    conv_output_scale,
    depthwise_data,
    float_pieces,
    int_batch_matmul_operands,
    qdq_matmul_operands,
    qdq_weight_operands,
    vnni_conv,
)
from ... import op as _op
from ...expr import Call, PrimValue, Var, const
from ..vnni_int import int_conv, int_matmul
from .context import Context


def remember_activation(ctx: Context, q, scale, zp, block: int) -> None:
    """Note the current DequantizeLinear's output when a VNNI conv may read its 8-bit input
    ``q`` as it is (``onnx_quant.activation_qparams``): ``ctx.act_inputs``, by ONNX name."""
    zv = None if zp is None else ctx.known(zp)
    if zv is not None and zv.dtype == object:
        zv = None
    act = activation_qparams(ctx.dtype(q), ctx.known(scale), None if zp is None else
                             UNKNOWN if zv is None else zv, block)
    if act is not None:
        ctx.act_inputs[ctx.node.output[0]] = (ctx.expr(q), *act)


def squeezed(ctx: Context, x):
    """``(x4, axes)`` when ``x`` is bound to ``squeeze(x4, axes)`` of named axes (a 1-D conv's
    row, ``ops_quant.int_conv``), else None."""
    bound = ctx.bb.lookup_binding(x) if isinstance(x, Var) else None
    if isinstance(bound, Call) and getattr(bound.op, "name", "") == "relax.squeeze" and \
            bound.attrs.axis is not None:
        return bound.args[0], [int(a) for a in bound.attrs.axis]
    return None


def as_row(ctx: Context, x):
    """A 1-D ``[N, C, L]`` tensor as the one row of ``[N, C, 1, L]``: the tensor that a squeeze
    of axis 2 made it from, where it is one (so that nothing stands between that tensor's
    producer and the op that takes the row, e.g. an int8 input's uint8 shift), else
    ``expand_dims`` (bound)."""
    found = squeezed(ctx, x)
    if found is not None and found[1] == [2]:
        return found[0]
    return ctx.emit(_op.expand_dims(x, 2))


def conv_operands(ctx: Context):
    """The current Conv node's ((8-bit x, its scale, its zero point), (weight value, its
    scale, its zero point: None for an int8 one without)) when both are DequantizeLinear
    outputs noted (``remember_activation``; ``ctx.int8_weights``, or ``ctx.zp_weights`` for
    a weight with zero points), else None."""
    found = qdq_weight_operands(ctx)
    if found is None or found[1][0] is None or np.ndim(found[1][0]) not in (3, 4):
        return None
    return found


def qdq_conv(ctx: Context, strides, pads, dil, groups: int):
    """The current Conv node as ``vnni_conv`` over its input's 8-bit values and its weight's
    8-bit ones (zero points, e.g. weight_type=QUInt8's, by ``VnniConvPlan``'s window sums),
    scaled back to float32 (``s_x * s_w``, per output channel), when both are
    DequantizeLinear outputs noted (``conv_operands``) and ``onnx_quant.vnni_conv`` lets the
    host take it (the scaling call, unbound; a 1-D conv, its weight ``[O, C, K]``, as the 2-D
    one over a row: ``strides``, ``pads``, ``dil`` are that one's); else None."""
    found = conv_operands(ctx)
    if found is None:
        return None
    (qx, sx, zx), (wv, sw, zw) = found
    o, w_dtype = np.shape(wv)[0], str(wv.dtype)
    row = np.ndim(wv) == 3  # (1-D: the 2-D conv over one row; strides, pads, dil are its)
    if row:
        wv = np.ascontiguousarray(wv[:, :, None, :])
    if not vnni_conv(ctx.dtype(qx), zx, w_dtype, wv, zw, groups, o, weight_zero_points=True):
        return None
    if row:
        qx = as_row(ctx, qx)
    y = int_conv(ctx, qx, zx, wv, strides, pads, dil, w_dtype, zw)
    scale = conv_output_scale((sw * sx).astype("float32"), o)
    y = _op.multiply(_op.astype(y, "float32"), const(scale))
    return _op.squeeze(ctx.emit(y), [2]) if row else y  # (the Conv binds it)


def qdq_depthwise(ctx: Context, strides, pads, dil, groups: int):
    """The current Conv node, depthwise, as a float32 conv of its input's 8-bit values (or
    their uint8 shift: ``onnx_quant.depthwise_data``) and its weight's 8-bit ones less their
    zero points as float32 integers times ``s_x * s_w`` (per output channel, folded into the
    weight as Relay's FoldScaleAxis folds it), when both are DequantizeLinear outputs noted
    and their 8-bit products fit one ``float_pieces`` piece: ``schedule/depthwise.widened_data``
    widens the 8-bit input as it copies each plane, and its producer stores 8-bit values, a
    quarter of the dequantized input's bytes (the conv call, unbound); else None."""
    found = conv_operands(ctx)
    if found is None:
        return None
    (qx, sx, zx), (wv, sw, zw) = found
    as_read = depthwise_data(ctx.dtype(qx), zx, groups, np.shape(wv))
    if as_read is None or (zw is not None and np.size(zw) not in (1, np.shape(wv)[0])):
        return None
    ranges = float_pieces(ctx.dtype(qx), zx, str(wv.dtype), np.shape(wv), wv, zw, 0, 1)
    if ranges is None or len(ranges) != 1:
        return None
    if as_read == "shift":
        qx = ctx.emit(_op.astype(_op.add(_op.astype(qx, "int16"),
                                         const(np.array(128, "int16"))), "uint8"))
    wf = np.asarray(wv, "float32")
    if zw is not None:
        wf = wf - np.asarray(zw, "float32").reshape(-1, 1, 1, 1)
    scale = conv_output_scale((sw * sx).astype("float32"), np.shape(wv)[0])
    # the scale folded into the weight (as Relay's FoldScaleAxis does to its form): no
    # multiply per output element
    wf = (wf * scale.reshape(-1, 1, 1, 1)).astype("float32")
    return _op.nn.conv2d(qx, const(wf), strides, pads, dil, groups, out_dtype="float32")


def qdq_matmul(ctx: Context, trans_b: bool):
    """The current MatMul / Gemm node's ``A @ op(B)`` (A not transposed) as ``vnni_matmul``'s
    int32 product of its input's 8-bit values and its weight's int8 ones, scaled back to
    float32 (``s_x * s_w``), when both are DequantizeLinear outputs noted
    (``onnx_quant.qdq_matmul_operands``): the scaling call, unbound (a binding of a bound value
    would be an alias that FuseOps does not fuse through); else None."""
    found = qdq_weight_operands(ctx)
    if found is None and ctx.node.op_type == "MatMul":
        return qdq_batch_matmul(ctx)
    if found is None:
        return None
    (qx, sx, zx), (wv, sw, zw) = found
    if ctx.ndim(qx) < 2:
        return None
    found = qdq_matmul_operands(ctx.dtype(qx), zx, wv, sw, sx, trans_b, str(wv.dtype), zw)
    if found is None:
        return None
    bv, scale, bz = found
    y = int_matmul(ctx, qx, None, zx, bv, str(wv.dtype), bz)
    return _op.multiply(_op.astype(y, "float32"), const(scale))  # (the caller binds it)


def _bound_call(ctx: Context, x, name: str):
    """The call ``x`` is bound to when it is an ``name`` op's, else None."""
    bound = ctx.bb.lookup_binding(x) if isinstance(x, Var) else x
    return bound if isinstance(bound, Call) and getattr(bound.op, "name", "") == name else None


def shifted_8bit(ctx: Context, q, to: str):
    """The 8-bit ``q`` as the other 8-bit dtype ``to`` (int8 -> uint8: ``q + 128``; uint8 ->
    int8: ``q - 128``), bound. Where ``q`` is a QuantizeLinear's saturating ``astype(clip(y,
    lo, hi))`` of a float32 ``y``, the shifted quantization ``astype(clip(y + d, lo + d, hi +
    d))``: no int16 round trip, and an epilogue the row kernels take as theirs (Relay's
    ``qdq_weight.shifted_8bit`` has the numbers)."""
    d = 128 if to == "uint8" else -128
    cast = _bound_call(ctx, q, "relax.astype")
    clip = None if cast is None else _bound_call(ctx, cast.args[0], "relax.clip")
    if clip is not None and ctx.dtype(clip.args[0]) == "float32" and \
            all(isinstance(v, PrimValue) for v in clip.args[1:]):
        lo, hi = (float(v.value.value) for v in clip.args[1:])
        if (lo, hi) == QRANGE[ctx.dtype(q)]:
            y = _op.add(clip.args[0], const(np.float32(d)))
            return ctx.emit(_op.astype(ctx.emit(_op.clip(y, lo + d, hi + d)), to))
    wide = _op.add(_op.astype(q, "int16"), const(np.array(d, "int16")))
    return ctx.emit(_op.astype(wide, to))


def int_batch_matmul(ctx: Context, a, a_zv, b, b_zv):
    """``onnx_quant.vnni_batch_matmul``'s form (``BatchMatmulVnniPlan``) of (a - a_zp) @
    (b - b_zp), both 8-bit activations (..., M, K) and (..., K, N) with scalar zero point
    values ``a_zv`` / ``b_zv`` (None when absent): the int32 matmul of the uint8 rows and
    int8 columns (shifted where their dtype is the other), less each zero point times the
    other operand's sums (int32, summed at run time), plus ``K * z_a * z_b`` (bound)."""
    sa = ctx.shape(a)
    nd, k = len(sa), int(sa[-1])
    plan = BatchMatmulVnniPlan(ctx.dtype(a), a_zv, ctx.dtype(b), b_zv, k)
    if plan.shift_a:
        a = shifted_8bit(ctx, a, "uint8")
    if plan.shift_b:
        b = shifted_8bit(ctx, b, "int8")
    y = ctx.emit(_op.matmul(a, b, out_dtype="int32"))
    for z, v, axis in ((plan.b_zero_point, a, nd - 1), (plan.a_zero_point, b, nd - 2)):
        if z:
            sums = ctx.emit(_op.sum(_op.astype(v, "int32"), axis=[axis], keepdims=True))
            y = ctx.emit(_op.subtract(y, _op.multiply(sums, const(np.array(z, "int32")))))
    if plan.constant:
        y = ctx.emit(_op.add(y, const(np.array(plan.constant, "int64").astype("int32"))))
    return y


def qdq_batch_matmul(ctx: Context):
    """The current MatMul node of two DequantizeLinear'd 8-bit activations (both noted by
    ``remember_activation``: a QDQ transformer's Q @ K^T and P @ V) as ``int_batch_matmul``'s
    int32 product scaled back to float32 (``s_a * s_b``; the call, unbound), where
    ``onnx_quant.vnni_batch_matmul`` takes it; else None."""
    found = int_batch_matmul_operands(ctx)
    if found is None:
        return None
    (qa, sa, za), (qb, sb, zb) = found
    y = int_batch_matmul(ctx, qa, za, qb, zb)
    return _op.multiply(_op.astype(y, "float32"), const(np.float32(sa) * np.float32(sb)))
