"""Spatial-transformer pieces the Relax importers share (ONNX AffineGrid / GridSample,
torch's affine_grid / grid_sampler_2d): a 2-D affine grid as elementwise arithmetic on constant
coordinate rows, and 2-D linear or nearest grid sampling with zeros or border padding,
decomposed into coordinate arithmetic, a ``gather_elements`` of the flattened image per corner
and a weighted sum, so it lowers through the shared elementwise and gather computes; the other
samplings (bicubic, reflection padding, 3-D) are one call of Relay's native kernel
(``topi.grid_sample``). The batch may be symbolic. ``ctx`` is the importer's context (``emit``, ``shape``, ``dtype``,
``shape_expr``, ``simplify``, ``fail``)."""

from __future__ import annotations

import numpy as np

from ...topi.grid_sample import grid_sample
from .. import op as _op
from ..expr import const

__all__ = ["affine_grid_2d", "grid_sample_2d", "grid_sample_kernel"]


def _coords(n: int, align: bool) -> np.ndarray:
    """The normalized [-1, 1] positions of ``n`` pixels (their centers unless aligned)."""
    v = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return v if align else v * (n - 1) / n


def _c(v, dtype):
    return const(np.asarray(v, dtype=dtype), dtype)


def affine_grid_2d(ctx, theta, h: int, w: int, align: bool):
    """theta (N, 2, 3) -> the (N, H, W, 2) grid: theta[n] @ (x_w, y_h, 1)."""
    dt = ctx.dtype(theta)
    xs = _c(_coords(w, align).reshape(1, 1, w, 1), dt)
    ys = _c(_coords(h, align).reshape(1, h, 1, 1), dt)
    cols = [ctx.emit(_op.expand_dims(_op.take(theta, _c(k, "int64"), axis=2), [1, 2]))
            for k in range(3)]
    out = _op.add(_op.add(_op.multiply(xs, cols[0]), _op.multiply(ys, cols[1])), cols[2])
    return ctx.emit(out)


def _unnormalize(g, size: int, align: bool, padding: str, dt):
    one = _c(1.0, dt)
    if align:
        v = _op.multiply(_op.add(g, one), _c((size - 1) / 2.0, dt))
    else:
        v = _op.divide(_op.subtract(_op.multiply(_op.add(g, one), _c(float(size), dt)), one),
                       _c(2.0, dt))
    if padding == "border":
        v = _op.clip(v, 0.0, float(size - 1))
    return v


