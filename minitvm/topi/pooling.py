"""Computes of the window pools (nn.max_pool1d/2d, nn.avg_pool1d/2d) and the adaptive pools
(nn.adaptive_max_pool1d/2d, nn.adaptive_avg_pool1d/2d), in any layout whose pooled axes are
whole (NCW, NWC, NCHW, NHWC, NCHW16c...).

Where the pooled axes are the trailing axes of a rank-(2 + nd) input (NCW, NCHW) the window
stage is tagged ``pool2d_window`` with its window in ``attrs`` (a 1-D pool as a 2-D one with a
unit H), which ``schedule/pool.py`` computes with unit-stride vectors; in the other layouts it
is a plain reduction, vectorized across the trailing axis. Out-of-range taps read a clamped
index and are masked with ``Select`` (every load stays in bounds), only on the axes where some
window leaves the input. A tagged float average is one stage, the sum of each tap over the
window's count, which the schedule computes as the sum divided once by a count it knows per
output position (a separate division pass cost as much as the pooling); elsewhere an average
is a sum stage and a division.

An adaptive pool to size 1 is a plain reduction over the whole axes (a global pool); one whose
input sizes are multiples of its output sizes is the window pool with kernel = stride = in /
out. Otherwise each output cell ``i`` of ``o`` reduces the static bin ``[floor(i * n / o),
ceil((i + 1) * n / o))``: a reduction over the widest bin, masked, tagged with the bins so that
the schedule combines each bin's own taps.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .shape import pool_tuple, spatial_axes
from .utils import (
    compute,
    dims,
    ieee_max,
    lowest,
    out_dims,
    out_tensor_types,
    pad_tuple,
)
from .utils import i32 as _i

POOL_TAG = "pool2d_window"  # (schedule/pool.py's tag: the schedules import topi, not back)


def _c(v):
    """An index bound: an int32 constant of an int, a symbolic size's expression as it is."""
    return _i(v) if isinstance(v, int) else v


def _static(*vals) -> bool:
    return all(isinstance(v, int) for v in vals)


def _all(conds):
    out = conds[0]
    for c in conds[1:]:
        out = E.And(out, c)
    return out


def _check_window(op_name: str, nd: int, ks, st, dl, pads) -> None:
    """A clear error for a window the op cannot have (the type relation checks the same)."""
    for name, vals, low in (
        ("pool_size", ks, 1),
        ("strides", st, 1),
        ("dilation", dl, 1),
        ("padding", pads, 0),
    ):
        want = 2 * nd if name == "padding" else nd
        if len(vals) != want:
            raise ValueError(
                f"{op_name}: {name} must have {want} value{'s' * (want > 1)}, got {list(vals)}"
            )
        if any(v < low for v in vals):
            what = "non-negative" if low == 0 else "positive"
            raise ValueError(f"{op_name}: {name} must be {what}, got {list(vals)}")


def _tagged(axes, ndim: int) -> bool:
    """Do the pooled axes trail a rank-(2 + nd) input (the layouts the pool schedule takes)?"""
    return ndim == len(axes) + 2 and list(axes) == list(range(2, ndim))


def _as_2d(vals, one):
    """A 1-D window attribute as the 2-D one with a unit H axis."""
    return (one, *vals) if len(vals) == 1 else tuple(vals)


def _whole_window(sizes, outs, ks, dl, pads) -> bool:
    """Is the pool one window over the whole unpadded axes (TFLite's AVERAGE_POOL_2D head, a
    7x7 pool of 7x7)? Then it is the global pool's plain reduction (a 1280x7x7 float mean,
    NCHW: 0.032 -> 0.008 ms)."""
    return not any(pads) and _static(*sizes, *outs) and \
        all(o == 1 and k == n and (d == 1 or k == 1)
            for n, o, k, d in zip(sizes, outs, ks, dl, strict=True))


