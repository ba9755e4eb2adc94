"""A QAT model's fake-quantized conv (or linear) as the integer op it simulates (the default
import).

``torch.fake_quantize_per_tensor_affine`` over an 8-bit range gives values ``(q - z) * s`` of
8-bit integers ``q``; a constant weight fake-quantized per tensor or per output channel gives
``(q_w - z_w) * s_w``. A conv of the two is ``s * s_w * conv(q - z, q_w - z_w)``: the integer
conv of the 8-bit values, scaled after, which ``frontend_common.onnx_quant.vnni_conv`` runs on
the host's VNNI instructions (``relay/frontend/vnni_int``), as the ONNX importer runs a QDQ
model's Conv; a grouped or depthwise conv (a MobileNet block's) as a float32 conv of the
integers, whose sums float32 keeps exact (``onnx_quant.float_pieces``: one piece), reading a
depthwise conv's 8-bit input as it is where it can; a 1-D conv as the 2-D one over a row; a
linear of the two likewise (``vnni_matmul``: the int32 dense). The integer sums are exact;
eager's float conv rounds its sum, so the two differ by float rounding only (what the ONNX
import of the model's QDQ export gives).

The fake-quantize converters (``aten_fake_quant``) note what they make
(``note_activation``, ``note_weight``: the 8-bit tensor or values and their scale and zero
point, by output expression); the conv converter asks ``fake_quant_conv``, which declines
(None: the float conv stays) where neither form takes the conv -- a range wider than 8 bits,
a weight that is not a constant, sums float32 could round (in more than ``MAX_PIECES`` ranges
of input channels for one group, in more than one for a grouped conv) --, and the linear
converter ``fake_quant_dense``. A one-group conv VNNI declines (too few channels, a channel
count off its step, no VNNI) is the float32 conv of the integers too, in ranges of input
channels each summed exactly where one conv could round."""

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
from ... import expr as _expr
from ... import op as _op
from ..common import const_value
from ..vnni_int import shifted_uint8, vnni_int_conv, vnni_int_matmul

__all__ = ["note_activation", "note_weight", "fake_quant_conv", "fake_quant_dense"]


def _notes(ctx, name: str) -> dict:
    """The context's table ``name``: id of an output expression -> (expression, facts)."""
    table = getattr(ctx, name, None)
    if table is None:
        table = {}
        setattr(ctx, name, table)
    return table


def _lookup(ctx, name: str, e):
    found = _notes(ctx, name).get(id(e))
    return None if found is None or found[0] is not e else found[1]


def _known(v) -> np.ndarray | None:
    """A scale or zero point's value (a Python number or a constant), else None."""
    if isinstance(v, _expr.Expr):
        return const_value(v)
    return None if v is None else np.asarray(v)


def note_activation(ctx, out, clamped, scale, zero_point, qmin: int, qmax: int) -> None:
    """Note the per-tensor fake quantization ``out`` of a float32 tensor whose clamped integers
    (float32 values) are ``clamped``, when its range is 8-bit and its scale and zero point are
    known scalars: a conv may read ``cast(clamped, uint8 / int8)`` instead."""
    dtype = eight_bit_dtype(qmin, qmax)
    s, z = _known(scale), _known(zero_point)
    if dtype is None or s is None or z is None or s.size != 1 or z.size != 1:
        return
    q = _op.cast(clamped, dtype)
    _notes(ctx, "fake_quant_activations")[id(out)] = (
        out, (q, np.float32(s.reshape(())), int(z.reshape(()))))


def note_weight(ctx, x, out, scale, zero_point, axis: int | None, qmin: int, qmax: int):
    """``out`` folded; when it is a constant (``x`` a constant weight) over an 8-bit range with
    known scales and zero points, one or one per index of axis 0 (a conv's output channels, a
    linear's output features), note its integers (int64 ``q_w``), dtype, zero points and
    float32 scales, after checking that ``(q_w - z_w) * s_w`` is the folded value
    (``torch_fake_quant.weight_integers``)."""
    out = ctx.fold(out)
    xv, s, z = const_value(x), _known(scale), _known(zero_point)
    if xv is None or s is None or z is None or not isinstance(out, _expr.Constant):
        return out
    found = weight_integers(xv, s, z, axis, qmin, qmax)
    if found is None or not np.array_equal(found[4], const_value(out)):
        return out  # (not torch's arithmetic: leave the float conv)
    _notes(ctx, "fake_quant_weights")[id(out)] = (out, found[:4])
    return out


