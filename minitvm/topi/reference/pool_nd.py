"""Numpy references of the 1-D/3-D pools TVM has besides the 2-D ones: nn.max_pool3d,
nn.avg_pool3d, nn.adaptive_{max,avg}_pool{1,3}d, nn.global_{max,avg}_pool{1,3}d and
nn.upsampling3d.

Windowed pooling reuses the layout-generic pool of ``reference.nn``; adaptive pooling reduces
the bins ``[floor(i * n / out), ceil((i + 1) * n / out))`` of every pooled axis.
"""

from __future__ import annotations

import numpy as np

from ..shape import spatial_axes
from ..utils import reference
from .image import _resize_axis
from .nn import _pool

__all__ = ["adaptive_pool_nd"]


def adaptive_pool_nd(x: np.ndarray, axes, out_sizes, kind: str) -> np.ndarray:
    """Adaptive max/avg pooling of ``x`` over ``axes`` to ``out_sizes``."""
    nd = len(axes)
    lead = x.ndim - nd
    y = np.moveaxis(x, list(axes), list(range(lead, x.ndim)))
    sizes = y.shape[lead:]
    work = y.astype(np.float64) if kind == "avg" else y
    out = np.empty(y.shape[:lead] + tuple(out_sizes), dtype=work.dtype)
    red = np.max if kind == "max" else np.mean
    for idx in np.ndindex(*out_sizes):
        sl = tuple(slice((i * n) // o, -((-(i + 1) * n) // o))
                   for i, n, o in zip(idx, sizes, out_sizes))
        out[(Ellipsis,) + idx] = red(work[(Ellipsis,) + sl], axis=tuple(range(lead, x.ndim)))
    out = out.astype(x.dtype, copy=False)
    return np.ascontiguousarray(np.moveaxis(out, list(range(lead, x.ndim)), list(axes)))


def _adaptive(attrs, args, out_type, kind, spatial):
    x = args[0]
    axes = spatial_axes(attrs.layout, x.ndim, spatial, "pool")
    sizes = [int(out_type.shape[a]) for a in axes]
    return adaptive_pool_nd(x, axes, sizes, kind)


def _def(name, fn, *extra):
    def impl(attrs, args, out_type):
        return fn(attrs, args, out_type, *extra)

    impl.__name__ = "ref_" + name.replace(".", "_")
    reference(name)(impl)


_def("nn.max_pool3d", _pool, "max", "DHW")
_def("nn.avg_pool3d", _pool, "avg", "DHW")
for _nd, _sp in ((1, "W"), (3, "DHW")):
    for _kind in ("max", "avg"):
        _def(f"nn.adaptive_{_kind}_pool{_nd}d", _adaptive, _kind, _sp)
        _def(f"nn.global_{_kind}_pool{_nd}d", _adaptive, _kind, _sp)


class _ResizeAttrs:
    """The resize attributes upsampling3d computes with (TVM lowers it to resize3d)."""

    __slots__ = ("method", "coordinate_transformation_mode", "rounding_method", "cubic_alpha",
                 "cubic_exclude")

    def __init__(self, method, mode):
        self.method = {"trilinear": "linear"}.get(method, method)
        self.coordinate_transformation_mode = mode
        self.rounding_method = ""
        self.cubic_alpha = -0.5
        self.cubic_exclude = 0


@reference("nn.upsampling3d")
def _upsampling3d(attrs, args, out_type):
    x = args[0]
    axes = spatial_axes(attrs.layout, x.ndim, "DHW", "nn.upsampling3d")
    ra = _ResizeAttrs(attrs.method, attrs.coordinate_transformation_mode)
    work = x.astype(np.float64)
    for a in axes:
        work = _resize_axis(work, a, int(out_type.shape[a]), ra, (0.0, 1.0))
    if np.dtype(out_type.dtype).kind in "iu":
        work = np.round(work)
    return work.astype(out_type.dtype)
