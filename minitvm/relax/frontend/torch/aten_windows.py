"""Core-ATen sliding windows, pairwise distances and binning onto ``relax.op``: ``unfold``
(``Tensor.unfold``, PatchTST's patches), ``col2im`` (``nn.Fold``, FuseFormer's soft
composition), antialiased resizes (torchvision's ``Resize``), ``_cdist_forward`` (``torch.cdist``, SchNet's
interatomic distances), ``bucketize`` (a recommender's discretized dense features) and
``searchsorted`` (a sampler's inverse-CDF draw)."""

from __future__ import annotations

import numpy as np

from ....frontend_common.antialias import antialias_weights, filter_taps, separable_plan
from ....frontend_common.aten_windows import pair, size_axis_last, unfold_index
from ... import op as _op
from ...expr import const
from ..fold import col2im
from .aten_reduce import _vector_norm
from .context import AtenContext, register


@register("unfold.default")
def _unfold(ctx: AtenContext, args):
    """unfold(self, dimension, size, step): axis ``dimension`` becomes the window count
    ``(n - size) // step + 1``, a new last axis each window's ``size`` entries; one ``take`` by
    the constant [windows, size] index ``w * step + k``, the size axis then moved last."""
    x, size, step = args[0], int(args[2]), int(args[3])
    shape = ctx.shape(x)
    if not shape:
        if size != 1:
            raise ctx.fail(f"unfold of a 0-d tensor needs size 1, got {size}")
        return ctx.emit(_op.reshape(x, [1]))
    dim = int(args[1]) % len(shape)
    n = shape[dim]
    if not isinstance(n, int):
        raise ctx.fail(f"unfold needs a static length on axis {dim}, got {n}")
    y = ctx.emit(_op.take(x, const(unfold_index(n, size, step, dim, ctx.fail)), dim))
    order = size_axis_last(len(shape) + 1, dim)
    return y if order is None else ctx.emit(_op.permute_dims(y, order))


@register("col2im.default")
def _col2im(ctx: AtenContext, args):
    """col2im(self [N, C*kh*kw, L] or unbatched, output_size, kernel_size, dilation, padding,
    stride): ``relax.frontend.fold.col2im``."""
    x = args[0]
    nd = ctx.ndim(x)
    if nd not in (2, 3):
        raise ctx.fail(f"col2im expects a 2-D or 3-D input, got {nd}-D")
    size, kernel, dilation, padding, stride = map(pair, args[1:6])
    if nd == 2:
        x = ctx.emit(_op.expand_dims(x, 0))
    out = col2im(ctx, x, size, kernel, dilation, padding, padding, stride)
    return out if nd == 3 else ctx.emit(_op.squeeze(out, [0]))


@register("_upsample_bilinear2d_aa.default", "_upsample_bicubic2d_aa.default")
def _upsample_aa(ctx: AtenContext, args):
    """F.interpolate(..., antialias=True): (input, output_size, align_corners, scales_h,
    scales_w) with the constant [out, in] filter matrices of ``frontend_common.antialias``: per
    axis a sum of gathered taps, both passes materialized, or Wh . x . Ww^T (two matmuls) where
    those are cheaper (``separable_plan``, as the Relay importer)."""
    x, size, align = args[0], [int(v) for v in args[1]], bool(args[2])
    if align:
        raise ctx.fail("antialias=True with align_corners=True is not supported")
    shape = ctx.shape(x)
    if len(shape) != 4 or not all(isinstance(d, int) for d in shape[2:]):
        raise ctx.fail(f"antialiased resize needs a 4-D input of static size, got {shape}")
    mode = "bilinear" if "bilinear" in ctx.node.target.__name__ else "bicubic"
    scales = [float(f) if f is not None and float(f) > 0 else None
              for f in (list(args[3:5]) + [None, None])[:2]]
    dtype = ctx.dtype(x)
    wh = antialias_weights(shape[2], size[0], mode, scales[0]).astype(dtype)
    ww = antialias_weights(shape[3], size[1], mode, scales[1]).astype(dtype)
    plan = separable_plan(wh, ww)
    if plan != "dense":
        first, second = ((2, wh), (3, ww)) if plan == "rows_first" else ((3, ww), (2, wh))
        y = _sum_of_taps(ctx, ctx.emit(_op.stop_fusion(x)), first[1], first[0])
        return _sum_of_taps(ctx, ctx.emit(_op.stop_fusion(y)), second[1], second[0])
    y = ctx.emit(_op.matmul(x, const(np.ascontiguousarray(ww.T))))
    return ctx.emit(_op.matmul(const(wh), y))


