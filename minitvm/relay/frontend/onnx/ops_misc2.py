"""ONNX ops a new user's model meets that have no Relay op of their own, lowered to ones that
do (the plans in ``frontend_common.onnx_misc_plans``): ``LpPool`` and ``GlobalLpPool`` (an
average pool of |x|^p times a constant tap count), ``CenterCropPad`` (a slice and a pad),
``Det`` (Leibniz's formula: a gather, a product, a signed sum), ``Compress`` with a constant
condition (a take) and ``MaxUnpool`` (a scatter into zeros)."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common.onnx_misc_plans import (
    MAX_DET_SIZE,
    center_crop_pad_plan,
    compress_indices,
    leibniz_plan,
    lp_pool_geometry,
    max_unpool_output_shape,
)
from ... import op as _op
from ...op import nn as _nn
from .ops_nn import _pool_nd
from .registry import register


def _power(ctx, x, p: float):
    """|x|^p, with p = 1 and 2 as an abs and a square."""
    if p == 1:
        return _op.abs(x)
    if p == 2:
        return _op.multiply(x, x)
    return _op.power(_op.abs(x), ctx.const(p, ctx.dtype(x)))


def _root(ctx, s, p: float):
    if p == 1:
        return s
    if p == 2:
        return _op.sqrt(s)
    return _op.power(s, ctx.const(1.0 / p, ctx.dtype(s)))


@register("LpPool")
def _lp_pool(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    p = float(attrs.get("p", 2))
    kernel, strides, dil, begin, end, outs, counts = lp_pool_geometry(shape[2:], attrs,
                                                                      ctx.fail)
    n = len(kernel)
    if n not in (1, 2, 3):
        raise ctx.fail(f"{n}-D LpPool is not supported")
    y = _power(ctx, x, p)
    if any(begin) or any(end):  # the padding as zeros in the data: they add nothing
        y = _nn.pad(y, [(0, 0), (0, 0)] + [(b, e) for b, e in zip(begin, end, strict=True)])
    y = _pool_nd(ctx, y, "avg", n, kernel, strides, dil, [0] * n, [0] * n, True, False)
    if list(ctx.shape(y)[2:]) != outs:
        y = _op.strided_slice(y, [0] * n, outs, axes=list(range(2, n + 2)))
    y = _op.multiply(y, ctx.const(counts.astype(ctx.dtype(x))))
    return _root(ctx, y, p)


@register("GlobalLpPool")
def _global_lp_pool(ctx, ins, attrs):
    x = ins[0]
    p = float(attrs.get("p", 2))
    axes = list(range(2, ctx.ndim(x)))
    return _root(ctx, _op.sum(_power(ctx, x, p), axes, keepdims=True), p)


@register("CenterCropPad")
def _center_crop_pad(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    target = ctx.value(ins[1], "CenterCropPad's shape").reshape(-1)
    plan = center_crop_pad_plan(shape, target, attrs.get("axes"), ctx.fail)
    if any(c0 or c1 for c0, c1, _, _ in plan):
        x = _op.strided_slice(x, [c0 for c0, _, _, _ in plan],
                              [d - c1 for d, (_, c1, _, _) in zip(shape, plan, strict=True)])
    if any(p0 or p1 for _, _, p0, p1 in plan):
        x = _nn.pad(x, [(p0, p1) for _, _, p0, p1 in plan])
    return x


@register("Det")
def _det(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    n = shape[-1]
    if len(shape) < 2 or shape[-2] != n:
        raise ctx.fail(f"the input must be [..., n, n], got {list(shape)}")
    if n > MAX_DET_SIZE:
        raise ctx.fail(f"Det of {n} x {n} matrices is not supported (Leibniz's formula, up to "
                       f"{MAX_DET_SIZE} x {MAX_DET_SIZE})")
    index, signs = leibniz_plan(n)
    batch = tuple(shape[:-2])
    flat = _op.reshape(x, batch + (n * n,))
    terms = _op.prod(_op.take(flat, ctx.const(index), axis=len(batch)), axis=-1)
    return _op.sum(_op.multiply(terms, ctx.const(signs.astype(ctx.dtype(x)))), axis=-1)


@register("Compress")
def _compress(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    cond = ctx.value(ins[1], "Compress's condition (the output's length depends on it)")
    if "axis" in attrs:
        axis = _om.axis_attr(attrs["axis"], len(shape), "Compress's axis")
    else:
        axis, x = 0, _op.reshape(x, (-1,))
    length = int(np.prod(shape)) if "axis" not in attrs else shape[axis]
    return _op.take(x, ctx.const(compress_indices(cond, length)), axis=axis)


@register("MaxUnpool")
def _max_unpool(ctx, ins, attrs):
    x, idx = ins[0], ins[1]
    shape = ctx.shape(x)
    out = max_unpool_output_shape(ctx, ins, attrs, shape)
    size = int(np.prod(out))
    zeros = _op.zeros((size,), ctx.dtype(x))
    flat = _op.scatter_elements(zeros, _op.reshape(idx, (-1,)), _op.reshape(x, (-1,)), 0)
    return _op.reshape(flat, out)
