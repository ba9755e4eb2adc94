"""A QAT model's fake-quantized conv or linear as the integer op it simulates, in the Relax
torch importers (the forms Relay's ``pytorch/aten_fake_quant_conv`` takes): a conv of a
per-tensor fake quantization over an 8-bit range (values ``(q - z) * s``) and a constant weight
fake-quantized over an 8-bit range (``(q_w - z_w) * s_w``, one scale or one per output
channel) is ``s * s_w * conv(q - z, q_w - z_w)``, run as ``vnni_int.int_conv``'s int32 conv of
the 8-bit values where ``frontend_common.onnx_quant.vnni_conv`` takes it, a grouped or
depthwise conv, or a one-group conv VNNI declines, as a float32 conv of the integers whose sums
float32 keeps exact (``onnx_quant.float_pieces``: one piece; a one-group conv in ranges of input
channels, each exact, added in int32), a 1-D conv as the 2-D one over a row, and a linear
as ``vnni_int.int_matmul``'s int32 matmul where ``vnni_matmul`` takes it; scaled after. The
integer sums are exact, so the result differs from eager's float op by float rounding only.

Scales, zero points and weights are read where they are known at import (``known``): constants
(parameters and buffers) or values computed from them (a scale ``w.abs().amax(1) / 127``, a
fused conv-bn's scaled weight). ``aten_fake_quant`` notes what it makes (``note_activation``,
``note_weight``, by bound output variable); ``convolution.default`` and ``linear.default`` are
wrapped here: the converters registered before (the float ops) run where the op is not such
an op."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import (
    conv_output_scale,
    depthwise_data,
    float_pieces,
    vnni_conv,
    vnni_matmul,
)
from ....frontend_common.torch_fake_quant import eight_bit_dtype, weight_integers
from ... import op as _op
from ...expr import const
from ..vnni_int import int_conv, int_matmul
from .context import ATEN, AtenContext, register
from .known import known_value

__all__ = ["note_activation", "note_weight"]


def _notes(ctx: AtenContext, name: str) -> dict:
    """The context's table ``name``: id of a bound output -> (that output, facts)."""
    table = getattr(ctx, name, None)
    if table is None:
        table = {}
        setattr(ctx, name, table)
    return table


def _lookup(ctx: AtenContext, name: str, e):
    found = _notes(ctx, name).get(id(e))
    return None if found is None or found[0] is not e else found[1]


def note_activation(ctx: AtenContext, out, clamped, scale, zero_point, qmin: int,
                    qmax: int) -> None:
    """Note the bound per-tensor fake quantization ``out`` whose clamped integers (float32
    values, an unbound expression) are ``clamped`` when its range is 8-bit and its scale and
    zero point are known scalars: a conv may read them cast to 8 bits."""
    dtype = eight_bit_dtype(qmin, qmax)
    if dtype is None:
        return
    s, z = known_value(ctx, scale), known_value(ctx, zero_point)
    if s is None or z is None or s.size != 1 or z.size != 1:
        return
    _notes(ctx, "fake_quant_activations")[id(out)] = (
        out, (clamped, dtype, np.float32(s.reshape(())), int(z.reshape(()))))


def note_weight(ctx: AtenContext, x, out, scale, zero_point, axis: int | None, qmin: int,
                qmax: int) -> None:
    """Note the bound fake quantization ``out`` of a weight ``x`` known at import (2-D to 4-D)
    over an 8-bit range with known scales and zero points
    (``torch_fake_quant.weight_integers``)."""
    if eight_bit_dtype(qmin, qmax) is None or ctx.ndim(x) not in (2, 3, 4):
        return
    s, z = known_value(ctx, scale), known_value(ctx, zero_point)
    xv = None if s is None or z is None else known_value(ctx, x)
    if xv is None:
        return
    found = weight_integers(xv, s, z, axis, qmin, qmax)
    if found is not None:
        _notes(ctx, "fake_quant_weights")[id(out)] = (out, found[:4])


