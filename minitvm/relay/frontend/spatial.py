"""Spatial-transformer sampling shared by the PyTorch and ONNX importers: a 2-D affine grid
(F.affine_grid, ONNX AffineGrid) as elementwise arithmetic on constant coordinate rows, and grid
sampling (F.grid_sample, ONNX GridSample). 2-D bilinear or nearest sampling with zeros or border
padding is decomposed into coordinate arithmetic (once per sample position), a ``take`` of the
image's pixel rows and a weighted sum, so it lowers natively and fuses; other modes (bicubic, reflection, 3-D) use
``image.grid_sample``.
"""

from __future__ import annotations

import numpy as np

from .. import expr as _expr
from .. import op as _op
from ..op import annotation as _annotation
from ..op import image as _image

__all__ = ["affine_grid_2d", "grid_sample"]


def _coords(n: int, align_corners: bool) -> np.ndarray:
    """The normalized [-1, 1] positions of ``n`` pixels (their centers unless aligned)."""
    v = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return v if align_corners else v * (n - 1) / n


def _const(v, dtype):
    return _expr.const(np.asarray(v, dtype=dtype), dtype)


def affine_grid_2d(theta, h: int, w: int, align: bool, dt: str):
    """theta (N, 2, 3) -> the (N, H, W, 2) grid: grid[n, h, w] = theta[n] @ (x_w, y_h, 1).
    N is theta's own (a run-time batch too: a dynamic-batch spatial transformer's grid)."""
    xs = _const(_coords(w, align).reshape(1, 1, w, 1), dt)
    ys = _const(_coords(h, align).reshape(1, h, 1, 1), dt)
    cols = [_op.expand_dims(_op.take(theta, _const(k, "int64"), axis=2), 1, 2)  # (N, 1, 1, 2)
            for k in range(3)]
    return _op.add(_op.add(_op.multiply(xs, cols[0]), _op.multiply(ys, cols[1])), cols[2])


def _unnormalize(g, size, align, padding, dt):
    """Grid values in [-1, 1] -> pixel positions (clamped for border padding)."""
    if align:
        v = _op.multiply(_op.add(g, _const(1.0, dt)), _const((size - 1) / 2.0, dt))
    else:
        v = _op.divide(_op.subtract(_op.multiply(_op.add(g, _const(1.0, dt)),
                                                 _const(float(size), dt)), _const(1.0, dt)),
                       _const(2.0, dt))
    if padding == "border":
        v = _op.clip(v, 0.0, float(size - 1))
    return v


def grid_sample(data, grid, shape, dt: str, mode: str, padding: str, align: bool):
    """Sample ``data`` (static ``shape``, N C spatial...) at ``grid`` (N, out spatial..., nd)
    holding (x, y[, z]) in [-1, 1]; mode bilinear / nearest / bicubic, padding zeros / border /
    reflection. A run-time N (not an int) takes Relay's ``image.grid_sample``."""
    nd = len(shape) - 2
    run_time_batch = not isinstance(shape[0], int)  # (the ONNX importer's dynamic batch)
    shape = [shape[0]] + [int(d) for d in shape[1:]]
    if nd != 2 or mode == "bicubic" or padding == "reflection" or run_time_batch:
        layout = {2: "NCHW", 3: "NCDHW"}.get(nd)
        if layout is None:
            raise ValueError(f"grid_sample: expects 4-D or 5-D input, got {len(shape)}-D")
        perm = [0, nd + 1] + list(range(1, nd + 1))
        return _image.grid_sample(data, _op.transpose(grid, perm), mode, layout, padding, align)
    n, c, h, w = shape
    gx = _op.take(grid, _const(0, "int64"), axis=3)  # (N, Ho, Wo)
    gy = _op.take(grid, _const(1, "int64"), axis=3)
    ix = _unnormalize(gx, w, align, padding, dt)
    iy = _unnormalize(gy, h, align, padding, dt)
    # the image's pixels as rows: (N*H*W, C); a sample position's row is n*H*W + y*W + x
    # materialized once (stop_fusion): fused into each gather, every tap of every channel
    # would recompute its position through the transposes and reshapes that produced ``data``
    # (RT-DETR's deformable attention reads a head-split slice of its value tensor so; 1.6x
    # faster there, 1.3x on the modulated deformable conv)
    rows = _annotation.stop_fusion(_op.reshape(_op.transpose(data, [0, 2, 3, 1]),
                                               (n * h * w, c)))
    base = _const(np.arange(n).reshape(n, 1, 1) * (h * w), "int32")

    def tap(y, x, wgt):
        """The (N, Ho, Wo, C) pixels at integer positions y, x (float) times ``wgt`` (N, Ho,
        Wo), zero outside. The row index and the weight are computed once per sample position
        (stop_fusion): fused into the gather they would be recomputed for every channel."""
        yi, xi = _op.cast(y, "int32"), _op.cast(x, "int32")
        inside = _op.logical_and(
            _op.logical_and(_op.greater_equal(yi, _const(0, "int32")),
                            _op.less(yi, _const(h, "int32"))),
            _op.logical_and(_op.greater_equal(xi, _const(0, "int32")),
                            _op.less(xi, _const(w, "int32"))))
        yc = _op.clip(yi, 0, h - 1)
        xc = _op.clip(xi, 0, w - 1)
        idx = _annotation.stop_fusion(
            _op.add(_op.add(base, _op.multiply(yc, _const(w, "int32"))), xc))
        ok = _op.cast(inside, dt)
        wgt = _annotation.stop_fusion(ok if wgt is None else _op.multiply(wgt, ok))
        return _op.multiply(_op.take(rows, idx, axis=0), _op.expand_dims(wgt, 3))

    if mode == "nearest":
        out = tap(_op.round(iy), _op.round(ix), None)
    else:
        y0, x0 = _op.floor(iy), _op.floor(ix)
        fy, fx = _op.subtract(iy, y0), _op.subtract(ix, x0)
        one = _const(1.0, dt)
        y1, x1 = _op.add(y0, one), _op.add(x0, one)
        wy = (_op.subtract(one, fy), fy)
        wx = (_op.subtract(one, fx), fx)
        out = None
        for a, yy in enumerate((y0, y1)):
            for b, xx in enumerate((x0, x1)):
                term = tap(yy, xx, _op.multiply(wy[a], wx[b]))
                out = term if out is None else _op.add(out, term)
    return _op.transpose(out, [0, 3, 1, 2])
