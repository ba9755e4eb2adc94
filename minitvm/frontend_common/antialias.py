"""Antialiased resampling weights (PyTorch's ``F.interpolate(..., antialias=True)``, as
torchvision's ``Resize`` calls it on tensors): per output pixel, a filter over the input pixels
around its centre, stretched by the downscale factor so that every input pixel contributes
(PIL's scheme, which torch follows), normalized to sum to one. Separable: one constant
[out, in] matrix per spatial axis, so the resize is two matrix products."""

from __future__ import annotations

import numpy as np

__all__ = ["FILTER_SUPPORT", "antialias_weights"]

# the filters' half-widths at scale 1: the triangle (bilinear) and Keys' cubic, a = -0.5
FILTER_SUPPORT = {"bilinear": 1.0, "bicubic": 2.0}


def _filter(mode: str, x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(0.0, 1.0 - x)
    a = -0.5
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def antialias_weights(n_in: int, n_out: int, mode: str, scale: float | None = None) -> np.ndarray:
    """float64 [n_out, n_in]: row i the normalized filter taps of output pixel i. ``scale`` is
    torch's scale factor for the axis when one was given (the pixel step is then 1 / scale,
    not n_in / n_out); align_corners=False coordinates (pixel centres)."""
    if mode not in FILTER_SUPPORT:
        raise ValueError(f"antialiased {mode!r} resampling is not supported "
                         f"(supported: {sorted(FILTER_SUPPORT)})")
    step = 1.0 / scale if scale else n_in / n_out
    stretch = max(step, 1.0)  # downscaling widens the filter; upscaling keeps it
    support = FILTER_SUPPORT[mode] * stretch
    out = np.zeros((n_out, n_in))
    for i in range(n_out):
        centre = step * (i + 0.5)
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), n_in)
        taps = _filter(mode, (np.arange(lo, hi) - centre + 0.5) / stretch)
        total = taps.sum()
        if total:
            out[i, lo:hi] = taps / total
    return out
