"""ATen's sliding windows and binning: ``unfold`` (``Tensor.unfold``: overlapping windows along
one axis, as PatchTST cuts a series into patches), ``col2im`` (``nn.Fold``: overlapping patches
summed back into an image, FuseFormer's soft composition), antialiased resizes (a filter window
per output pixel, torchvision's ``Resize``) and ``bucketize`` / ``searchsorted`` (the bin of
each value among sorted boundaries, as recommenders discretize dense features). All lower to
ops with a native compute: takes of constant window indices, sums of gathered filter taps or
dense products with constant filter matrices, Relay's ``searchsorted``."""

from __future__ import annotations

import numpy as np

from ....frontend_common.antialias import antialias_weights, filter_taps, separable_plan
from ....frontend_common.aten_windows import pair, size_axis_last, unfold_index
from ... import expr as _expr
from ... import op as _op
from ...op import annotation as _annotation
from ...op import nn as _nn
from ..fold import col2im
from .aten import _norm_dim, register


@register("unfold")
def _unfold(ctx, args):
    """unfold(self, dimension, size, step): axis ``dimension`` becomes the window count
    ``(n - size) // step + 1`` and a new last axis holds each window's ``size`` entries. One
    ``take`` by the [windows, size] index ``w * step + k``, then the size axis moved last."""
    x, size, step = args[0], int(args[2]), int(args[3])
    s = ctx.shape(x)
    if not s:  # a 0-d tensor unfolds to a 1-d window of itself
        if size != 1:
            raise ctx.fail(f"unfold of a 0-d tensor needs size 1, got {size}")
        return _op.reshape(x, (1,))
    dim = _norm_dim(args[1], len(s))
    idx = unfold_index(s[dim], size, step, dim, ctx.fail)
    y = _op.take(x, _expr.const(idx), axis=dim)  # ... windows, size ...
    order = size_axis_last(len(s) + 1, dim)
    return y if order is None else _op.transpose(y, order)


@register("col2im")
def _col2im(ctx, args):
    """col2im(self [N, C*kh*kw, L] or unbatched, output_size, kernel_size, dilation, padding,
    stride): ``relay.frontend.fold.col2im``."""
    x = args[0]
    s = ctx.shape(x)
    if len(s) not in (2, 3):
        raise ctx.fail(f"expects a 2-D or 3-D input, got {len(s)}-D")
    size, kernel, dilation, padding, stride = map(pair, args[1:6])
    x = x if len(s) == 3 else _op.expand_dims(x, 0)
    out = col2im(x, ctx.shape(x), size, kernel, dilation, padding, padding, stride, ctx.fail)
    return out if len(s) == 3 else _op.squeeze(out, [0])


