"""ONNX ops a new user's model meets that have no Relax op of their own, lowered to ones that
do (the plans in ``frontend_common.onnx_misc_plans``): ``LpPool`` and ``GlobalLpPool`` (an
average pool of |x|^p times a constant tap count), ``CenterCropPad`` (a slice and a pad),
``Det`` (Leibniz's formula: a gather, a product, a signed sum), ``Compress`` with a constant
condition (a take), ``MaxUnpool`` (a scatter into zeros), ``CumProd``, ``ReverseSequence``
(a gather of per-batch reversed time indices) and ``Upsample`` (``Resize`` with asymmetric
coordinates). Batch dims may be symbolic where the op allows it."""

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
from ...expr import const
from .context import Context, register
from .ops_tensor import _resize


def _c(value, dtype: str):
    return const(np.asarray(value, dtype), dtype)


def _power(ctx: Context, x, p: float):
    """|x|^p, with p = 1 and 2 as an abs and a square."""
    if p == 1:
        return ctx.emit(_op.abs(x))
    if p == 2:
        return ctx.emit(_op.multiply(x, x))
    return ctx.emit(_op.power(ctx.emit(_op.abs(x)), _c(p, ctx.dtype(x))))


def _root(ctx: Context, s, p: float):
    if p == 1:
        return s
    if p == 2:
        return ctx.emit(_op.sqrt(s))
    return ctx.emit(_op.power(s, _c(1.0 / p, ctx.dtype(s))))


_AVG_POOLS = {1: _op.nn.avg_pool1d, 2: _op.nn.avg_pool2d, 3: _op.nn.avg_pool3d}


