"""The KL-divergence calibration threshold: the vectorized search picks exactly the threshold
of the plain window-by-window search (written out here as the reference) on varied data."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.relay.quantize import kl_threshold
from minitvm.relay.quantize.calibrate import kl_divergence_scale


def reference_scale(arr, num_bins=8001, num_quantized_bins=255, eps=1e-4):
    """One window at a time: p with the clipped mass on its ends, q its
    ``num_quantized_bins``-level quantization spread over the non-empty bins, both smoothed
    in count units; the first window with the smallest divergence wins."""
    arr = np.asarray(arr, "float64").ravel()
    peak = float(np.max(np.abs(arr)))
    if peak == 0.0:
        return 1.0
    hist, edges = np.histogram(arr, bins=num_bins, range=(-peak, peak))
    hist = hist.astype("float64")
    zero, best, best_div = num_bins // 2, peak, np.inf

    def smooth(v):
        zeros = v == 0
        n_zero, n_nonzero = int(zeros.sum()), int((~zeros).sum())
        if n_nonzero == 0 or eps * n_zero / n_nonzero >= 1.0:
            return None
        return np.where(zeros, eps, v - eps * n_zero / n_nonzero)

    for i in range(num_quantized_bins // 2, zero + 1):
        lo, hi = zero - i, zero + i + 1
        src = hist[lo:hi]
        p = src.copy()
        p[0] += hist[:lo].sum()
        p[-1] += hist[hi:].sum()
        starts = (np.arange(num_quantized_bins) * src.size) // num_quantized_bins
        sizes = np.diff(np.append(starts, src.size))
        sums = np.add.reduceat(src, starts)
        counts = np.add.reduceat((src != 0).astype("float64"), starts)
        q = np.repeat(sums / np.maximum(counts, 1.0), sizes) * (p != 0)
        ps, qs = smooth(p), smooth(q)
        if ps is None or qs is None:
            continue
        ps, qs = ps / ps.sum(), qs / qs.sum()
        div = float(np.sum(ps * np.log(ps / qs)))
        if div < best_div - 1e-12:
            best_div, best = div, float(edges[hi])
    return best


def _cases():
    rng = np.random.default_rng(0)
    return {
        "normal": rng.standard_normal(20000),
        "relu": np.maximum(rng.standard_normal(5000), 0),
        "heavy_tail": rng.standard_t(2, 5000),
        "few": rng.standard_normal(7),
        "constant": np.full(50, -3.0),
        "sparse": np.where(rng.random(4000) < 0.02, rng.standard_normal(4000), 0),
        "outlier": np.append(rng.standard_normal(3000) * 0.01, 40.0),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_same_threshold_as_window_by_window(name):
    """On 801-bin histograms (63 levels) to keep the reference fast, and once at the default
    8001 bins."""
    arr = _cases()[name]
    small = {"num_bins": 801, "num_quantized_bins": 63}
    assert kl_divergence_scale(arr, **small) == reference_scale(arr, **small)
    if name == "sparse":  # many windows quantize losslessly: a tie the first one wins
        assert kl_divergence_scale(arr) == reference_scale(arr)


def test_both_sum_strategies_agree(monkeypatch):
    arr = _cases()["normal"]
    grouped = kl_divergence_scale(arr)
    monkeypatch.setattr(kl_threshold, "_MAX_DISTINCT", 0)  # force the gathered sum
    monkeypatch.setattr(kl_threshold, "_CHUNK", 1 << 12)  # in many chunks
    assert kl_divergence_scale(arr) == grouped


def test_zero_input_and_clipping():
    assert kl_divergence_scale(np.zeros(10)) == 1.0
    arr = _cases()["outlier"]
    # the lone outlier is clipped away: the narrowest window (255 of 8001 bins) wins
    assert kl_divergence_scale(arr) == pytest.approx(40.0 * 255 / 8001, rel=1e-9)
