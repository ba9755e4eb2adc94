"""``qnn.conv2d``'s canonical form on a host with AVX-512 VNNI: the int32 conv of the 8-bit
data and the int8 weight as they are (``schedule/conv_vnni``'s ``vpdpbusd`` kernels), where the
generic form casts both to int32 first and runs a plain int32 conv. The input's zero point z
comes out after: the data is padded with z (``nn.pad``; or the conv pads with zero bytes and
each border output's share is subtracted) and ``z * sum(w)`` per output channel is subtracted
-- ``frontend_common.onnx_quant.VnniConvPlan``, the form the ONNX importer gives a QDQ conv.
The integer result is the generic form's exactly. Taken for an NCHW/OIHW conv of one group,
uint8 or int8 data with a constant scalar zero point (int8 shifted into uint8 by +128) and a
constant int8 weight whose zero points are all 0 (symmetric weights, as FakeQuantization-
ToInteger gives a QDQ model's conv).

Where VNNI does not apply (no VNNI; a stem conv of 3 input channels; output channels off its
step) but every partial sum of the conv is provably at most 2**24 in magnitude
(``onnx_quant.float_pieces`` finds one piece), the conv runs in float32 on ``data - zero
point`` and ``weight - zero point`` and is cast back to int32: float32 sums those integers
exactly, and the float conv schedules are far faster than an int32 conv. A one-group conv
whose sums could pass 2**24 runs as one such conv per range of input channels
(``float_pieces``' ranges, each exact), added in int32."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import VnniConvPlan, float_pieces, vnni_conv
from ...expr import Constant, const
from ...op import tensor as _t
from ...op.nn import nn as _nn
from ...op.transform import strided_slice


def _static_hw(ty):
    hw = [getattr(d, "value", d) for d in ty.shape[2:]]
    return [int(d) for d in hw] if all(isinstance(d, (int, np.integer)) for d in hw) else None


def fast_conv2d(attrs, args, types):
    """The VNNI or exact float32 form of a ``qnn.conv2d`` call's integer conv, or None where
    neither applies."""
    data, kernel, izp, kzp = args[:4]
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW" or \
            attrs.out_layout not in ("", "NCHW") or \
            (attrs.out_dtype or "int32") != "int32" or \
            not all(isinstance(e, Constant) for e in (kernel, izp, kzp)):
        return None
    x_zp, w_zp, w = izp.data.numpy(), kzp.data.numpy(), kernel.data.numpy()
    x_dtype, w_dtype = str(types[0].dtype), str(types[1].dtype)
    if x_zp.size != 1 or x_dtype not in ("uint8", "int8") or w_dtype not in ("uint8", "int8"):
        return None
    if vnni_conv(x_dtype, x_zp.reshape(()), w_dtype, w, w_zp, int(attrs.groups),
                 int(w.shape[0])):
        return _vnni(attrs, data, w, x_dtype, x_zp, types)
    pieces = None if w_zp.size not in (1, w.shape[0]) else float_pieces(
        x_dtype, x_zp.reshape(()), w_dtype, w.shape, w, w_zp.reshape(-1), 0, 1)
    if pieces is None or (len(pieces) != 1 and int(attrs.groups) != 1):
        return None
    x = _t.subtract(_t.cast(data, "float32"), const(float(x_zp.reshape(())), "float32"))
    wf = w.astype("float32") - w_zp.astype("float32").reshape(-1, 1, 1, 1)
    total = None
    for lo, hi in pieces:  # (one conv, or one per range of a one-group conv's input channels)
        part = x if len(pieces) == 1 else strided_slice(x, [int(lo)], [int(hi)], axes=[1])
        y = _t.cast(_nn.conv2d(part, const(np.ascontiguousarray(wf[:, lo:hi])),
                               strides=attrs.strides, padding=attrs.padding,
                               dilation=attrs.dilation, groups=attrs.groups,
                               channels=attrs.channels, kernel_size=attrs.kernel_size,
                               out_dtype="float32"), "int32")
        total = y if total is None else _t.add(total, y)
    return total


def _vnni(attrs, data, w, x_dtype, x_zp, types):
    hw = _static_hw(types[0])
    strides = [int(s) for s in attrs.strides]
    dil = [int(d) for d in attrs.dilation]
    pads = [int(p) for p in attrs.padding]
    if len(pads) == 2:
        pads = pads * 2
    plan = VnniConvPlan(x_dtype, x_zp.reshape(()), w, pads, "int8", None,
                        None if hw is None else (hw, strides, dil))
    x = data
    if plan.shift:
        x = _t.cast(_t.add(_t.cast(x, "int16"), const(128, "int16")), "uint8")
    if plan.pad_value is not None:
        top, left, bottom, right = plan.pads
        x = _nn.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)),
                    pad_value=const(np.array(plan.pad_value, "uint8")))
    y = _nn.conv2d(x, const(plan.weight), strides=strides, padding=plan.conv_pads,
                   dilation=dil, groups=1, channels=int(w.shape[0]),
                   kernel_size=attrs.kernel_size, out_dtype="int32")
    sums = plan.zero_point_sums
    return y if sums is None else _t.subtract(y, const(sums))