def window_pool(x, kind: str, shape, axes, ks, st, dl, pads, count_include_pad: bool, name: str):
    """Max or average pooling of te tensor ``x`` into ``shape`` over ``axes``: window ``ks``,
    strides ``st``, dilation ``dl``, padding ``pads`` (befores, then afters). A max pool's
    padding holds the dtype's lowest finite value (TVM's topi); an average divides by its
    in-bounds taps, or with ``count_include_pad`` by its taps inside the padded input."""
    nd = len(axes)
    xs = dims(x)
    sizes = [xs[a] for a in axes]
    outs = [shape[a] for a in axes]
    before, after = list(pads[:nd]), list(pads[nd:])
    if _whole_window(sizes, outs, ks, dl, pads):
        return _global_pool(x, kind, shape, axes, name)
    rk = [te.reduce_axis((0, k), name=f"r{q}") for q, k in enumerate(ks)]
    # the axes where some window leaves the input (padding, or a ceil-mode overhang; over a
    # symbolic size, any: a ceil-mode window may overhang at some sizes)
    masked = [
        before[q] > 0 or not _static(outs[q], sizes[q]) or
        (outs[q] - 1) * st[q] + (ks[q] - 1) * dl[q] - before[q] >= sizes[q]
        for q in range(nd)
    ]
    info = None
    if _tagged(axes, len(xs)):
        # read by schedule/pool.py (2-D terms: a 1-D pool has a unit H)
        info = {
            "operands": (x,),
            "kind": kind,
            "pool_size": _as_2d(ks, 1),
            "strides": _as_2d(st, 1),
            "dilation": _as_2d(dl, 1),
            "padding": (*_as_2d(before, 0), *_as_2d(after, 0)),
        }

    def src(idx):
        fixed, conds = list(idx), []
        for q, a in enumerate(axes):
            j = idx[a] * st[q] + rk[q] * dl[q] - before[q]
            if masked[q]:
                conds.append(E.And(j >= 0, j < sizes[q]))
                j = E.Max(E.Min(j, _c(sizes[q] - 1)), _i(0))
            fixed[a] = j
        return (_all(conds) if conds else None), x[tuple(fixed)]

    tag = POOL_TAG if info is not None else ""
    if kind == "max":

        def body(*idx):
            cond, v = src(idx)
            if cond is not None:
                v = E.Select(cond, v, tir_op.min_value(x.dtype))
            return ieee_max(v, axis=rk)

        return [te.compute(shape, body, name=name, tag=tag, attrs=info)]

    def taps(q, o):
        # the taps t < k whose position o*s - p + t*d lies in [lo, hi): inside the input, or
        # with count_include_pad inside the padded input (never a ceil-mode window's overhang)
        lo, hi = (-before[q], sizes[q] + after[q]) if count_include_pad else (0, sizes[q])
        start = o * st[q] - before[q]
        a, b = _c(lo + dl[q] - 1) - start, _c(hi - 1) - start
        if dl[q] != 1:  # (vector integer division is slow: only where taps are spaced)
            a, b = E.FloorDiv(a, _i(dl[q])), E.FloorDiv(b, _i(dl[q]))
        first, last = E.Max(a, _i(0)), E.Min(b, _i(ks[q] - 1))
        return E.Max(last - first + 1, _i(0))

    def fixed_count(q):
        """The tap count of axis ``q`` when every window has the same one, else None (over
        a symbolic size: counted per window)."""
        if not _static(sizes[q], outs[q]):
            return None
        lo, hi = (-before[q], sizes[q] + after[q]) if count_include_pad else (0, sizes[q])
        counts = {
            sum(lo <= o * st[q] - before[q] + t * dl[q] < hi for t in range(ks[q]))
            for o in range(outs[q])
        }
        return counts.pop() if len(counts) == 1 else None

    fixed = [fixed_count(q) for q in range(nd)]
    const = 1
    for q in range(nd):
        const *= fixed[q] if fixed[q] is not None else 1

    def count(idx, dt):
        cnt = None
        for q, a in enumerate(axes):
            if fixed[q] is None:
                cnt = taps(q, idx[a]) if cnt is None else cnt * taps(q, idx[a])
        if cnt is None:
            return E.const(max(const, 1), dt)
        if const != 1:
            cnt = cnt * _i(const)
        return E.Cast(dt, E.Max(cnt, _i(1)))

    def total(*idx):
        cond, v = src(idx)
        if cond is not None:
            v = E.Select(cond, v, E.const(0, x.dtype))
        return v

    if info is not None and x.dtype.startswith("float"):
        info["count_include_pad"] = bool(count_include_pad)
    return _mean_stages(x, shape, total, count, rk, name, tag, info)


def _window_compute(kind: str, spatial: str):
    op_name = f"nn.{kind}_pool{len(spatial)}d"

    def fcompute(attrs, inputs, out_type):
        shape = out_dims(out_tensor_types(out_type)[0])
        x = inputs[0]
        nd = len(spatial)
        axes = spatial_axes(attrs.layout, len(dims(x)), spatial, op_name)
        ks, st, dl = (pool_tuple(v, nd) for v in (attrs.pool_size, attrs.strides, attrs.dilation))
        pads = pad_tuple(attrs.padding, nd, op_name)
        _check_window(op_name, nd, ks, st, dl, pads)
        include = bool(getattr(attrs, "count_include_pad", False))
        return window_pool(x, kind, shape, axes, ks, st, dl, pads, include, f"{kind}_pool{nd}d")

    fcompute.__name__ = f"compute_{kind}_pool{len(spatial)}d"
    return fcompute


