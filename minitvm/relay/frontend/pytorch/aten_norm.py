"""ATen normalizations onto Relay: batch norm (inference and batch statistics), layer norm,
RMS norm, group norm and instance norm."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .aten import _scalar_like, register


@register("batch_norm", "_native_batch_norm_legit_no_training", "native_batch_norm",
          "_native_batch_norm_legit")
def _batch_norm(ctx, args):
    name = ctx.op_name
    if name == "batch_norm":
        x, w, b, mean, var, training, _, eps = args[:8]
    elif name == "_native_batch_norm_legit_no_training":
        x, w, b, mean, var, _, eps = args[:7]
        training = False
    elif len(args) == 6:  # _native_batch_norm_legit.no_stats (instance norm's decomposition)
        x, w, b, training, _, eps = args
        mean = var = None
    else:
        x, w, b, mean, var, training, _, eps = args[:8]
    if training and mean is not None:
        raise ctx.fail("batch norm in training mode is not supported (call model.eval())")
    c = ctx.shape(x)[1]
    dt = ctx.dtype(x)
    w = w if w is not None else _expr.const(np.ones(c, dt), dt)
    b = b if b is not None else _expr.const(np.zeros(c, dt), dt)
    if mean is None:  # no running statistics: normalise with the batch's own
        axes = [d for d in range(len(ctx.shape(x))) if d != 1]
        mean = _op.mean(x, axes)
        var = _op.variance(x, axes)
    out = _nn.batch_norm(x, w, b, mean, var, axis=1, epsilon=float(eps))[0]
    return out if name == "batch_norm" else (out, None, None)


@register("layer_norm", "native_layer_norm")
def _layer_norm(ctx, args):
    x, shape, w, b, eps = args[:5]
    xs = ctx.shape(x)
    dt = ctx.dtype(x)
    k = len(shape)
    if k == 1:
        w = w if w is not None else _expr.const(np.ones(xs[-1], dt), dt)
        b = b if b is not None else _expr.const(np.zeros(xs[-1], dt), dt)
        out = _nn.layer_norm(x, w, b, axis=-1, epsilon=float(eps))
    else:
        axes = list(range(len(xs) - k, len(xs)))
        mean = _op.mean(x, axes, keepdims=True)
        cen = _op.subtract(x, mean)
        var = _op.mean(_op.multiply(cen, cen), axes, keepdims=True)
        out = _op.multiply(cen, _op.rsqrt(_op.add(var, _scalar_like(ctx, eps, x))))
        out = out if w is None else _op.multiply(out, w)
        out = out if b is None else _op.add(out, b)
    return out if ctx.op_name == "layer_norm" else (out, None, None)


@register("rms_norm")
def _rms_norm(ctx, args):
    """rms_norm(input, normalized_shape, weight, eps): ``x / sqrt(mean(x^2) + eps) * weight``
    over the trailing ``len(normalized_shape)`` axes (``nn.RMSNorm``); eps None is torch's
    machine epsilon of the input's dtype."""
    x, shape = args[0], args[1]
    w = args[2] if len(args) > 2 else None
    eps = args[3] if len(args) > 3 else None
    dt = ctx.dtype(x)
    eps = float(np.finfo(dt).eps) if eps is None else float(eps)
    nd = len(ctx.shape(x))
    axes = list(range(nd - len(shape), nd))
    ms = _op.mean(_op.multiply(x, x), axes, keepdims=True)
    out = _op.multiply(x, _op.rsqrt(_op.add(ms, _scalar_like(ctx, eps, x))))
    return out if w is None else _op.multiply(out, w)


def _affine(ctx, x, w, b):
    c = ctx.shape(x)[1]
    dt = ctx.dtype(x)
    w = w if w is not None else _expr.const(np.ones(c, dt), dt)
    b = b if b is not None else _expr.const(np.zeros(c, dt), dt)
    return w, b


@register("group_norm", "native_group_norm")
def _group_norm(ctx, args):
    x = args[0]
    if ctx.op_name == "group_norm":  # (input, num_groups, weight, bias, eps, cudnn)
        groups, w, b, eps = args[1], args[2], args[3], args[4]
    else:  # (input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd)
        w, b, groups, eps = args[1], args[2], args[6], args[7]
    w, b = _affine(ctx, x, w, b)
    out = _nn.group_norm(x, w, b, int(groups), axis=1, epsilon=float(eps))
    return out if ctx.op_name == "group_norm" else (out, None, None)


@register("instance_norm")
def _instance_norm(ctx, args):
    x, w, b, use_input_stats, eps = args[0], args[1], args[2], args[5], args[7]
    if not use_input_stats:
        raise ctx.fail("instance_norm with running statistics (track_running_stats=True) "
                       "is not supported")
    w, b = _affine(ctx, x, w, b)
    return _nn.instance_norm(x, w, b, axis=1, epsilon=float(eps))
