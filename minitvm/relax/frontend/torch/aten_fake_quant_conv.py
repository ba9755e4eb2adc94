"""A QAT model's fake-quantized conv as the integer conv it simulates, in the Relax torch
importers (the form Relay's ``pytorch/aten_fake_quant_conv`` takes): a 2-D conv of a per-tensor
fake quantization over an 8-bit range (values ``(q - z) * s``) and a constant weight
fake-quantized over an 8-bit range (``(q_w - z_w) * s_w``, one scale or one per output
channel) is ``s * s_w * conv(q - z, q_w - z_w)``, run as ``vnni_int.int_conv``'s int32 conv of
the 8-bit values where ``frontend_common.onnx_quant.vnni_conv`` takes it, scaled after; the
integer sum is exact, so it differs from eager's float conv by float rounding only.

``aten_fake_quant`` notes what it makes (``note_activation``, ``note_weight``, by bound output
variable); ``convolution.default`` is wrapped here: the converter registered before (the float
conv) runs where the conv is not such a conv."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import conv_output_scale, vnni_conv
from ....frontend_common.torch_fake_quant import eight_bit_dtype, weight_integers
from ... import op as _op
from ...expr import Constant, Expr, const
from ..vnni_int import int_conv
from .context import ATEN, AtenContext, register

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


def _known(v) -> np.ndarray | None:
    """A scale or zero point's value (a Python number or a constant), else None."""
    if isinstance(v, Constant):
        return v.data.numpy()
    return None if v is None or isinstance(v, Expr) else np.asarray(v)


def note_activation(ctx: AtenContext, out, clamped, scale, zero_point, qmin: int,
                    qmax: int) -> None:
    """Note the bound per-tensor fake quantization ``out`` whose clamped integers (float32
    values, an unbound expression) are ``clamped`` when its range is 8-bit and its scale and
    zero point are known scalars: a conv may read them cast to 8 bits."""
    dtype = eight_bit_dtype(qmin, qmax)
    s, z = _known(scale), _known(zero_point)
    if dtype is None or s is None or z is None or s.size != 1 or z.size != 1:
        return
    _notes(ctx, "fake_quant_activations")[id(out)] = (
        out, (clamped, dtype, np.float32(s.reshape(())), int(z.reshape(()))))


def note_weight(ctx: AtenContext, x, out, scale, zero_point, axis: int | None, qmin: int,
                qmax: int) -> None:
    """Note the bound fake quantization ``out`` of a constant weight ``x`` (2-D or 4-D) over an
    8-bit range with known scales and zero points (``torch_fake_quant.weight_integers``)."""
    s, z = _known(scale), _known(zero_point)
    if not isinstance(x, Constant) or s is None or z is None:
        return
    found = weight_integers(x.data.numpy(), s, z, axis, qmin, qmax)
    if found is not None:
        _notes(ctx, "fake_quant_weights")[id(out)] = (out, found[:4])


def _integer_conv(ctx: AtenContext, x, w, stride, padding, dilation, groups):
    """``vnni_int.int_conv``'s conv scaled back to float32 (bound), or None."""
    act, wgt = _lookup(ctx, "fake_quant_activations", x), _lookup(ctx, "fake_quant_weights", w)
    if act is None or wgt is None or ctx.ndim(x) != 4 or wgt[0].ndim != 4:
        return None
    clamped, dtype, sx, zx = act
    wv, w_dtype, zw, sw = wgt
    channels = int(wv.shape[0])
    if not vnni_conv(dtype, np.int64(zx), w_dtype, wv, zw, int(groups), channels,
                     weight_zero_points=True):
        return None
    q = ctx.emit(_op.astype(clamped, dtype))
    pads = [int(p) for p in padding] * 2
    y = int_conv(ctx, q, np.int64(zx), wv, [int(s) for s in stride], pads,
                 [int(d) for d in dilation], w_dtype, zw)
    scale = conv_output_scale((sw * sx).astype(np.float32), channels)
    return ctx.emit(_op.multiply(_op.astype(y, "float32"), const(scale)))


_float_convolution = ATEN["convolution.default"]


@register("convolution.default")
def _convolution(ctx: AtenContext, args):
    x, w, bias, stride, padding, dilation, transposed, _out_pad, groups = args
    y = None if transposed else _integer_conv(ctx, x, w, stride, padding, dilation, groups)
    if y is None:
        return _float_convolution(ctx, args)
    if bias is not None:
        y = ctx.emit(_op.add(y, _op.reshape(bias, ctx.shape_expr([1, -1, 1, 1]))))
    return y
