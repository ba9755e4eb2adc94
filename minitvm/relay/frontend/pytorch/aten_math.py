"""ATen converters for ``torch.atan2``, ``torch.hypot`` and ``torch.lerp`` (PointPillars'
polar point features, StyleGAN's truncation trick), built by ``frontend_common.torch_math``,
which the Relax importer shares. Integer operands divide into floats as torch's ``atan2``
does; two Python numbers fold at import."""

from __future__ import annotations

import math

import numpy as np

from ....frontend_common import torch_math
from ....frontend_common.torch_promote import true_divide_dtype
from ... import expr as _expr
from ... import op as _op
from .aten import _is_expr, _pair, register


def _float_pair(ctx, a, b):
    """``a`` and ``b`` as expressions of one float dtype (integers promoted as torch does)."""
    a, b = _pair(ctx, a, b)
    dt = ctx.dtype(a)
    target = true_divide_dtype(dt)
    if target != dt:
        a, b = _op.cast(a, target), _op.cast(b, target)
    return a, b, target


def _const(dtype):
    return lambda v: _expr.const(np.array(v, dtype=dtype), dtype)


@register("atan2", "arctan2", "atan2_")
def _atan2(ctx, args):
    y, x = args[0], args[1]
    if not _is_expr(y) and not _is_expr(x):
        return math.atan2(y, x)
    y, x, dt = _float_pair(ctx, y, x)
    return torch_math.atan2(_op, y, x, _const(dt))


@register("hypot", "hypot_")
def _hypot(ctx, args):
    a, b = args[0], args[1]
    if not _is_expr(a) and not _is_expr(b):
        return math.hypot(a, b)
    a, b, _ = _float_pair(ctx, a, b)
    return torch_math.hypot(_op, a, b)


@register("lerp", "lerp_")
def _lerp(ctx, args):
    start, end, weight = args[0], args[1], args[2]
    start, end = _pair(ctx, start, end)
    dt = ctx.dtype(start)
    if _is_expr(weight) and ctx.dtype(weight) != dt:
        weight = _op.cast(weight, dt)
    return torch_math.lerp(_op, start, end, weight, _const(dt))
