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

__all__ = ["fake_quantize", "fake_quantize_parts", "channel_shape"]


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
