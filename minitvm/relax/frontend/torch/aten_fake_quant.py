"""Core-ATen fake quantization onto ``relax.op`` (a QAT model exported before conversion):
``fake_quantize_per_tensor_affine`` / ``_per_channel_affine`` and the ``_cachemask`` forms
torch.export's decompositions leave (the output and the in-range mask), built as float
arithmetic by ``frontend_common.torch_fake_quant``. A conv of an 8-bit fake-quantized input and a
weight known at import, fake-quantized too, runs as the integer conv of their 8-bit values,
scaled after, and a linear likewise (``aten_fake_quant_conv``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_fake_quant import (
    channel_shape,
    fake_quantize_parts,
    fused_observer_fake_quant,
)
from ... import op as _op
from ...expr import Expr, const
from .aten_fake_quant_conv import note_activation, note_weight
from .context import AtenContext, register
from .known import known_value


def _float_operand(ctx: AtenContext, v, dt: str):
    """A scale or zero point as a Relax value of ``x``'s float dtype."""
    if isinstance(v, Expr):
        return v if ctx.dtype(v) == dt else ctx.emit(_op.astype(v, dt))
    return const(np.array(v, dtype=dt), dt)


def _inverse(ctx: AtenContext, scale, dt: str):
    """``1 / scale`` in ``dt``, folded here for a Python number (torch's ``1.0f / scale``)."""
    if isinstance(scale, Expr):
        return ctx.emit(_op.divide(const(np.array(1.0, dtype=dt), dt), scale))
    return const(np.array(1.0, dtype=dt) / np.array(scale, dtype=dt), dt)


def _float_input(ctx: AtenContext, x) -> str:
    dt = ctx.dtype(x)
    if not dt.startswith("float"):
        raise ctx.fail(f"fake quantization takes a float tensor, got {dt}")
    return dt


def _finish(ctx: AtenContext, dt, x, inv, scale, zero_point, qmin, qmax, with_mask: bool,
            qparams=None):
    """``fake_quantize``'s output (and mask), bound; ``qparams`` (scale, zero point, axis: None
    per tensor) as given, for ``aten_fake_quant_conv``'s notes (float32 only)."""
    out, mask, clamped = fake_quantize_parts(_op, x, inv, scale, zero_point, int(qmin),
                                             int(qmax),
                                             lambda v: const(np.array(v, dtype=dt), dt),
                                             ctx.emit)
    out = ctx.emit(out)
    if qparams is not None and dt == "float32":
        s, z, axis = qparams
        note_weight(ctx, x, out, s, z, axis, int(qmin), int(qmax))
        if axis is None:
            note_activation(ctx, out, clamped, s, z, int(qmin), int(qmax))
    return (out, ctx.emit(mask)) if with_mask else out


@register("fake_quantize_per_tensor_affine.default",
          "fake_quantize_per_tensor_affine.tensor_qparams",
          "fake_quantize_per_tensor_affine_cachemask.default",
          "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default")
def _fake_quantize_per_tensor(ctx: AtenContext, args):
    """The ``_tensor_qparams`` cachemask form also takes ``fake_quant_enabled`` (a one-element
    tensor, ones where the plain op calls it, as a tensor scale and zero point give it): where
    it is 0, ``x`` passes unchanged; where it is known to be nonzero (a constant, or computed
    from constants: ``known``), the form is the plain op's."""
    target = str(ctx.node.target)
    x, scale, zero_point = args[0], args[1], args[2]
    qmin, qmax = args[-2:]
    dt = _float_input(ctx, x)
    enabled = known_value(ctx, args[3]) if len(args) >= 6 else None
    plain = len(args) < 6 or enabled is not None and bool(np.all(enabled != 0))
    out = _finish(ctx, dt, x, _inverse(ctx, scale, dt), _float_operand(ctx, scale, dt),
                  _float_operand(ctx, zero_point, dt), qmin, qmax, "cachemask" in target,
                  (scale, zero_point, None) if plain else None)
    if plain:
        return out
    enabled = ctx.emit(_op.not_equal(args[3], const(np.array(0, dtype=ctx.dtype(args[3])))))
    quantized, mask = out
    return (ctx.emit(_op.where(enabled, quantized, x)),
            ctx.emit(_op.logical_or(mask, _op.logical_not(enabled))))


@register("fake_quantize_per_channel_affine.default",
          "fake_quantize_per_channel_affine_cachemask.default")
def _fake_quantize_per_channel(ctx: AtenContext, args):
    x, scale, zero_point, axis, qmin, qmax = args[:6]
    dt = _float_input(ctx, x)
    shape = channel_shape(ctx.ndim(x), int(axis), int(ctx.shape(scale)[0]))
    s = ctx.emit(_op.reshape(_float_operand(ctx, scale, dt), shape))
    z = ctx.emit(_op.reshape(_float_operand(ctx, zero_point, dt), shape))
    return _finish(ctx, dt, x, _inverse(ctx, s, dt), s, z, qmin, qmax,
                   "cachemask" in str(ctx.node.target), (scale, zero_point, int(axis)))


@register("_fused_moving_avg_obs_fq_helper_functional.default",
          "fused_moving_avg_obs_fake_quant.default")
def _fused_moving_avg_obs_fake_quant(ctx: AtenContext, args):
    """torch.ao's default QAT FakeQuantize (``FusedMovingAvgObsFakeQuantize``) in one op (the
    functional helper returns the output, its mask and the observer's buffers): with the
    observer off (``disable_observer``, known at import) the fake quantization by the scale
    and zero point buffers -- per tensor, or per channel along ``ch_axis``
    (``per_row_fake_quant``) --, or ``x`` itself where fake quantization is off. With the
    observer on the scale would follow each input's range (training), refused."""
    x, fake_quant_on, scale, zero_point, qmin, qmax, ch_axis, per_row = \
        fused_observer_fake_quant(args, lambda v: known_value(ctx, v), ctx.fail,
                                  "known at import", "exporting")
    dt = _float_input(ctx, x)
    if not fake_quant_on:
        out = (x, ctx.emit(_op.ones_like(x, "bool")))
    elif per_row:
        shape = channel_shape(ctx.ndim(x), ch_axis, int(ctx.shape(scale)[0]))
        s = ctx.emit(_op.reshape(_float_operand(ctx, scale, dt), shape))
        z = ctx.emit(_op.reshape(_float_operand(ctx, zero_point, dt), shape))
        out = _finish(ctx, dt, x, _inverse(ctx, s, dt), s, z, qmin, qmax, True,
                      (scale, zero_point, ch_axis))
    else:
        out = _finish(ctx, dt, x, _inverse(ctx, scale, dt), _float_operand(ctx, scale, dt),
                      _float_operand(ctx, zero_point, dt), qmin, qmax, True,
                      (scale, zero_point, None))
    if "functional" not in str(ctx.node.target):
        return out[0]
    return (*out, args[3], args[4], scale, zero_point)  # (the observer's min / max buffers)
