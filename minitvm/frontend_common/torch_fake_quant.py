"""torch's fake quantization (``torch.fake_quantize_per_tensor_affine`` and
``fake_quantize_per_channel_affine``: a quantization-aware-trained model before conversion, as
``torch.ao.quantization.FakeQuantize`` runs it) built from float operators both dialects share.

torch computes ``(clamp(nearbyint(x * inv_scale) + zero_point, qmin, qmax) - zero_point) *
scale`` with ``inv_scale = 1.0f / scale`` in float32; the same steps here give the same values
(the integer grid is exact in float32 below 2**24). ``ops`` is the dialect's operator namespace
(``relay.op`` or ``relax.op``), ``scalar(v)`` a constant of ``x``'s dtype, ``emit`` binds a value
used more than once (Relax's ``ctx.emit``; the identity for Relay).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["fake_quantize", "fake_quantize_parts", "channel_shape", "eight_bit_dtype",
           "fused_observer_fake_quant", "weight_integers"]


def fake_quantize(ops: Any, x, inv_scale, scale, zero_point, qmin: int, qmax: int,
                  scalar: Callable, emit: Callable = lambda e: e):
    """(the fake-quantized ``x``, the mask of elements whose quantized value was in range, as
    the ``_cachemask`` variants return it). ``inv_scale``, ``scale`` and ``zero_point`` are float
    expressions that broadcast against ``x`` (0-d per tensor, shaped along the channel axis per
    channel)."""
    out, mask, _ = fake_quantize_parts(ops, x, inv_scale, scale, zero_point, qmin, qmax, scalar,
                                       emit)
    return out, mask


def fake_quantize_parts(ops: Any, x, inv_scale, scale, zero_point, qmin: int, qmax: int,
                        scalar: Callable, emit: Callable = lambda e: e):
    """``fake_quantize``'s (output, mask) and the integers it rounds ``x`` to, clamped to
    ``[qmin, qmax]`` (float values of ``x``'s dtype): what a conv that reads the integers
    themselves (Relay's ``fake_quant_conv``) casts to 8 bits."""
    q = emit(ops.add(ops.round(ops.multiply(x, inv_scale)), zero_point))
    lo, hi = scalar(float(qmin)), scalar(float(qmax))
    clamped = ops.minimum(ops.maximum(q, lo), hi)
    out = ops.multiply(ops.subtract(clamped, zero_point), scale)
    mask = ops.logical_and(ops.greater_equal(q, lo), ops.less_equal(q, hi))
    return out, mask, clamped


def channel_shape(ndim: int, axis: int, channels: int) -> tuple[int, ...]:
    """The shape a per-channel vector takes to broadcast along ``axis`` of an ``ndim``-d
    tensor."""
    axis %= ndim
    return (channels,) + (1,) * (ndim - 1 - axis)


def eight_bit_dtype(qmin: int, qmax: int) -> str | None:
    """The 8-bit dtype holding the integers ``[qmin, qmax]`` (uint8 first), else None."""
    if 0 <= qmin and qmax <= 255:
        return "uint8"
    if -128 <= qmin and qmax <= 127:
        return "int8"
    return None


def weight_integers(w, scale, zero_point, axis: int | None, qmin: int, qmax: int):
    """A constant float32 weight ``w`` (numpy, 2-D to 4-D: a linear's or a conv's) fake-quantized
    over an 8-bit range with known scales and zero points, one (``axis`` None) or one per index
    of axis 0, as a conv or dense reads it: ``(q, dtype, zero points or None when all 0,
    float32 scales (n,), the fake-quantized values)``, ``q`` the int64 integers by torch's
    arithmetic (``nearbyint(w * (1.0f / s)) + z``, clamped). None otherwise."""
    dtype = eight_bit_dtype(qmin, qmax)
    if dtype is None or w.dtype != np.float32 or w.ndim not in (2, 3, 4) or \
            (axis is not None and axis % w.ndim != 0):
        return None
    shape = (-1,) + (1,) * (w.ndim - 1)
    s = np.asarray(scale, np.float32).reshape(shape)
    zf = np.asarray(zero_point, np.float32).reshape(shape)
    if s.shape[0] not in (1, w.shape[0]) or zf.shape[0] not in (1, w.shape[0]):
        return None
    q = np.clip(np.round(w * (np.float32(1) / s)) + zf, np.float32(qmin), np.float32(qmax))
    zv = np.asarray(zero_point, np.int64).reshape(-1)
    return q.astype(np.int64), dtype, zv if np.any(zv) else None, s.reshape(-1), (q - zf) * s


def fused_observer_fake_quant(args, flag_value: Callable, fail: Callable, known: str,
                              before: str) -> tuple:
    """``fused_moving_avg_obs_fake_quant``'s arguments as ``(x, fake quantization on, scale,
    zero_point, qmin, qmax, ch_axis, per_row)``, after checking what both importers refuse:
    the observer / fake-quantization flags must have import-time values (``flag_value(v)``,
    None where unknown; the message says they must be ``known``) and the observer must be off
    (a model in training: its scale follows each input's range; the message says to disable
    it ``before`` exporting or tracing). ``fail(message)`` makes the importer's error."""
    x, observer_on, fake_quant_on, _lo, _hi, scale, zero_point = args[:7]
    qmin, qmax, ch_axis = int(args[8]), int(args[9]), int(args[10])
    per_row = bool(args[11]) if len(args) > 11 else False
    flags = [flag_value(v) for v in (observer_on, fake_quant_on)]
    if any(f is None for f in flags):
        raise fail(f"the observer / fake-quantization flags must be {known} (module buffers)")
    if np.any(flags[0] != 0):
        raise fail("its observer is enabled (a model in training: the scale follows each "
                   "input's range); call model.apply(torch.ao.quantization."
                   f"disable_observer) before {before}")
    return x, bool(np.any(flags[1] != 0)), scale, zero_point, qmin, qmax, ch_axis, per_row
