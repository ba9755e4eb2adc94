"""A QDQ Conv's input scale folded into its weights: ``conv(q' * s_x, W) = conv(q', W * s_x)``.

quantize_static writes every activation as QuantizeLinear -> DequantizeLinear, and the
dequantize's ``* s_x`` then lands in the *producer's* fused kernel, one multiply per output
element of every requantize epilogue. Where a Conv is the only reader of the dequantized
tensor and ``s_x`` is a float32 scalar, the Conv reads the unscaled values (``q`` as float, less
its zero point; the conv's zero padding is still the real 0) and takes ``s_x`` into its
constant weight, or, when it reads int8 weights, into the per-channel scale it applies after
the conv (as Relay's FoldScaleAxis does). The dequantize's own multiply is left unused and
dropped (FoldConstant removes unused bindings).

Where the 8-bit input is a QuantizeLinear's output in the same graph (the model's first Conv
reads its quantized input), the Conv reads ``clip(round(x / s), lo - z, hi - z)`` of the
QuantizeLinear's own float value (``unscaled_fake_quant``, the form Relay's DequantizeLinear
takes, ``onnx_quant.fake_quant_bounds``) instead of ``astype(q, float32) - z``: no zero point
added and subtracted, no cast to 8 bits and back."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import Call, Constant, PrimValue, Var, const
from .context import Context

__all__ = ["unscaled_input", "weight_value"]


def unscaled_input(ctx: Context):
    """(the current Conv's input without its dequantize scale, that scale as a float32 numpy
    scalar) when the input is a noted DequantizeLinear output (``ctx.act_inputs``) that only
    this node reads; else None."""
    name = ctx.node.input[0] if ctx.node.input else None
    act = ctx.act_inputs.get(name) if name else None
    if act is None or ctx.uses.get(name, 0) != 1:
        return None
    q, s, zp = act
    fake = unscaled_fake_quant(ctx, q, zp)
    if fake is not None:
        return fake, np.float32(s)
    x = _op.astype(q, "float32")
    if zp is not None and np.any(np.asarray(zp)):
        x = _op.subtract(x, const(np.asarray(zp, "float32").reshape(())))
    return ctx.emit(x), np.float32(s)


def _bound(ctx: Context, x, name: str):
    """The call of op ``name`` that ``x`` is (or is bound to), else None."""
    bound = ctx.bb.lookup_binding(x) if isinstance(x, Var) else x
    return bound if isinstance(bound, Call) and getattr(bound.op, "name", "") == name else None


def _scalar_value(ctx: Context, x):
    """The value of a scalar constant, or of ``astype`` of one, else None."""
    cast = _bound(ctx, x, "relax.astype")
    c = cast.args[0] if cast is not None else x
    if isinstance(c, Constant) and c.data.numpy().size == 1:
        return float(c.data.numpy().reshape(()))
    return None


def unscaled_fake_quant(ctx: Context, q, zp):
    """``q - zp`` as float32 where the 8-bit ``q`` is a QuantizeLinear's ``astype(clip(round(v)
    + z, lo, hi))`` (a NaN selected to ``lo`` between): ``clip(round(v), lo - z, hi - z)``
    (a NaN to ``lo - z``), the same values without the zero point's add and subtract and the
    8-bit round trip (bound); else None. The first QuantizeLinear of MobileNetV2 (width 1,
    112x112) qdq_u8's input, one thread, us: 8.9 as ``astype(q) - z``."""
    cast = _bound(ctx, q, "relax.astype")
    if cast is None or ctx.dtype(cast.args[0]) != "float32":
        return None
    where = _bound(ctx, cast.args[0], "relax.where")
    clip = _bound(ctx, where.args[2] if where is not None else cast.args[0], "relax.clip")
    if clip is None or not all(isinstance(v, PrimValue) for v in clip.args[1:]):
        return None
    lo, hi = (float(v.value.value) for v in clip.args[1:])
    z = 0.0 if zp is None else float(np.asarray(zp).reshape(()))
    if where is not None and _scalar_value(ctx, where.args[1]) != lo:
        return None
    value, add = clip.args[0], _bound(ctx, clip.args[0], "relax.add")
    if add is not None and _scalar_value(ctx, add.args[1]) == z:
        value = add.args[0]
    elif z:
        return None
    y = ctx.emit(_op.clip(value, lo - z, hi - z))
    if where is not None:
        y = ctx.emit(_op.where(_op.isnan(y), const(np.float32(lo - z)), y))
    return y


def weight_value(ctx: Context, name: str, int8_weight) -> np.ndarray | None:
    """The float32 value of a Conv's weight ``name`` when known at import: a constant, or a
    noted DequantizeLinear over int8 values (``int8_weight``: ``ctx.int8_weights``' entry,
    scales one or one per output channel); else None."""
    if int8_weight is None:
        v = ctx.known(name)
        return v if v is not None and v.dtype == np.float32 else None
    q, s = int8_weight
    if s.ndim == 2:  # (one per column of a 2-D weight: broadcasts as it is)
        return q.astype("float32") * s
    s = s.reshape(()) if s.size == 1 else s.reshape((-1,) + (1,) * (np.ndim(q) - 1))
    return q.astype("float32") * s
