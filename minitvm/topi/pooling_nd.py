"""N-d pooling on te tensors (any number of spatial layout letters, e.g. ``NCW``, ``NCDHW``,
``NDHWC``): max/average pooling and adaptive average pooling, the Relax legalization of the
1-D and 3-D pooling ops (``nn_te.pool2d`` stays the 2-D one)."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .broadcast import ax_names, const_like
from .utils import ieee_max

__all__ = ["pool_nd", "adaptive_avg_pool_nd"]

_SPATIAL_LETTERS = "DHW"


def _i64(v: int) -> E.IntImm:
    return E.IntImm("int64", int(v))


def widest_bin(n, o) -> E.PrimExpr:
    """A bound of the widest adaptive bin ``[floor(i*n/o), ceil((i+1)*n/o))`` over run-time
    sizes: ``ceil(n/o) + 1`` (each end rounds by less than 1), at most ``n``. The reduction over
    it, masked to each bin, replaces one over the whole axis (a 20x20 plane pooled to 7x7: 16
    taps per output instead of 400)."""
    n, o = (_to(v, "int64") for v in (n, o))
    return E.Min(n, E.FloorDiv(n + o - _i64(1), o) + _i64(1))


def _to(v, dtype):
    return v if v.dtype == dtype else E.Cast(dtype, v)


def _spatial_axes(layout: str) -> list[int]:
    return [k for k, c in enumerate(layout) if c in _SPATIAL_LETTERS]


def _all(conds):
    out = conds[0]
    for c in conds[1:]:
        out = E.And(out, c)
    return out


def pool_nd(x, kind: str, pool_size, strides, dilation, padding, count_include_pad: bool,
            layout: str, out_shape):
    """Max or average pooling over the spatial letters of ``layout``; ``padding`` is
    (before..., after...). Padded positions never win a max and are counted by an average only
    with ``count_include_pad`` (stages ``pool_max`` / ``pool_sum`` + ``pool_avg``)."""
    axes = _spatial_axes(layout)
    nd = len(axes)
    ks = [int(v) for v in pool_size]
    rk = [te.reduce_axis((_i64(0), _i64(ks[q])), name=f"rv{q}") for q in range(nd)]
    sizes = [x.shape[a] for a in axes]
    before = [int(p) for p in padding[:nd]]
    after = [int(p) for p in padding[nd:2 * nd]] if len(padding) >= 2 * nd else before

    def window(i, r, q):
        s, d, p = int(strides[q]), int(dilation[q]), before[q]
        v = i * s if s != 1 else i
        v = v + (r * d if d != 1 else r)
        return v - p if p else v

    def src(i):
        idx, conds = list(i), []
        for q, ax in enumerate(axes):
            j = window(i[ax], rk[q], q)
            conds.append(E.And(j >= 0, j < sizes[q]))
            idx[ax] = E.Min(E.Max(j, _i64(0)), sizes[q] - 1)
        return _all(conds), x[tuple(idx)]

    names = ax_names(len(x.shape))
    if kind == "max":
        def body(*i):
            c, v = src(i)
            return ieee_max(E.Select(c, v, tir_op.min_value(x.dtype)), axis=rk)

        return te.compute(out_shape, body, name="pool_max", varargs_names=names)

    def sbody(*i):
        c, v = src(i)
        return te.sum(E.Select(c, v, const_like(0, x.dtype)), axis=rk)

    summed = te.compute(out_shape, sbody, name="pool_sum", varargs_names=names)

    def avg(*i):
        # the taps t < k whose position lo + t*d lies in [start, stop): inside the input, or
        # with count_include_pad inside the padded input (never the overhang of a ceil-mode
        # window past the padding, as PyTorch and ONNX count)
        cnt = None
        for q, ax in enumerate(axes):
            d = int(dilation[q])
            lo = window(i[ax], _i64(0), q)
            start, stop = (-before[q], sizes[q] + after[q]) if count_include_pad else \
                (0, sizes[q])
            first = E.Max(E.FloorDiv(-lo + (start + d - 1), _i64(d)), _i64(0))
            last = E.Min(E.FloorDiv(stop - 1 - lo, _i64(d)), _i64(ks[q] - 1))
            n = E.Max(last - first + 1, _i64(1))
            cnt = n if cnt is None else cnt * n
        return summed[i] / _to(cnt, x.dtype)

    return te.compute(out_shape, avg, name="pool_avg", varargs_names=names)


def adaptive_avg_pool_nd(x, layout: str, out_shape):
    """Adaptive average pooling over the spatial letters of ``layout``: output cell ``o`` of
    ``n`` along a dim of size ``L`` averages ``floor(o*L/n)`` to ``ceil((o+1)*L/n)``."""
    axes = _spatial_axes(layout)
    nd = len(axes)
    sizes = [x.shape[a] for a in axes]
    outs = [out_shape[a] for a in axes]

    def start(o, q):
        return E.FloorDiv(o * sizes[q], outs[q])

    def end(o, q):
        return E.FloorDiv((o + 1) * sizes[q] + outs[q] - 1, outs[q])

    rk = []
    for q in range(nd):
        if isinstance(sizes[q], E.IntImm) and isinstance(outs[q], E.IntImm):
            h, n = sizes[q].value, outs[q].value
            width = max(-(-((o + 1) * h) // n) - (o * h) // n for o in range(n))
            rk.append(te.reduce_axis((_i64(0), _i64(width)), name=f"rv{q}"))
        else:
            rk.append(te.reduce_axis((_i64(0), widest_bin(sizes[q], outs[q])), name=f"rv{q}"))

    def sbody(*i):
        idx, conds = list(i), []
        for q, ax in enumerate(axes):
            j = start(i[ax], q) + rk[q]
            conds.append(j < end(i[ax], q))
            idx[ax] = E.Min(j, sizes[q] - 1)
        return te.sum(E.Select(_all(conds), x[tuple(idx)], const_like(0, x.dtype)), axis=rk)

    names = ax_names(len(x.shape))
    summed = te.compute(out_shape, sbody, name="adaptive_pool_sum", varargs_names=names)

    def avg(*i):
        cnt = None
        for q, ax in enumerate(axes):
            w = end(i[ax], q) - start(i[ax], q)
            cnt = w if cnt is None else cnt * w
        return summed[i] / _to(cnt, x.dtype)

    return te.compute(out_shape, avg, name="adaptive_pool_avg", varargs_names=names)