@register("_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa")
def _upsample_aa(ctx, args):
    """F.interpolate(..., antialias=True) of a 4-D input with the constant [out, in] filter
    matrices of ``frontend_common.antialias``: per axis a sum of gathered taps (each output
    reads a narrow band), or two dense products where those are cheaper
    (``separable_plan``). Overloads: (input, output_size, align_corners, scales_h, scales_w)
    and ``.vec`` (input, output_size, align_corners, scale_factors)."""
    x, size, align = args[0], args[1], bool(args[2])
    mode = "bilinear" if "bilinear" in ctx.op_name else "bicubic"
    if align:
        raise ctx.fail("antialias=True with align_corners=True is not supported")
    n, c, h, w = ctx.shape(x)
    scales = args[3] if len(args) == 4 else list(args[3:5])
    scales = list(scales) if isinstance(scales, list | tuple) else [None, None]
    scales = [float(f) if f is not None and float(f) > 0 else None for f in scales]
    if size is None:
        if None in scales:
            raise ctx.fail("needs an output size or scale factors")
        size = [int(h * scales[0]), int(w * scales[1])]
    oh, ow = int(size[0]), int(size[1])
    dtype = ctx.dtype(x)
    wh = antialias_weights(h, oh, mode, scales[0]).astype(dtype)
    ww = antialias_weights(w, ow, mode, scales[1]).astype(dtype)
    plan = separable_plan(wh, ww)
    if plan != "dense":
        # both passes materialized: fused, the second pass would recompute every tap of the
        # first (and the producer of x) once per tap of its own (240x320 -> 112x112: 0.58 ms
        # as one kernel, 0.16 ms as two)
        first, second = ((2, wh), (3, ww)) if plan == "rows_first" else ((3, ww), (2, wh))
        x = _sum_of_taps(_annotation.stop_fusion(x), first[1], first[0])
        return _sum_of_taps(_annotation.stop_fusion(x), second[1], second[0])
    y = _nn.dense(_op.reshape(x, (n * c * h, w)), _expr.const(ww))         # (n c h) ow
    y = _op.reshape(_op.transpose(_op.reshape(y, (n * c, h, ow)), [0, 2, 1]), (n * c * ow, h))
    y = _nn.dense(y, _expr.const(wh))                                     # (n c ow) oh
    return _op.reshape(_op.transpose(_op.reshape(y, (n * c, ow, oh)), [0, 2, 1]), (n, c, oh, ow))


def _sum_of_taps(x, weights, axis):
    """``weights`` [out, in] applied along ``axis`` of 4-D ``x``: sum_t take(x, idx_t, axis) *
    w_t over the band of taps of ``filter_taps`` (one injective kernel)."""
    idx, w = filter_taps(weights)
    shape = [1, 1, 1, 1]
    shape[axis] = idx.shape[0]
    acc = None
    for t in range(idx.shape[1]):
        term = _op.multiply(_op.take(x, _expr.const(idx[:, t].copy()), axis=axis),
                            _expr.const(w[:, t].reshape(shape).copy()))
        acc = term if acc is None else _op.add(acc, term)
    return acc


def _bins(ctx, boundaries, values, out_int32, right):
    bs, vs = tuple(ctx.shape(boundaries)), tuple(ctx.shape(values))
    if len(bs) != 1 and bs[:-1] != vs[:-1]:
        raise ctx.fail(f"the boundaries {bs} must be 1-d or match the values {vs} on every "
                       f"axis but the last")
    return _op.searchsorted(boundaries, values, right=bool(right),
                            dtype="int32" if out_int32 else "int64")


@register("bucketize")
def _bucketize(ctx, args):
    """bucketize(input, boundaries, out_int32, right): i with boundaries[i-1] < x <=
    boundaries[i] (``right``: boundaries[i-1] <= x < boundaries[i]), i.e. how many boundaries
    lie below x (or at or below it): Relay's searchsorted of the values into the boundaries."""
    x, boundaries = args[0], args[1]
    out_int32 = bool(args[2]) if len(args) > 2 else False
    right = bool(args[3]) if len(args) > 3 else False
    if not isinstance(x, _expr.Expr):  # bucketize.Scalar
        x = _expr.const(np.array(x, ctx.dtype(boundaries)))
    return _bins(ctx, boundaries, x, out_int32, right)


@register("searchsorted")
def _searchsorted(ctx, args):
    """searchsorted(sorted_sequence, input, out_int32, right, side, sorter): as bucketize with
    the operands swapped; ``side`` ("left" / "right") overrides ``right``; no sorter."""
    seq, x = args[0], args[1]
    out_int32 = bool(args[2]) if len(args) > 2 else False
    right = bool(args[3]) if len(args) > 3 else False
    if len(args) > 4 and args[4] is not None:
        right = args[4] == "right"
    if len(args) > 5 and args[5] is not None:
        raise ctx.fail("searchsorted with a sorter is not supported")
    if not isinstance(x, _expr.Expr):
        x = _expr.const(np.array(x, ctx.dtype(seq)))
    return _bins(ctx, seq, x, out_int32, right)
