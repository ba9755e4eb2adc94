"""The quantized integer products: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV
and BATCH_MATMUL as LiteRT's integer kernels (exact sums of the integers, then requantized), on
8-bit and (16x8) int16 activations."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op
from ..common import ImportError_, const_value, infer_dtype
from ..onnx.ops_extra import int_conv, int_matmul
from . import (
    products16,
)
from .convert_nn import pad_at_run_time
from .importer import (
    CONVERTERS,
    _conv_pads,
    transpose_conv_window,
)
from .op_context import _dims
from .quantized_requantize import _requantize_acc, _wide_requantize, fixed_point_multiply
from .quantized_tensor import EIGHT_BIT, QTensor, _clamp_fused, _in_q, _out_q, qtensor
from .tensor_data import infer_shape


# ------------------------------------------------------------------ integer products
class _IntContext:
    """What ``int_conv`` / ``int_matmul`` ask of a converter context, for this importer."""

    error = ImportError_

    def __init__(self, ctx):
        self.fold, self.name = ctx.importer.fold, ctx.name

    shape = staticmethod(infer_shape)
    dtype = staticmethod(infer_dtype)

    @staticmethod
    def ndim(e) -> int:
        return len(infer_shape(e))

    def maybe_value(self, e):
        return None if e is None else const_value(self.fold(e))

    @staticmethod
    def const(value, dtype: str | None = None):
        arr = np.asarray(value, dtype=dtype)
        return _expr.const(arr, str(arr.dtype))

    def fail(self, detail: str) -> ImportError_:
        return ImportError_(f"{self.name}: {detail}")


def _weight(ctx, k: int, out_axis: int):
    """(value, QTensor) of the constant 8-bit weight input ``k``, whose output channels are
    ``out_axis`` of the TFLite layout; clear errors otherwise."""
    q = qtensor(ctx, ctx.input_ids[k])
    e = ctx.importer.fold(ctx.inputs[k])
    if q is None or not isinstance(e, _expr.Constant):
        raise ctx.fail("the weight must be a constant quantized tensor")
    if q.dtype not in EIGHT_BIT:
        raise ctx.fail(f"weight tensor {q.name!r} is {q.dtype}: int8 or uint8 weights are "
                       "supported")
    if q.scale.size > 1 and q.dim != out_axis:
        raise ctx.fail(f"weight tensor {q.name!r} is quantized along axis {q.dim}; per-channel "
                       f"weights must be quantized along the output channels (axis {out_axis})")
    return e.data.numpy(), q


def _bias(ctx, k: int, wide: bool = False):
    """The constant bias input ``k`` as int64 (None without one): int32, or with ``wide`` (16x8
    operators) int32 or int64."""
    if len(ctx.inputs) <= k or ctx.inputs[k] is None:
        return None
    v = ctx.value(k, "the bias")
    if v.dtype != np.int32 and not (wide and v.dtype == np.int64):
        raise ctx.fail(f"a quantized operator's bias must be int32{' or int64' if wide else ''}"
                       f", got {v.dtype}")
    return v.astype("int64")


def _zp_expr(zp: np.ndarray, dtype: str):
    """A zero point for ``int_conv``: None when all zero, else a scalar or per-channel const."""
    if not np.any(zp):
        return None
    v = zp.reshape(-1)
    return _expr.const((v[:1].reshape(()) if v.size == 1 else v).astype(dtype))


def _conv(ctx, depthwise: bool):
    x = ctx.inputs[0]
    qx, qo = _in_q(ctx, 0), _out_q(ctx)
    opt = ctx.options()
    _, h, wd, c = infer_shape(x)
    w, qw = _weight(ctx, 1, 3 if depthwise else 0)
    if depthwise:  # (1, kh, kw, C*M) -> (C*M, 1, kh, kw)
        w_oihw, groups = w.transpose(3, 0, 1, 2), c
    else:  # (O, kh, kw, I) -> (O, I, kh, kw)
        w_oihw = w.transpose(0, 3, 1, 2)
        if c % w.shape[3]:
            raise ctx.fail(f"input channels {c} do not match the filter's {w.shape[3]}")
        groups = c // w.shape[3]
    o, _, kh, kw = w_oihw.shape
    sh, sw = opt.StrideH(), opt.StrideW()
    dh, dw = opt.DilationHFactor(), opt.DilationWFactor()
    pads = _conv_pads(opt.Padding(), h, wd, kh, kw, sh, sw, dh, dw)
    # SAME with a stride over a run-time size: padded by the input's zero point (a zero
    # value) when it runs
    x, pads = pad_at_run_time(x, pads, (1, 2), (((kh - 1) * dh + 1, sh), ((kw - 1) * dw + 1, sw)),
                              _expr.const(np.array(np.asarray(qx.zp).reshape(-1)[0], qx.dtype)))
    attrs = {"kernel_shape": [kh, kw], "strides": [sh, sw], "dilations": [dh, dw],
             "pads": list(pads), "group": groups}
    ictx = _IntContext(ctx)
    if qx.dtype == "int16":  # (16x8: int64 sums, LiteRT's 64-bit requantization)
        one = products16.sums_dtype(qx.z, w_oihw, qw.zp, depthwise) \
            if depthwise or groups == 1 else None
        if one is not None:  # (one op on the int16 data)
            acc = products16.conv_sums(_op.transpose(x, (0, 3, 1, 2)), w_oihw, one, (sh, sw),
                                       pads, (dh, dw), groups)
        else:  # (the 8-bit kernels on the high and low bytes)
            wc = _expr.const(np.ascontiguousarray(w_oihw))
            acc = _wide_sums(lambda part: int_conv(ictx, part, None, wc, _zp_expr(
                qw.zp, qw.dtype), attrs), _op.transpose(x, (0, 3, 1, 2)), qx, w_oihw, qw)
        out = _wide_requantize(ctx, acc, _bias(ctx, 2, wide=True), qx, qw, qo, 1, 4, w_oihw)
        return _op.transpose(out, (0, 2, 3, 1))
    acc, acc_dt = int_conv(ictx, _op.transpose(x, (0, 3, 1, 2)), _zp_expr(qx.zp, qx.dtype),
                           _expr.const(np.ascontiguousarray(w_oihw)),
                           _zp_expr(qw.zp, qw.dtype), attrs)
    mult = (qx.s * qw.scale.astype("float64") / qo.s).reshape(-1)
    # LiteRT's uint8 depthwise kernel (uint8 weights) rounds its final shift half away from
    # zero (gemmlowp), its other convs half up (14 of 6912 uint8 depthwise outputs a step off,
    # 0 now); uint8 activations with int8 weights, which LiteRT does not run, stay half up
    away = depthwise and qx.dtype == "uint8" and qw.dtype == "uint8"
    out = _requantize_acc(ctx, acc, acc_dt, _bias(ctx, 2), mult, 1, qo, ties_away=away)
    return _op.transpose(out, (0, 2, 3, 1))


def _fully_connected(ctx):
    x = ctx.inputs[0]
    qx, qo = _in_q(ctx, 0), _out_q(ctx)
    w, qw = _weight(ctx, 1, 0)
    units, k = w.shape
    xs = infer_shape(x)
    flat = x if len(xs) == 2 else _op.reshape(x, (-1, k))
    if qx.dtype == "int16":  # (16x8: int64 sums, LiteRT's 64-bit requantization)
        if products16.sums_dtype(qx.z, w, qw.zp, False) is not None:  # (one op)
            acc = products16.dense_sums(flat, w)
        else:  # (the 8-bit kernels on the high and low bytes)
            wc = _expr.const(np.ascontiguousarray(w.T))
            acc = _wide_sums(lambda part: int_matmul(_IntContext(ctx), part, None, wc,
                                                     _zp_expr(qw.zp, qw.dtype)), flat, qx, w, qw)
        out = _wide_requantize(ctx, acc, _bias(ctx, 2, wide=True), qx, qw, qo, 1, 2, w)
    else:
        acc, acc_dt = int_matmul(_IntContext(ctx), flat, _zp_expr(qx.zp, qx.dtype),
                                 _expr.const(np.ascontiguousarray(w.T)),
                                 _zp_expr(qw.zp, qw.dtype))
        mult = (qx.s * qw.scale.astype("float64") / qo.s).reshape(-1)
        out = _requantize_acc(ctx, acc, acc_dt, _bias(ctx, 2), mult, 1, qo)
    opt = ctx.options()
    if opt is not None and opt.KeepNumDims() and len(xs) != 2:
        out = _op.reshape(out, _dims(ctx, xs[:-1] + (units,)))
    return out


def _wide_sums(product, x, qx: QTensor, w: np.ndarray, qw: QTensor):
    """The exact sums of int16 activations ``x`` times 8-bit weights, float64, where
    ``products16`` takes no one op (zero points, sums past its bounds): ``product`` (an
    8-bit integer product of one data expression: (sums, their dtype)) of the high bytes (int8)
    and of the low bytes (uint8), 256 * high + low; the 8-bit kernels (VNNI, or float32 pieces
    exact by construction) compute both. (float64 products were 15x slower on a 16x8
    MobileNetV2.) A zero point (LiteRT takes none) is subtracted first, in int32 pieces of
    the same split. ``w``: the weights, output channels first, to bound the sums."""
    v = x if not qx.z else _op.subtract(_op.cast(x, "int32"), _expr.const(
        np.array(qx.z, "int32"), "int32"))
    dt = "int16" if not qx.z else "int32"
    high = _op.cast(_op.right_shift(v, _expr.const(np.array(8, dt), dt)), "int8" if not qx.z
                    else "int16")
    low = _op.cast(_op.bitwise_and(v, _expr.const(np.array(255, dt), dt)), "uint8")
    if qx.z:  # (x - zp in [-65535, 65535]: its high part past int8, split once more)
        top = _op.cast(_op.right_shift(high, _expr.const(np.array(8, "int16"), "int16")),
                       "int8")
        mid = _op.cast(_op.bitwise_and(high, _expr.const(np.array(255, "int16"), "int16")),
                       "uint8")
        parts = [(top, 65536), (mid, 256), (low, 1)]
    else:
        parts = [(high, 256), (low, 1)]
    # int32 where every partial sum fits (the parts' products stay int32 in memory: in
    # float64 the materialized one cost 2.2x its conv), else float64 (exact below 2**53)
    span = products16.channel_weight_span(w, qw.zp)
    narrow = not qx.z and span * (32768 + 255) < 2**31
    dt = "int32" if narrow else "float64"
    acc = None
    for part, weight in parts:
        s, _ = product(part)
        s = _op.cast(s, dt)
        if weight != 1:
            s = _op.multiply(s, _expr.const(np.array(weight, dt), dt))
        acc = s if acc is None else _op.add(acc, s)
    return _op.cast(acc, "float64") if narrow else acc


def _transpose_conv(ctx):
    """8-bit TRANSPOSE_CONV as LiteRT's integer kernel: the exact sums of (x - x_zp) *
    (w - w_zp) (float32 transposed conv of integers: exact while below 2**24, checked at
    import from the shapes; else float64), the int32 bias added, then each channel's
    MultiplyByQuantizedMultiplier (in_scale * w_scale / out_scale, exactly:
    ``fixed_point_multiply``; the final shift rounds half up where LiteRT's vectorized
    requantization does, else half away from zero), + zero point, clamped. Through float it was 5-10 of 5184 values a step off."""
    x = ctx.inputs[2]
    qx, qo = _in_q(ctx, 2), _out_q(ctx)
    w, qw = _weight(ctx, 1, 0)
    o, kh, kw, i = w.shape
    strides = ctx.options().StrideH(), ctx.options().StrideW()
    taps = -(-kh // strides[0]) * -(-kw // strides[1]) * i
    big = max(abs(v) for v in QRANGE[qx.dtype]) + abs(qx.z)
    wmax = int(np.abs(w.astype("int64") - qw.zp.reshape(-1, 1, 1, 1)).max(initial=0))
    bias = _bias(ctx, 3)
    bound = taps * big * wmax + (0 if bias is None else int(np.abs(bias).max(initial=0)))
    acc_dt = "float32" if bound < 2**24 else "float64"
    wz = (w.astype("int64") - qw.zp.reshape(-1, 1, 1, 1)).astype(acc_dt)
    xf = _op.cast(x, acc_dt)
    if qx.z:
        xf = _op.subtract(xf, _expr.const(np.array(qx.z, acc_dt)))
    ctx.inputs[1], ctx.inputs[2] = _expr.const(wz), xf
    acc = transpose_conv_window(ctx)
    if bias is not None:
        acc = _op.add(acc, _expr.const(bias.astype(acc_dt)))
    mult = (np.float64(qx.s) * qw.scale.astype("float64") / np.float64(qo.s)).reshape(-1)
    # LiteRT rounds half up in its vectorized loops: uint8's everywhere, int8's per-channel
    # one on blocks of 8 channels, the channels past the last block half away from zero
    half_up = True if qx.dtype == "uint8" else np.arange(o) < o // 8 * 8
    v = fixed_point_multiply(acc, np.resize(mult, o), 3, 4, half_up)
    if qo.z:
        v = _op.add(v, _expr.const(np.array(qo.z, "int64"), "int64"))
    return _clamp_fused(ctx, v, qo)


def _integer_product_applies(ctx) -> bool:
    """8-bit input and output, or (16x8) both int16: LiteRT's integer kernels take one dtype
    in and out (an int16 product to an 8-bit output goes through float)."""
    qs = [qtensor(ctx, i) for i in (ctx.input_ids[0], int(ctx.op.Outputs(0)))]
    if any(q is None for q in qs):
        return True  # (the converter names what is missing)
    wide = [q.dtype == "int16" for q in qs]
    return all(wide) or not any(wide)


INTEGER_OPS = {"CONV_2D": lambda ctx: _conv(ctx, False),
               "DEPTHWISE_CONV_2D": lambda ctx: _conv(ctx, True),
               "FULLY_CONNECTED": _fully_connected}


def _batch_matmul(ctx):
    """BATCH_MATMUL of two 8-bit activations as TFLite's integer kernel: the products of the
    inputs less their zero points summed (in float32, exact while the sums stay below 2**24:
    a contraction of up to 258), then requantized as the convs (``_requantize_acc``: the
    multiplier in_scale1 * in_scale2 / out_scale, TFLite's double-rounding offset). Through
    float (dequantized inputs) it was a step off on 467 of 196608 outputs of the int8
    transformer encoder against LiteRT."""
    q1, q2, qo = _in_q(ctx, 0), _in_q(ctx, 1), _out_q(ctx)
    for k, q in ((0, q1), (1, q2)):
        v = _op.cast(ctx.inputs[k], "float32")
        ctx.inputs[k] = v if not q.z else _op.subtract(v, _expr.const(np.array(q.z, "float32")))
    acc = CONVERTERS[ctx.name](ctx)
    mult = np.array([np.float64(q1.s) * np.float64(q2.s) / np.float64(qo.s)])
    return _requantize_acc(ctx, acc, "float32", None, mult, 0, qo, ties_away=True)


def _batch_matmul_applies(ctx) -> bool:
    """Two non-constant inputs and the output quantized per tensor in 8 bits."""
    qs = [qtensor(ctx, i) for i in [*ctx.input_ids[:2], int(ctx.op.Outputs(0))]]
    return len(ctx.inputs) == 2 and all(
        not isinstance(ctx.importer.fold(e), _expr.Constant) for e in ctx.inputs) and all(
        q is not None and q.dtype in EIGHT_BIT and q.scale.size == 1 and q.zp.size <= 1
        for q in qs)


def _transpose_conv_applies(ctx) -> bool:
    """8-bit per-tensor input and output of one dtype, constant 8-bit weights."""
    qs = [qtensor(ctx, ctx.input_ids[2]), qtensor(ctx, int(ctx.op.Outputs(0))),
          qtensor(ctx, ctx.input_ids[1])]
    return all(q is not None and q.dtype in EIGHT_BIT for q in qs) and \
        qs[0].scale.size == 1 and qs[1].scale.size == 1 and qs[0].dtype == qs[1].dtype and \
        isinstance(ctx.importer.fold(ctx.inputs[1]), _expr.Constant)