def _integer_conv(ctx: AtenContext, x, w, stride, padding, dilation, groups):
    """The integer conv scaled back to float32 (bound), or None."""
    act, wgt = _lookup(ctx, "fake_quant_activations", x), _lookup(ctx, "fake_quant_weights", w)
    if act is None or wgt is None or ctx.ndim(x) != wgt[0].ndim or wgt[0].ndim not in (3, 4):
        return None
    clamped, dtype, sx, zx = act
    wv, w_dtype, zw, sw = wgt
    channels, groups = int(wv.shape[0]), int(groups)
    strides, dil = [int(s) for s in stride], [int(d) for d in dilation]
    pads = [int(p) for p in padding]
    row = wv.ndim == 3  # (a 1-D conv: the 2-D one over one row)
    if row:
        wv = np.ascontiguousarray(wv[:, :, None, :])
        strides, dil, pads = [1, *strides], [1, *dil], [0, *pads]
    pads = pads * 2  # (top, left, bottom, right)
    if groups == 1 and vnni_conv(dtype, np.int64(zx), w_dtype, wv, zw, 1, channels,
                                 weight_zero_points=True):
        q = ctx.emit(_op.astype(clamped, dtype))
        q = ctx.emit(_op.expand_dims(q, 2)) if row else q
        y = int_conv(ctx, q, np.int64(zx), wv, strides, pads, dil, w_dtype, zw)
        y = ctx.emit(_op.astype(y, "float32"))
    else:
        y = _float_integer_conv(ctx, clamped, dtype, zx, wv, w_dtype, zw, strides, pads, dil,
                                groups, row)
        if y is None:
            return None
    scale = conv_output_scale((sw * sx).astype(np.float32), channels)
    y = ctx.emit(_op.multiply(y, const(scale)))
    return ctx.emit(_op.squeeze(y, [2])) if row else y


def _float_integer_conv(ctx: AtenContext, clamped, dtype: str, zx: int, wv, w_dtype: str,
                        zw, strides, pads, dil, groups: int, row: bool):
    """A conv of the 8-bit integers ``clamped`` (of ``dtype``) less their zero point ``zx`` and
    the 4-D integer weight ``wv`` less its zero points ``zw`` as float32 convs of the integers
    (the float32 ``q - zx``; a depthwise conv reads the 8-bit values themselves where the zero
    point is the conv's zero padding: ``onnx_quant.depthwise_data``), when every partial sum
    of a piece's products is provably below 2**24 (``float_pieces``), so float32 sums the
    integers exactly: one conv for one piece (a grouped or depthwise conv, or a one-group conv
    VNNI declines), or for a one-group conv one per range of input channels, each cast to
    int32 and added (bound); else None."""
    pieces = float_pieces(dtype, np.int64(zx), w_dtype, wv.shape, wv, zw, 0, 1)
    if pieces is None or (len(pieces) != 1 and groups != 1):
        return None
    as_read = depthwise_data(dtype, np.int64(zx), groups, wv.shape)
    if as_read is None:
        q = ctx.emit(_op.subtract(clamped, const(np.float32(zx))))
    else:
        q = ctx.emit(_op.astype(clamped, dtype))
        if as_read == "shift":
            q = ctx.emit(_op.astype(_op.add(_op.astype(q, "int16"),
                                            const(np.array(128, "int16"))), "uint8"))
    q = ctx.emit(_op.expand_dims(q, 2)) if row else q
    wf = wv.astype(np.float32)
    if zw is not None:
        wf = wf - np.asarray(zw, np.float32).reshape(-1, 1, 1, 1)
    if len(pieces) == 1:
        return ctx.emit(_op.nn.conv2d(q, const(wf), strides, pads, dil, groups,
                                      out_dtype="float32"))
    total = None
    for lo, hi in pieces:
        part = ctx.emit(_op.strided_slice(q, [1], [int(lo)], [int(hi)]))
        part = ctx.emit(_op.astype(_op.nn.conv2d(
            part, const(np.ascontiguousarray(wf[:, lo:hi])), strides, pads, dil, 1,
            out_dtype="float32"), "int32"))
        total = part if total is None else ctx.emit(_op.add(total, part))
    return ctx.emit(_op.astype(total, "float32"))