# ------------------------------------------------------------------ adaptive pools
def adaptive_bins(n: int, o: int) -> tuple:
    """The input ranges ``[lo, hi)`` that the ``o`` output cells of an axis of ``n`` reduce."""
    return tuple(((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o))


def _global_pool(x, kind: str, shape, axes, name: str):
    """Pooling of whole axes (an adaptive pool to size 1): a plain reduction, which the
    lowering runs over the flattened trailing axes with vector partial results."""
    xs = dims(x)
    rk = {a: te.reduce_axis((0, xs[a]), name=f"r{q}") for q, a in enumerate(axes)}

    def load(idx):
        return x[tuple(rk[a] if a in rk else i for a, i in enumerate(idx))]

    red = list(rk.values())
    if kind == "max":
        return [te.compute(shape, lambda *idx: ieee_max(load(idx), axis=red), name=name)]
    total = te.compute(shape, lambda *idx: te.sum(load(idx), axis=red), name=f"{name}_sum")
    n = 1
    for a in axes:
        n = n * xs[a]
    count = E.const(n, total.dtype) if isinstance(n, int) else E.Cast(total.dtype, n)
    return [te.compute(shape, lambda *idx: total[idx] / count, name=name)]


def adaptive_pool(x, kind: str, shape, axes, name: str):
    """Adaptive max or average pooling of te tensor ``x`` into ``shape`` over ``axes``."""
    xs = dims(x)
    sizes = [xs[a] for a in axes]
    outs = [shape[a] for a in axes]
    if not _static(*sizes, *outs):
        return _symbolic_adaptive_pool(x, kind, shape, axes, sizes, outs, name)
    for n, o in zip(sizes, outs, strict=True):
        if o < 1 or n < 1:
            raise ValueError(
                f"nn.adaptive_{kind}_pool{len(axes)}d: cannot pool an axis of {n} to {o}"
            )
    if all(o == 1 for o in outs):
        return _global_pool(x, kind, shape, axes, name)
    if all(n % o == 0 for n, o in zip(sizes, outs, strict=True)):
        ks = [n // o for n, o in zip(sizes, outs, strict=True)]
        return window_pool(
            x, kind, shape, axes, ks, ks, [1] * len(axes), [0] * (2 * len(axes)), False, name
        )
    bins = [adaptive_bins(n, o) for n, o in zip(sizes, outs, strict=True)]
    widths = [max(hi - lo for lo, hi in b) for b in bins]
    rk = [te.reduce_axis((0, w), name=f"r{q}") for q, w in enumerate(widths)]
    info = None
    if _tagged(axes, len(xs)):
        info = {"operands": (x,), "kind": kind, "bins": _as_2d(bins, ((0, 1),))}

    def bounds(q, i):
        n, o = sizes[q], outs[q]
        return E.FloorDiv(i * n, _i(o)), E.FloorDiv(i * n + _i(n + o - 1), _i(o))

    def src(idx):
        fixed, conds = list(idx), []
        for q, a in enumerate(axes):
            lo, hi = bounds(q, idx[a])
            if all(h - lo_ == widths[q] for lo_, h in bins[q]):
                fixed[a] = lo + rk[q]
                continue
            conds.append(lo + rk[q] < hi)
            fixed[a] = E.Min(lo + rk[q], _i(sizes[q] - 1))
        return (_all(conds) if conds else None), x[tuple(fixed)]

    tag = POOL_TAG if info is not None else ""
    if kind == "max":

        def body(*idx):
            cond, v = src(idx)
            if cond is not None:
                v = E.Select(cond, v, lowest(x.dtype))
            return ieee_max(v, axis=rk)

        return [te.compute(shape, body, name=name, tag=tag, attrs=info)]

    def total(*idx):
        cond, v = src(idx)
        if cond is not None:
            v = E.Select(cond, v, E.const(0, x.dtype))
        return v

    def count(idx, dt):
        return _window_count(bounds, axes, idx, dt)

    return _mean_stages(x, shape, total, count, rk, name, tag, info)


def _symbolic_adaptive_pool(x, kind: str, shape, axes, sizes, outs, name: str):
    """Adaptive pooling over symbolic sizes: each output cell ``i`` of ``o`` reduces
    ``[floor(i * n / o), ceil((i + 1) * n / o))``, a reduction over ``ceil(n / o) + 1`` taps
    (at least any bin's width) masked to the bin, averaged over its width. The sizes must be
    positive (``shape_conditions``: a call with an empty axis runs per shape, which refuses
    it as the static pool does)."""
    from .shape_conditions import assume_positive

    for n, o in zip(sizes, outs, strict=True):
        if isinstance(o, int) and o < 1:
            raise ValueError(f"nn.adaptive_{kind}_pool{len(axes)}d: cannot pool an axis of {n} "
                             f"to {o}")
        for v in (n, o):
            if not isinstance(v, int):
                assume_positive(v)
    if all(isinstance(o, int) and o == 1 for o in outs):
        return _global_pool(x, kind, shape, axes, name)
    widths = [(_c(n) + _c(o) - _i(1)) // _c(o) + _i(1) if not _static(n, o) else
              max(hi - lo for lo, hi in adaptive_bins(n, o)) for n, o in zip(sizes, outs)]
    rk = [te.reduce_axis((0, w), name=f"r{q}") for q, w in enumerate(widths)]

    def bounds(q, i):
        n, o = _c(sizes[q]), _c(outs[q])
        return E.FloorDiv(i * n, o), E.FloorDiv(i * n + n + o - _i(1), o)

    def src(idx):
        fixed, conds = list(idx), []
        for q, a in enumerate(axes):
            lo, hi = bounds(q, idx[a])
            conds.append(lo + rk[q] < hi)
            fixed[a] = E.Min(lo + rk[q], _c(sizes[q] - 1))
        return _all(conds), x[tuple(fixed)]

    if kind == "max":

        def body(*idx):
            cond, v = src(idx)
            return ieee_max(E.Select(cond, v, lowest(x.dtype)), axis=rk)

        return [te.compute(shape, body, name=name)]

    def total(*idx):
        cond, v = src(idx)
        return E.Select(cond, v, E.const(0, x.dtype))

    def count(idx, dt):
        return _window_count(bounds, axes, idx, dt)

    return _mean_stages(x, shape, total, count, rk, name, "", None)


def _adaptive_compute(kind: str, spatial: str):
    op_name = f"nn.adaptive_{kind}_pool{len(spatial)}d"

    def fcompute(attrs, inputs, out_type):
        shape = out_dims(out_tensor_types(out_type)[0])
        x = inputs[0]
        axes = spatial_axes(attrs.layout, len(dims(x)), spatial, op_name)
        return adaptive_pool(x, kind, shape, axes, f"adaptive_{kind}_pool{len(spatial)}d")

    fcompute.__name__ = f"compute_adaptive_{kind}_pool{len(spatial)}d"
    return fcompute


for _kind in ("max", "avg"):
    for _sp in ("W", "HW"):
        compute(f"nn.{_kind}_pool{len(_sp)}d")(_window_compute(_kind, _sp))
        compute(f"nn.adaptive_{_kind}_pool{len(_sp)}d")(_adaptive_compute(_kind, _sp))


def _window_count(bounds, axes, idx, dt: str):
    """The element count of the window at output index ``idx``: the product over the pooled
    ``axes`` of ``hi - lo``, each axis's ``bounds(q, i)``, as ``dt``."""
    cnt = None
    for q, a in enumerate(axes):
        lo, hi = bounds(q, idx[a])
        cnt = hi - lo if cnt is None else cnt * (hi - lo)
    return E.Cast(dt, cnt)


def _mean_stages(x, shape, total, count, rk, name: str, tag: str, info: dict | None) -> list:
    """An average pool's stages: for floats one stage, each tap over its window's count (the
    pool schedule, where ``info`` tags the stage for it, sums the taps and divides once); for
    integers the sum, then a stage dividing it (truncating as before)."""
    if info is not None and x.dtype.startswith("float"):
        info["kind"] = "avg"
        return [te.compute(shape, lambda *idx: te.sum(total(*idx) / count(idx, x.dtype), axis=rk),
                           name=name, tag=tag, attrs=info)]
    if info is not None:
        info["kind"] = "sum"  # (the sum stage of an integer mean: divided by the next stage)
    summed = te.compute(shape, lambda *idx: te.sum(total(*idx), axis=rk), name=f"{name}_sum",
                        tag=tag, attrs=info)
    return [te.compute(shape, lambda *idx: summed[idx] / count(idx, summed.dtype), name=name)]
