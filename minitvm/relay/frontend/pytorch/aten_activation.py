"""ATen activations onto Relay: ``clamp`` / ``hardtanh`` (number or tensor bounds),
``clamp_min`` / ``clamp_max``, leaky ReLU, ReLU6, SiLU, hardsigmoid, hardswish, GELU (erf or
tanh), ELU, softplus, mish, PReLU, and ``softmax`` / ``log_softmax``."""

from __future__ import annotations

import math

import numpy as np

from ....frontend_common.torch_promote import with_number_dtype
from ... import op as _op
from ...op import nn as _nn
from .aten import DType, _is_expr, _scalar_like, register


@register("hardtanh", "hardtanh_", "clamp", "clamp_", "clip")
def _clamp(ctx, args):
    """``clamp``'s number bounds promote as a binary op's (``bool_mask.clamp(min=-1)`` is
    int64, an integer tensor clamped to ``0.5`` float32: ``torch_promote``); ``hardtanh`` keeps
    its input's dtype."""
    x = args[0]
    lo = args[1] if len(args) > 1 else None
    hi = args[2] if len(args) > 2 else None
    dt = ctx.dtype(x)
    for bound in (lo, hi) if not ctx.op_name.startswith("hardtanh") else ():
        dt = dt if bound is None or _is_expr(bound) else with_number_dtype(dt, bound)
    x = x if dt == ctx.dtype(x) else _op.cast(x, dt)
    if _is_expr(lo) or _is_expr(hi):
        out = x if lo is None else _op.maximum(x, lo)
        return out if hi is None else _op.minimum(out, hi)
    # (an absent bound: infinity for floats, which an infinite input keeps, as torch's)
    big = np.inf if dt.startswith("float") else float(np.finfo("float32").max)
    return _op.clip(x, -big if lo is None else float(lo), big if hi is None else float(hi))


@register("leaky_relu", "leaky_relu_")
def _leaky_relu(ctx, args):
    return _nn.leaky_relu(args[0], float(args[1]) if len(args) > 1 else 0.01)


@register("silu", "silu_")
def _silu(ctx, args):
    return _op.multiply(args[0], _op.sigmoid(args[0]))


@register("hardsigmoid", "hardsigmoid_")
def _hardsigmoid(ctx, args):
    x = args[0]
    return _op.clip(_op.add(_op.divide(x, _scalar_like(ctx, 6.0, x)),
                            _scalar_like(ctx, 0.5, x)), 0.0, 1.0)


@register("hardswish", "hardswish_")
def _hardswish(ctx, args):
    return _op.multiply(args[0], _hardsigmoid(ctx, args))


@register("gelu")
def _gelu(ctx, args):
    x = args[0]
    approx = args[1] if len(args) > 1 else "none"
    half, one = _scalar_like(ctx, 0.5, x), _scalar_like(ctx, 1.0, x)
    if approx == "tanh":
        inner = _op.multiply(_scalar_like(ctx, math.sqrt(2 / math.pi), x), _op.add(
            x, _op.multiply(_scalar_like(ctx, 0.044715, x), _op.multiply(x, _op.multiply(x, x)))))
        return _op.multiply(_op.multiply(half, x), _op.add(one, _op.tanh(inner)))
    erf = _op.erf(_op.multiply(x, _scalar_like(ctx, 1 / math.sqrt(2), x)))
    return _op.multiply(_op.multiply(half, x), _op.add(one, erf))


def _softmax_input(ctx, args):
    """softmax's input in the dtype it is computed in: ``softmax(x, dim, dtype)`` casts first;
    ``_softmax(x, dim, half_to_float=True)`` computes a float16 input in float32."""
    x = args[0]
    extra = args[2] if len(args) > 2 else None
    if isinstance(extra, DType):
        to = str(extra)
    elif extra is True and ctx.dtype(x) == "float16":
        to = "float32"
    else:
        return x
    return x if to == ctx.dtype(x) else _op.cast(x, to)


@register("softmax", "_softmax")
def _softmax(ctx, args):
    return _nn.softmax(_softmax_input(ctx, args), axis=args[1])


@register("log_softmax", "_log_softmax")
def _log_softmax(ctx, args):
    return _nn.log_softmax(_softmax_input(ctx, args), axis=args[1])


@register("relu6", "relu6_")
def _relu6(ctx, args):
    return _op.clip(args[0], 0.0, 6.0)


@register("elu", "elu_")
def _elu(ctx, args):
    x = args[0]
    alpha = float(args[1]) if len(args) > 1 else 1.0
    scale = float(args[2]) if len(args) > 2 else 1.0
    in_scale = float(args[3]) if len(args) > 3 else 1.0
    neg = _op.multiply(_scalar_like(ctx, alpha, x),
                       _op.subtract(_op.exp(_op.multiply(x, _scalar_like(ctx, in_scale, x))),
                                    _scalar_like(ctx, 1.0, x)))
    out = _op.where(_op.greater(x, _scalar_like(ctx, 0.0, x)), x, neg)
    return out if scale == 1.0 else _op.multiply(out, _scalar_like(ctx, scale, x))


@register("clamp_min", "clamp_min_")
def _clamp_min(ctx, args):
    return _clamp(ctx, [args[0], args[1], None])


@register("clamp_max", "clamp_max_")
def _clamp_max(ctx, args):
    return _clamp(ctx, [args[0], None, args[1]])


def _softplus_expr(ctx, x, beta=1.0, threshold=20.0):
    bx = x if beta == 1 else _op.multiply(x, _scalar_like(ctx, beta, x))
    soft = _op.log(_op.add(_scalar_like(ctx, 1.0, x), _op.exp(bx)))
    soft = soft if beta == 1 else _op.divide(soft, _scalar_like(ctx, beta, x))
    return _op.where(_op.greater(bx, _scalar_like(ctx, threshold, x)), x, soft)


@register("softplus")
def _softplus(ctx, args):
    beta = float(args[1]) if len(args) > 1 and args[1] is not None else 1.0
    threshold = float(args[2]) if len(args) > 2 and args[2] is not None else 20.0
    return _softplus_expr(ctx, args[0], beta, threshold)


@register("mish", "mish_")
def _mish(ctx, args):
    return _op.multiply(args[0], _op.tanh(_softplus_expr(ctx, args[0])))


@register("prelu", "_prelu_kernel")
def _prelu(ctx, args):
    x, w = args[0], args[1]
    s = ctx.shape(x)
    if len(s) > 1 and int(np.prod(ctx.shape(w))) > 1:  # one slope per channel (dim 1)
        w = _op.reshape(w, (-1,) + (1,) * (len(s) - 2))
    return _op.where(_op.greater(x, _scalar_like(ctx, 0.0, x)), x, _op.multiply(x, w))