def fake_quant_conv(ctx, x, w, strides, padding, dilation, groups):
    """The 1-D or 2-D conv of ``x`` and ``w`` (normalized ``strides`` / ``dilation``, ``padding``
    of one or two values per axis) as the float32 result of an integer conv scaled by
    ``s * s_w`` when ``x`` is a noted 8-bit fake quantization and ``w`` a noted constant
    fake-quantized weight: ``vnni_int_conv``'s int32 conv where ``vnni_conv`` takes it (one
    group), ``_float_integer_conv``'s exact float32 sums of the integers for a grouped or
    depthwise conv or a one-group conv VNNI declines; a 1-D conv as the 2-D one over a row. Else None (the float conv stays)."""
    act, wgt = _lookup(ctx, "fake_quant_activations", x), _lookup(ctx, "fake_quant_weights", w)
    if act is None or wgt is None or len(ctx.shape(x)) != wgt[0].ndim or \
            wgt[0].ndim not in (3, 4):
        return None
    q, sx, zx = act
    wv, w_dtype, zw, sw = wgt
    channels, groups = int(wv.shape[0]), int(groups or 1)
    strides, dilation = [int(v) for v in strides], [int(v) for v in dilation]
    pads = [int(p) for p in padding]
    begin, end = (pads, pads) if len(pads) == len(strides) else \
        (pads[:len(strides)], pads[len(strides):])
    row = wv.ndim == 3  # (a 1-D conv: the 2-D one over one row)
    if row:
        q, wv = _op.expand_dims(q, 2), np.ascontiguousarray(wv[:, :, None, :])
        strides, dilation, begin, end = [1, *strides], [1, *dilation], [0, *begin], [0, *end]
    if groups == 1 and vnni_conv(ctx.dtype(q), np.int64(zx), w_dtype, wv, zw, 1, channels,
                                 weight_zero_points=True):
        y = _op.cast(vnni_int_conv(ctx, q, np.int64(zx), None, wv, strides, dilation, begin,
                                   end, 1, list(wv.shape[2:]), w_dtype, zw), "float32")
    else:
        y = _float_integer_conv(ctx, q, zx, wv, w_dtype, zw, strides, dilation, begin + end,
                                groups)
        if y is None:
            return None
    y = _op.multiply(y, _expr.const(conv_output_scale((sw * sx).astype(np.float32), channels),
                                    "float32"))
    return _op.squeeze(y, [2]) if row else y


def _float_integer_conv(ctx, q, zx: int, wv, w_dtype: str, zw, strides, dilation, pads,
                        groups: int):
    """A conv of the 8-bit ``q`` less its zero point ``zx`` and the integer weight ``wv`` less
    its zero points ``zw`` as float32 convs of the integers (the float32 ``q - zx``; a
    depthwise conv reads the 8-bit values themselves where the zero point is the conv's zero
    padding: ``onnx_quant.depthwise_data``), when every partial sum of a piece's products is
    provably below 2**24 (``float_pieces``), so float32 sums the integers exactly: one conv
    for one piece (a grouped or depthwise conv, or a one-group conv VNNI declines: too few
    channels, no VNNI), or for a one-group conv one per range of input channels, each cast to
    int32 and added; else None. ``pads`` (top, left, bottom, right)."""
    pieces = float_pieces(ctx.dtype(q), np.int64(zx), w_dtype, wv.shape, wv, zw, 0, 1)
    if pieces is None or (len(pieces) != 1 and groups != 1):
        return None
    as_read = depthwise_data(ctx.dtype(q), np.int64(zx), groups, wv.shape)
    if as_read == "shift":
        q = shifted_uint8(q)
    elif as_read is None:
        q = _op.subtract(_op.cast(q, "float32"), _expr.const(np.float32(zx), "float32"))
    wf = wv.astype(np.float32)
    if zw is not None:
        wf = wf - np.asarray(zw, np.float32).reshape(-1, 1, 1, 1)

    def conv(data, weight):
        return _op.nn.conv2d(data, _expr.const(np.ascontiguousarray(weight), "float32"),
                             strides=strides, padding=tuple(pads), dilation=dilation,
                             groups=groups, channels=wv.shape[0],
                             kernel_size=list(wv.shape[2:]), out_dtype="float32")

    if len(pieces) == 1:
        return conv(q, wf)
    total = None
    for lo, hi in pieces:
        part = _op.cast(conv(_op.strided_slice(q, [int(lo)], [int(hi)], axes=[1]),
                             wf[:, lo:hi]), "int32")
        total = part if total is None else _op.add(total, part)
    return _op.cast(total, "float32")