def _integer_linear(ctx: AtenContext, x, w):
    """``x @ w.T`` as an integer product of the 8-bit values scaled back to float32 (bound)
    when ``x`` is a noted 8-bit fake quantization and ``w`` a noted 2-D fake-quantized
    weight: ``int_matmul``'s int32 product where ``vnni_matmul`` takes it, else (no VNNI)
    the exact float32 matmul of the integers; else None."""
    act, wgt = _lookup(ctx, "fake_quant_activations", x), _lookup(ctx, "fake_quant_weights", w)
    if act is None or wgt is None or wgt[0].ndim != 2 or ctx.ndim(x) < 2:
        return None
    clamped, dtype, sx, zx = act
    wv, w_dtype, zw, sw = wgt
    b = np.ascontiguousarray(wv.T)
    if vnni_matmul(dtype, np.int64(zx), True, w_dtype, b, zw):
        q = ctx.emit(_op.astype(clamped, dtype))
        y = ctx.emit(_op.astype(int_matmul(ctx, q, None, np.int64(zx), b, w_dtype, zw),
                                "float32"))
    else:
        y = _float_integer_matmul(ctx, clamped, dtype, zx, wv, w_dtype, zw)
        if y is None:
            return None
    scale = (sw * sx).astype(np.float32)
    return ctx.emit(_op.multiply(y, const(scale.reshape(()) if scale.size == 1 else scale)))


def _float_integer_matmul(ctx: AtenContext, clamped, dtype: str, zx: int, wv, w_dtype: str,
                          zw):
    """``(q - zx) @ (q_w - z_w).T`` (``wv`` ``[N, K]``) as float32 matmuls of the integers
    (no VNNI), exact where every partial sum of a piece is provably below 2**24
    (``float_pieces`` over K: one matmul, or one per range of K cast to int32 and added);
    float32 (bound), or None past ``MAX_PIECES`` ranges."""
    pieces = float_pieces(dtype, np.int64(zx), w_dtype, wv.shape, wv, zw, 0, 1)
    if pieces is None:
        return None
    xf = ctx.emit(_op.subtract(clamped, const(np.float32(zx))))
    wf = wv.astype(np.float32)
    if zw is not None:
        wf = wf - np.asarray(zw, np.float32).reshape(-1, 1)
    if len(pieces) == 1:
        return ctx.emit(_op.matmul(xf, const(np.ascontiguousarray(wf.T))))
    last, total = ctx.ndim(xf) - 1, None
    for lo, hi in pieces:
        part = ctx.emit(_op.strided_slice(xf, [last], [int(lo)], [int(hi)]))
        part = ctx.emit(_op.astype(_op.matmul(part, const(np.ascontiguousarray(wf[:, lo:hi].T))),
                                   "int32"))
        total = part if total is None else ctx.emit(_op.add(total, part))
    return ctx.emit(_op.astype(total, "float32"))


_float_convolution = ATEN["convolution.default"]
_float_linear = ATEN["linear.default"]


@register("convolution.default")
def _convolution(ctx: AtenContext, args):
    x, w, bias, stride, padding, dilation, transposed, _out_pad, groups = args
    y = None if transposed else _integer_conv(ctx, x, w, stride, padding, dilation, groups)
    if y is None:
        return _float_convolution(ctx, args)
    if bias is not None:
        shape = [1, -1] + [1] * (ctx.ndim(x) - 2)
        y = ctx.emit(_op.add(y, _op.reshape(bias, ctx.shape_expr(shape))))
    return y


@register("linear.default")
def _linear(ctx: AtenContext, args):
    y = _integer_linear(ctx, args[0], args[1])
    if y is None:
        return _float_linear(ctx, args)
    bias = args[2] if len(args) > 2 else None
    return y if bias is None else ctx.emit(_op.add(y, bias))