def grid_sample_2d(ctx, x, grid, linear: bool, padding: str, align: bool):
    """Sample the 4-D ``x`` at ``grid`` (N, Ho, Wo, 2) holding (x, y) in [-1, 1]: bilinear when
    ``linear`` else nearest, ``padding`` zeros or border.

    The image is read as pixel rows (N, H*W, C) and each tap gathers whole rows: a sample
    position's index and weights are then the same for all its channels (the innermost, unit
    stride axis of the gather), so the fused kernel computes them once per position and not once
    per channel; the result is transposed back to (N, C, Ho, Wo)."""
    n, c, h, w = ctx.shape(x)
    _, ho, wo, _ = ctx.shape(grid)
    if not all(isinstance(d, int) for d in (h, w)):
        raise ctx.fail(f"the input's height and width must be static, got {ctx.shape(x)}")
    dt = ctx.dtype(x)
    gx = _op.take(grid, _c(0, "int64"), axis=3)  # (N, Ho, Wo)
    gy = _op.take(grid, _c(1, "int64"), axis=3)
    ix = ctx.emit(_unnormalize(gx, w, align, padding, dt))
    iy = ctx.emit(_unnormalize(gy, h, align, padding, dt))
    positions = ctx.simplify(ho * wo)
    # the pixel rows materialized once (a barrier): fused into each gather, every tap of every
    # channel recomputed its position through the transposes that produced ``x``
    rows = ctx.emit(_op.stop_fusion(
        _op.permute_dims(_op.reshape(x, ctx.shape_expr([n, c, h * w])), [0, 2, 1])))
    out_rows = ctx.shape_expr([n, positions, c])
    per_position = ctx.shape_expr([n, positions, 1])

    def tap(y, xx):
        """(N, Ho*Wo, C) pixels at integer positions (float y, x), and (N, Ho*Wo, 1) 1.0 where
        inside the image, 0.0 outside."""
        yi, xi = _op.astype(y, "int64"), _op.astype(xx, "int64")
        inside = _op.logical_and(
            _op.logical_and(_op.greater_equal(yi, _c(0, "int64")), _op.less(yi, _c(h, "int64"))),
            _op.logical_and(_op.greater_equal(xi, _c(0, "int64")), _op.less(xi, _c(w, "int64"))))
        idx = _op.add(_op.multiply(_op.clip(yi, 0, h - 1), _c(w, "int64")),
                      _op.clip(xi, 0, w - 1))
        # computed once per position (a barrier), not once per channel inside the gather
        idx = ctx.emit(_op.stop_fusion(_op.reshape(idx, per_position)))
        val = ctx.emit(_op.gather_elements(rows, _op.broadcast_to(idx, out_rows), 1))
        ok = ctx.emit(_op.reshape(_op.astype(inside, dt), per_position))
        return val, ok

    if not linear:
        val, ok = tap(_op.round(iy), _op.round(ix))
        out = ctx.emit(_op.multiply(val, ok))
    else:
        one = _c(1.0, dt)
        y0, x0 = ctx.emit(_op.floor(iy)), ctx.emit(_op.floor(ix))
        fy, fx = ctx.emit(_op.subtract(iy, y0)), ctx.emit(_op.subtract(ix, x0))
        wy = (_op.subtract(one, fy), fy)
        wx = (_op.subtract(one, fx), fx)
        out = None
        for a, yy in enumerate((y0, _op.add(y0, one))):
            for b, xx in enumerate((x0, _op.add(x0, one))):
                val, ok = tap(yy, xx)
                wgt = ctx.emit(_op.reshape(_op.multiply(wy[a], wx[b]), per_position))
                wgt = ctx.emit(_op.stop_fusion(_op.multiply(wgt, ok)))  # once per position
                term = ctx.emit(_op.multiply(val, wgt))
                out = term if out is None else ctx.emit(_op.add(out, term))
    out = ctx.emit(_op.permute_dims(out, [0, 2, 1]))
    return ctx.emit(_op.reshape(out, ctx.shape_expr([n, c, ho, wo])))


def grid_sample_kernel(ctx, x, grid, method: str, padding: str, align: bool):
    """Grid sampling as one call_tir of the shared native kernel: ``method`` nearest, bilinear
    or bicubic (2-D only), ``padding`` zeros, border or reflection; ``grid`` (N, *out, nd)
    holds (x, y[, z]). The output is (N, C, *out); N and the output dims may be symbolic (a
    dynamic batch of sample points), the image's spatial dims must be static."""
    xs, gs = ctx.shape(x), ctx.shape(grid)
    if not all(isinstance(d, int) for d in xs[2:] + gs[-1:]):  # (out and batch may be symbolic)
        raise ctx.fail(f"grid_sample: the image's spatial dims and the grid's coordinate count "
                       f"must be known, got {xs} and {gs}")
    out = [xs[0], xs[1], *gs[1:-1]]
    dt = ctx.dtype(x)
    # the image materialized (R.stop_fusion): the kernel reads it at 4 or 8 taps a sample, so a
    # fused producer would run once per tap, and chained samplings (VoxelMorph's scaling and
    # squaring, v + grid_sample(v, id + v)) would nest 8^k copies of the first into one kernel
    x = ctx.emit(_op.stop_fusion(x))

    def kernel(data, g):
        return grid_sample(data, g, method, padding, align, out, dt, channels_last_grid=True)

    return ctx.emit(ctx.bb.call_te(kernel, x, grid, primfunc_name_hint="grid_sample"))