def fake_quant_dense(ctx, x, flat, w):
    """``linear``'s product of ``flat`` (``x`` as 2-D rows) and the weight ``w`` ``[N, K]``: the
    float32 result of an integer dense of the 8-bit values scaled by ``s * s_w`` when ``x`` is
    a noted 8-bit fake quantization and ``w`` a noted constant fake-quantized weight --
    ``vnni_int_matmul``'s int32 dense where ``vnni_matmul`` takes it, else (no VNNI) the
    exact float32 dense of the integers (``_float_integer_dense``) --; else the float
    ``nn.dense``."""
    act, wgt = _lookup(ctx, "fake_quant_activations", x), _lookup(ctx, "fake_quant_weights", w)
    if act is not None and wgt is not None and wgt[0].ndim == 2:
        q, sx, zx = act
        wv, w_dtype, zw, sw = wgt
        b = np.ascontiguousarray(wv.T)
        rows = q if len(ctx.shape(q)) == 2 else _op.reshape(q, (-1, b.shape[0]))
        if vnni_matmul(ctx.dtype(q), np.int64(zx), True, w_dtype, b, zw):
            y = _op.cast(vnni_int_matmul(ctx, rows, None, np.int64(zx), b, w_dtype, zw),
                         "float32")
        else:
            y = _float_integer_dense(ctx.dtype(q), rows, zx, wv, w_dtype, zw)
        if y is not None:
            scale = (sw * sx).astype(np.float32)
            return _op.multiply(y, _expr.const(scale.reshape(()) if scale.size == 1 else scale,
                                               "float32"))
    return _op.nn.dense(flat, w)


def _float_integer_dense(dtype: str, rows, zx: int, wv, w_dtype: str, zw):
    """The dense of the 8-bit ``rows`` less ``zx`` and the integer weight ``wv`` ``[N, K]``
    less its zero points as float32 denses of the integers, exact where every partial sum of
    a piece is provably below 2**24 (``float_pieces`` over K: one dense, or one per range of
    K cast to int32 and added); float32, or None past ``MAX_PIECES`` ranges."""
    pieces = float_pieces(dtype, np.int64(zx), w_dtype, wv.shape, wv, zw, 0, 1)
    if pieces is None:
        return None
    xf = _op.subtract(_op.cast(rows, "float32"), _expr.const(np.float32(zx), "float32"))
    wf = wv.astype(np.float32)
    if zw is not None:
        wf = wf - np.asarray(zw, np.float32).reshape(-1, 1)
    if len(pieces) == 1:
        return _op.nn.dense(xf, _expr.const(wf, "float32"), units=wv.shape[0])
    total = None
    for lo, hi in pieces:
        part = _op.cast(_op.nn.dense(_op.strided_slice(xf, [int(lo)], [int(hi)], axes=[1]),
                                     _expr.const(np.ascontiguousarray(wf[:, lo:hi]), "float32"),
                                     units=wv.shape[0]), "int32")
        total = part if total is None else _op.add(total, part)
    return _op.cast(total, "float32")
