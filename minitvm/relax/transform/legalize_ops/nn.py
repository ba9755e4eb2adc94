"""Legalization of ``relax.nn`` activations, softmax, the norms, dropout, pad and attention
(``topi.nn``-style computes in ``minitvm.topi.nn_te``)."""

from __future__ import annotations

import numpy as np

from ....ir.prim_expr import IntImm
from ....topi import lrn as topi_lrn
from ....topi import manipulation as topi_manip
from ....topi import math as topi_math
from ....topi import nn_te
from ...expr import Constant, Tuple, const
from .common import LegalizeError, arg_shape, call_topi, register_legalize

__all__: list[str] = []


@register_legalize("relax.nn.relu")
def _relu(bb, call):
    return call_topi(bb, lambda x: topi_math.unary("relu", x), call.args[0], name="relu")


def _act(name: str, fn):
    def legalize(bb, call):
        return call_topi(bb, fn, call.args[0], name=name)

    legalize.__name__ = f"legalize_{name}"
    return legalize


register_legalize("relax.nn.gelu", _act("gelu", nn_te.gelu))
register_legalize("relax.nn.gelu_tanh", _act("gelu_tanh", nn_te.gelu_tanh))
register_legalize("relax.nn.silu", _act("silu", nn_te.silu))
register_legalize("relax.nn.relu6", _act("relu6", nn_te.relu6))


@register_legalize("relax.nn.leakyrelu")
def _leakyrelu(bb, call):
    alpha = float(call.attrs.alpha)
    return call_topi(bb, lambda x: nn_te.leaky_relu(x, alpha), call.args[0], name="leaky_relu")


@register_legalize("relax.nn.softmax")
def _softmax(bb, call):
    axis = int(call.attrs.axis)
    return call_topi(bb, lambda x: nn_te.softmax(x, axis), call.args[0], name="softmax")


@register_legalize("relax.nn.log_softmax")
def _log_softmax(bb, call):
    axis = int(call.attrs.axis)
    return call_topi(bb, lambda x: nn_te.log_softmax(x, axis), call.args[0], name="log_softmax")


@register_legalize("relax.nn.layer_norm")
def _layer_norm(bb, call):
    a = call.attrs
    axes = [int(v) for v in a.axes]
    return call_topi(bb, lambda x, g, b: nn_te.layer_norm(x, g, b, axes, float(a.epsilon),
                                                          bool(a.center), bool(a.scale)),
                     *call.args, name="layer_norm")


@register_legalize("relax.nn.rms_norm")
def _rms_norm(bb, call):
    a = call.attrs
    axes = [int(v) for v in a.axes]
    return call_topi(bb, lambda x, w: nn_te.rms_norm(x, w, axes, float(a.epsilon)), *call.args,
                     name="rms_norm")


@register_legalize("relax.nn.group_norm")
def _group_norm(bb, call):
    a = call.attrs
    axes = [int(v) for v in a.axes]
    return call_topi(bb, lambda x, g, b: nn_te.group_norm(
        x, g, b, int(a.num_groups), int(a.channel_axis), axes, float(a.epsilon), bool(a.center),
        bool(a.scale)), *call.args, name="group_norm")


@register_legalize("relax.nn.batch_norm")
def _batch_norm(bb, call):
    """Inference batch norm; with constant statistics (a model's bound parameters) they are
    folded here into a per-channel scale and shift (``batch_norm_affine``), as Relay's
    SimplifyInference and FoldConstant do, so the kernel (often a conv's fused epilogue) runs
    one multiply-add an element."""
    a = call.attrs
    folded = _affine_statistics(call)
    if folded is not None:
        scale, shift = folded
        return call_topi(bb, lambda x, s, t, m, v: nn_te.batch_norm_affine(
            x, s, t, m, v, int(a.axis)), call.args[0], const(scale), const(shift),
            call.args[3], call.args[4], name="batch_norm")
    return call_topi(bb, lambda x, g, b, m, v: nn_te.batch_norm(
        x, g, b, m, v, int(a.axis), float(a.epsilon), bool(a.center), bool(a.scale)),
        *call.args, name="batch_norm")


def _affine_statistics(call):
    """(scale, shift) of batch_norm ``call`` when gamma, beta, mean and var are float32
    constants of one dimension (computed in float64, then rounded once), else None."""
    args = call.args[1:5]
    if not all(isinstance(c, Constant) for c in args):
        return None
    gamma, beta, mean, var = (c.data.numpy() for c in args)
    if any(v.dtype != np.float32 or v.ndim != 1 for v in (gamma, beta, mean, var)):
        return None
    a = call.attrs
    scale = 1.0 / np.sqrt(var.astype("float64") + float(a.epsilon))
    if a.scale:
        scale = scale * gamma
    shift = -mean * scale
    if a.center:
        shift = shift + beta
    return scale.astype("float32"), shift.astype("float32")


@register_legalize("relax.nn.dropout")
def _dropout(bb, call):
    """Inference dropout: the input itself, and a mask of ones (nothing dropped)."""
    x = call.args[0]
    dtype = x.struct_info.dtype
    # ones shaped as x (x passed in, so a symbolic shape needs no extra scalar argument)
    mask = bb.emit(call_topi(bb, lambda t: topi_manip.full(list(t.shape), dtype, 1), x,
                             name="ones"))
    return Tuple([x, mask])


@register_legalize("relax.nn.pad")
def _pad(bb, call):
    a = call.attrs
    pw = [int(v) for v in a.pad_width]
    before, after = pw[0::2], pw[1::2]
    value, mode = float(a.pad_value), str(a.pad_mode or "constant")
    x = call.args[0]
    if mode != "constant":  # reflect / edge copy values of the axis: an empty one has none
        # (a static 0 is refused when typed; a symbolic size is checked before the kernel,
        # which would read element 0 of the empty axis)
        from ...expr import PrimValue, StringImm
        from ...op.base import call_pure_packed

        shape = arg_shape(call, 0)
        dynamic = [d for d, n in enumerate(shape) if (before[d] or after[d]) and
                   not (isinstance(n, IntImm | int) and int(getattr(n, "value", n)) > 0)]
        if dynamic:
            x = bb.emit(call_pure_packed(
                "vm.builtin.check_pad_source", x, StringImm(mode),
                *[PrimValue(IntImm("int64", d)) for d in dynamic], sinfo_args=x.struct_info),
                name_hint="pad_source_checked")
    return call_topi(bb, lambda t: topi_manip.pad(t, before, after, value, mode), x,
                     name="pad")


@register_legalize("relax.nn.attention")
def _attention(bb, call):
    a = call.attrs
    scale = None if a.scale is None else float(a.scale)
    return call_topi(bb, lambda q, k, v, *bias: nn_te.attention(
        q, k, v, bias[0] if bias else None, scale, a.causal_mask, a.window_size), *call.args,
        name="attention")


@register_legalize("relax.nn.lrn")
def _lrn(bb, call):
    a = call.attrs
    shape = arg_shape(call, 0)
    if not isinstance(shape[int(a.axis)], IntImm):
        # topi.lrn builds its zero-padded window on a static extent of the normalized axis
        raise LegalizeError(f"relax.nn.lrn: needs a static extent along axis {a.axis}, got "
                            f"{call.args[0].struct_info}")
    return call_topi(bb, lambda x: topi_lrn.lrn(x, int(a.size), int(a.axis), float(a.alpha),
                                                float(a.beta), float(a.bias)),
                     call.args[0], name="lrn")