@register("LpPool")
def _lp_pool(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    p = float(attrs.get("p", 2))
    kernel, strides, dil, begin, end, outs, counts = lp_pool_geometry(ctx.shape(x)[2:], attrs,
                                                                      ctx.fail)
    n = len(kernel)
    if n not in _AVG_POOLS:
        raise ctx.fail(f"{n}-D LpPool is not supported")
    y = _power(ctx, x, p)
    if any(begin) or any(end):  # the padding as zeros in the data: they add nothing
        flat = [0, 0, 0, 0]
        for b, e in zip(begin, end, strict=True):
            flat += [int(b), int(e)]
        y = ctx.emit(_op.nn.pad(y, flat, 0.0, "constant"))
    y = ctx.emit(_AVG_POOLS[n](y, kernel, strides, [0] * (2 * n), dil, True, False))
    if list(ctx.shape(y)[2:]) != outs:
        y = ctx.emit(_op.strided_slice(y, list(range(2, n + 2)), [0] * n, outs))
    y = ctx.emit(_op.multiply(y, const(counts.astype(ctx.dtype(x)), ctx.dtype(x))))
    return _root(ctx, y, p)


@register("GlobalLpPool")
def _global_lp_pool(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    p = float(attrs.get("p", 2))
    axes = list(range(2, ctx.ndim(x)))
    return _root(ctx, ctx.emit(_op.sum(_power(ctx, x, p), axes, True)), p)


@register("CenterCropPad")
def _center_crop_pad(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    shape = ctx.shape(x)
    target = ctx.value(ins[1], "CenterCropPad's shape").reshape(-1)
    plan = center_crop_pad_plan(shape, target, attrs.get("axes"), ctx.fail)
    cut = [a for a, (c0, c1, _, _) in enumerate(plan) if c0 or c1]
    if cut:
        x = ctx.emit(_op.strided_slice(x, cut, [plan[a][0] for a in cut],
                                       [shape[a] - plan[a][1] for a in cut]))
    if any(p0 or p1 for _, _, p0, p1 in plan):
        flat = []
        for _, _, p0, p1 in plan:
            flat += [p0, p1]
        x = ctx.emit(_op.nn.pad(x, flat, 0.0, "constant"))
    return x


@register("Det")
def _det(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    shape = ctx.shape(x)
    n = shape[-1]
    if len(shape) < 2 or shape[-2] != n or not isinstance(n, int):
        raise ctx.fail(f"the input must be [..., n, n] with a static n, got {list(shape)}")
    if n > MAX_DET_SIZE:
        raise ctx.fail(f"Det of {n} x {n} matrices is not supported (Leibniz's formula, up to "
                       f"{MAX_DET_SIZE} x {MAX_DET_SIZE})")
    index, signs = leibniz_plan(n)
    batch = list(shape[:-2])
    flat = ctx.emit(_op.reshape(x, ctx.shape_expr([*batch, n * n])))
    picked = ctx.emit(_op.take(flat, const(index), axis=len(batch)))
    terms = ctx.emit(_op.prod(picked, -1))
    signed = ctx.emit(_op.multiply(terms, const(signs.astype(ctx.dtype(x)), ctx.dtype(x))))
    return ctx.emit(_op.sum(signed, -1))


@register("Compress")
def _compress(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    shape = ctx.shape(x)
    cond = ctx.value(ins[1], "Compress's condition (the output's length depends on it)")
    if "axis" in attrs:
        axis = _om.axis_attr(attrs["axis"], len(shape), "Compress's axis")
        length = shape[axis]
    else:
        if not all(isinstance(d, int) for d in shape):
            raise ctx.fail("Compress without an axis needs a static input shape")
        axis, length = 0, int(np.prod(shape))
        x = ctx.emit(_op.reshape(x, ctx.shape_expr([length])))
    if not isinstance(length, int):
        raise ctx.fail(f"the compressed axis must be static, got {length}")
    return ctx.emit(_op.take(x, const(compress_indices(cond, length)), axis=axis))


@register("MaxUnpool")
def _max_unpool(ctx: Context, ins, attrs):
    x, idx = ctx.expr(ins[0]), ctx.expr(ins[1])
    shape = ctx.shape(x)
    if not all(isinstance(d, int) for d in shape):
        raise ctx.fail(f"MaxUnpool needs a static input shape, got {shape}")
    out = max_unpool_output_shape(ctx, ins, attrs, shape)
    size = int(np.prod(out))
    zeros = ctx.emit(_op.zeros(ctx.shape_expr([size]), ctx.dtype(x)))
    flat_i = ctx.emit(_op.reshape(idx, ctx.shape_expr([int(np.prod(shape))])))
    flat_x = ctx.emit(_op.reshape(x, ctx.shape_expr([int(np.prod(shape))])))
    flat = ctx.emit(_op.scatter_elements(zeros, flat_i, flat_x, 0))
    return ctx.emit(_op.reshape(flat, ctx.shape_expr(out)))


@register("CumProd")
def _cumprod(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    axis = _om.axis_attr(np.asarray(ctx.value(ins[1], "CumProd's axis")).reshape(-1)[0],
                        ctx.ndim(x), "CumProd's axis")
    exclusive = bool(attrs.get("exclusive", 0))
    if attrs.get("reverse", 0):  # the scan of the flipped input, flipped back
        flipped = ctx.emit(_op.flip(x, axis))
        return ctx.emit(_op.flip(_op.cumprod(flipped, axis, exclusive=exclusive), axis))
    return ctx.emit(_op.cumprod(x, axis, exclusive=exclusive))


@register("ReverseSequence")
def _reverse_sequence(ctx: Context, ins, attrs):
    """``y[t, b] = x[lens[b] - 1 - t, b]`` for t < lens[b], else ``x[t, b]``: one gather
    along the time axis with indices computed from the lengths."""
    x, lens = ctx.expr(ins[0]), ctx.expr(ins[1])
    shape = ctx.shape(x)
    rank = len(shape)
    t_axis, b_axis = int(attrs.get("time_axis", 0)), int(attrs.get("batch_axis", 1))
    steps = shape[t_axis]
    if not isinstance(steps, int):
        raise ctx.fail(f"the time axis must be static, got {steps}")
    t_shape, b_shape = [1] * rank, [1] * rank
    t_shape[t_axis], b_shape[b_axis] = steps, shape[b_axis]
    t = const(np.arange(steps, dtype="int64").reshape(t_shape))
    n = ctx.emit(_op.reshape(_op.astype(lens, "int64"), ctx.shape_expr(b_shape)))
    back = ctx.emit(_op.subtract(_op.subtract(n, _c(1, "int64")), t))
    idx = ctx.emit(_op.where(_op.less(t, n), back, _op.add(t, _c(0, "int64"))))
    idx = ctx.emit(_op.broadcast_to(idx, ctx.shape_expr(shape)))
    return ctx.emit(_op.gather_elements(x, idx, t_axis))


@register("Upsample")
def _upsample(ctx: Context, ins, attrs):
    """Upsample (opsets 7-9): Resize with asymmetric coordinates and floored nearest taps."""
    scales = ins[1] if len(ins) > 1 else np.array(attrs["scales"], "float32")
    mode = attrs.get("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    a = {"mode": mode, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    return _resize(ctx, [ins[0], None, scales], a)
