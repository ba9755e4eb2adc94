"""A QDQ Conv's input scale folded into its weights: ``conv(q' * s_x, W) = conv(q', W * s_x)``.

quantize_static writes every activation as QuantizeLinear -> DequantizeLinear, and the
dequantize's ``* s_x`` then lands in the *producer's* fused kernel, one multiply per output
element of every requantize epilogue. Where a Conv is the only reader of the dequantized
tensor and ``s_x`` is a float32 scalar, the Conv reads the unscaled values (``q`` as float, less
its zero point; the conv's zero padding is still the real 0) and takes ``s_x`` into its
constant weight, or, when it reads int8 weights, into the per-channel scale it applies after
the conv (as Relay's FoldScaleAxis does). The dequantize's own multiply is left unused and
dropped (FoldConstant removes unused bindings)."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import const
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
    x = _op.astype(q, "float32")
    if zp is not None and np.any(np.asarray(zp)):
        x = _op.subtract(x, const(np.asarray(zp, "float32").reshape(())))
    return ctx.emit(x), np.float32(s)


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
