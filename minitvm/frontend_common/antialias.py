"""Antialiased resampling weights (PyTorch's ``F.interpolate(..., antialias=True)``, as
torchvision's ``Resize`` calls it on tensors): per output pixel, a filter over the input pixels
around its centre, stretched by the downscale factor so that every input pixel contributes
(PIL's scheme, which torch follows), normalized to sum to one. Separable: one constant
[out, in] matrix per spatial axis, so the resize is two matrix products, or per axis a short sum
of gathered taps (each row of the matrix is a narrow band): ``separable_plan`` picks the cheaper."""

from __future__ import annotations

import numpy as np

__all__ = ["FILTER_SUPPORT", "antialias_weights", "filter_taps", "separable_plan"]

# Relative cost of one multiply-add in each lowering, one thread on the AVX-512 host (240x320 ->
# 112x112, 512x512 -> 64x64, 64x64 -> 128x128, 64x56x56 -> 28x28, 100x150 -> 37x41): a dense
# product's ~0.02 ns, a tap gathered along an outer axis (vectorized over the last) ~0.12 ns, a
# tap gathered along the last axis (scalar loads) ~0.29 ns.
DENSE_MAC_COST, OUTER_TAP_COST, LAST_TAP_COST = 1.0, 6.0, 15.0

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


def filter_taps(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 indices, weights), both [n_out, k]: the band of nonzero taps of each row of
    ``weights`` [n_out, n_in], k the widest band; a narrower row is filled with in-range taps of
    weight 0, so ``y[i] = sum_t x[idx[i, t]] * w[i, t]`` equals ``weights @ x``."""
    n_out, n_in = weights.shape
    nonzero = weights != 0
    any_tap = nonzero.any(1)
    first = np.where(any_tap, nonzero.argmax(1), 0)
    last = np.where(any_tap, n_in - 1 - nonzero[:, ::-1].argmax(1), 0)
    k = int((last - first).max()) + 1 if n_out else 1
    lo = np.minimum(first, max(n_in - k, 0))
    idx = lo[:, None] + np.arange(k)[None, :]
    return idx.astype("int64"), weights[np.arange(n_out)[:, None], idx]


def separable_plan(wh: np.ndarray, ww: np.ndarray) -> str:
    """How to apply the [oh, h] and [ow, w] filters to h x w images (the cheapest per image by
    the costs above): ``"dense"`` (two matrix products), ``"rows_first"`` (taps along the
    height, then along the width) or ``"cols_first"``. The taps win when each output reads few
    inputs (a downscale by 2-8x: 240x320 -> 112x112 0.55 -> 0.16 ms); the products when the
    filters span most of a short input."""
    (oh, h), (ow, w) = wh.shape, ww.shape
    kh, kw = filter_taps(wh)[0].shape[1], filter_taps(ww)[0].shape[1]
    costs = {
        "dense": (h * w * ow + ow * h * oh) * DENSE_MAC_COST,
        "rows_first": oh * w * kh * OUTER_TAP_COST + oh * ow * kw * LAST_TAP_COST,
        "cols_first": h * ow * kw * LAST_TAP_COST + oh * ow * kh * OUTER_TAP_COST,
    }
    return min(costs, key=costs.get)