def _sum_of_taps(ctx: AtenContext, x, weights, axis):
    """``weights`` [out, in] applied along ``axis`` of 4-D ``x``: sum_t take(x, idx_t, axis) *
    w_t over the band of taps of ``filter_taps`` (one injective kernel once fused)."""
    idx, w = filter_taps(weights)
    shape = [1, 1, 1, 1]
    shape[axis] = idx.shape[0]
    acc = None
    for t in range(idx.shape[1]):
        term = _op.multiply(_op.take(x, const(idx[:, t].copy()), axis),
                            const(w[:, t].reshape(shape).copy()))
        acc = ctx.emit(term if acc is None else _op.add(acc, term))
    return acc


def _euclid_by_mm(ctx: AtenContext, x1, x2, mode) -> bool:
    """Would torch take this Euclidean cdist by a matrix product (compute_mode None / 0: when
    either side has more than 25 rows; 1: always; 2: never)? Static float operands only."""
    s1, s2 = ctx.shape(x1), ctx.shape(x2)
    if mode == 2 or not ctx.dtype(x1).startswith("float") or ctx.dtype(x1) != ctx.dtype(x2):
        return False
    if not all(isinstance(d, int) for d in (*s1, *s2)) or s1[:-2] != s2[:-2]:
        return False
    return mode == 1 or s1[-2] > 25 or s2[-2] > 25


@register("_cdist_forward.default")
def _cdist(ctx: AtenContext, args):
    """(x1 [.., P, M], x2 [.., R, M], p, compute_mode) -> [.., P, R]. The Euclidean distance as
    torch computes it for many rows, ``sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0))`` with one matmul;
    otherwise the p-norm of every difference over a broadcast [.., P, R, M] tensor."""
    x1, x2 = args[0], args[1]
    p = float(args[2]) if len(args) > 2 and args[2] is not None else 2.0
    mode = args[3] if len(args) > 3 else None
    if p == 2.0 and _euclid_by_mm(ctx, x1, x2, mode):
        nd = ctx.ndim(x2)
        prod = _op.matmul(x1, _op.permute_dims(x2, list(range(nd - 2)) + [nd - 1, nd - 2]))
        n1 = _op.sum(_op.multiply(x1, x1), [-1], True)
        n2 = _op.expand_dims(_op.sum(_op.multiply(x2, x2), [-1]), -2)
        d2 = _op.subtract(_op.add(n1, n2), _op.multiply(prod, ctx.tensor(2.0, x1)))
        return ctx.emit(_op.sqrt(_op.maximum(d2, ctx.tensor(0.0, x1))))
    d = ctx.emit(_op.subtract(_op.expand_dims(x1, -2), _op.expand_dims(x2, -3)))
    return _vector_norm(ctx, [d, p, [-1], False])


@register("bucketize.Tensor")
def _bucketize(ctx: AtenContext, args):
    """bucketize(input, boundaries (1-d), out_int32, right): how many boundaries lie below
    each value (``right``: at or below it), a count over a broadcast comparison."""
    x, b = args[0], args[1]
    out_int32 = bool(args[2]) if len(args) > 2 and args[2] is not None else False
    right = bool(args[3]) if len(args) > 3 and args[3] is not None else False
    if ctx.ndim(b) != 1:
        raise ctx.fail(f"bucketize needs 1-d boundaries, got {ctx.ndim(b)}-d")
    v = _op.expand_dims(x, -1)
    below = _op.less_equal(b, v) if right else _op.less(b, v)
    dtype = "int32" if out_int32 else "int64"
    return ctx.emit(_op.sum(_op.astype(below, dtype), [-1]))


@register("searchsorted.Tensor", "searchsorted.Scalar")
def _searchsorted(ctx: AtenContext, args):
    """searchsorted(sorted_sequence, values, out_int32, right, side, sorter): for each value,
    how many entries of its row of the sequence lie below it (``right`` or ``side="right"``:
    at or below it), a count over a broadcast comparison; an N-d sequence pairs its leading
    dims with the values' (an inverse-CDF draw: ``searchsorted(cdf, u)`` per batch row)."""
    seq, x = args[0], args[1]
    opt = [args[i] if len(args) > i else None for i in range(2, 6)]
    out_int32, right, side, sorter = bool(opt[0]), bool(opt[1]), opt[2], opt[3]
    if sorter is not None:
        raise ctx.fail("searchsorted with a sorter is not supported")
    if side is not None:
        right = side == "right"
    x = ctx.tensor(x, seq)
    if ctx.ndim(seq) > 1:
        if ctx.ndim(x) != ctx.ndim(seq):
            raise ctx.fail(f"searchsorted: a {ctx.ndim(seq)}-d sequence needs values of as "
                           f"many dims, got {ctx.ndim(x)}-d")
        seq = _op.expand_dims(seq, -2)                      # (..., 1, n) against (..., m, 1)
    v = _op.expand_dims(x, -1)
    below = _op.less_equal(seq, v) if right else _op.less(seq, v)
    return ctx.emit(_op.sum(_op.astype(below, "int32" if out_int32 else "int64"), [-1]))
