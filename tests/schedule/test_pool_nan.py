"""NaN propagation of the max pooling schedule (``schedule/pool.py``): a NaN anywhere in a
window makes that output NaN and no other, for a NaN at every input position, in the direct
form (plain max tree plus one "all ordered" select per window; a strided window's rows
combined first or not) and the row form, at stride 1 and 2, with padding, ceil mode, float64
and 1-D pools; NaN beside +-inf too."""

import numpy as np
import pytest
from relay_build import build_runner

from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.schedule import pool
from minitvm.schedule.common import vector_isa


def _windows(n, k, s, p0, o):
    """Per output position, the in-bounds input positions of its window."""
    return [[i * s + t - p0 for t in range(k) if 0 <= i * s + t - p0 < n] for i in range(o)]


def _ref(x, k, s, pad, oh, ow):
    """numpy max over each window's in-bounds taps, NaN if any tap is NaN (np.max)."""
    h, w = x.shape[-2:]
    out = np.empty(x.shape[:-2] + (oh, ow), x.dtype)
    for i, ys in enumerate(_windows(h, k[0], s[0], pad[0], oh)):
        for j, xs in enumerate(_windows(w, k[1], s[1], pad[1], ow)):
            out[..., i, j] = x[..., ys, :][..., xs].max(axis=(-2, -1))
    return out


def _build(shape, k, s, pad, ceil, dtype):
    x = relay.var("x", shape=shape, dtype=dtype)
    if len(shape) == 3:
        y = relay.nn.max_pool1d(x, k[1:], s[1:], padding=(pad[1], pad[3]), ceil_mode=ceil)
    else:
        y = relay.nn.max_pool2d(x, k, s, (1, 1), pad, ceil_mode=ceil)
    return build_runner(x, y)[1]


CASES = [
    # shape, pool size, strides, padding (top, left, bottom, right), ceil, dtype
    ((1, 2, 7, 10), (3, 3), (1, 1), (1, 1, 1, 1), False, "float32"),   # Inception's
    ((1, 2, 9, 11), (3, 3), (2, 2), (1, 1, 1, 1), False, "float32"),   # ResNet's
    ((1, 2, 6, 8), (2, 2), (2, 2), (0, 0, 0, 0), False, "float32"),
    ((1, 2, 7, 9), (3, 3), (2, 2), (0, 0, 0, 0), True, "float32"),     # GoogLeNet's, ceil
    ((1, 2, 5, 13), (2, 3), (1, 2), (1, 0, 0, 2), False, "float32"),
    ((1, 2, 6, 9), (3, 3), (1, 1), (1, 1, 1, 1), False, "float64"),
    ((1, 2, 19), (1, 3), (1, 1), (0, 1, 0, 1), False, "float32"),      # 1-D
    ((1, 2, 4, 51), (3, 3), (2, 2), (0, 0, 0, 0), True, "float32"),    # 25 out: zmm on AVX-512
]


def _cases_both_forms():
    return [pytest.param(c, form, id=f"{c[0]}-{c[1]}-{c[2]}-{c[5]}-{form}")
            for c in CASES for form in ("direct", "direct-rows-first", "rows")]


@pytest.mark.parametrize("case, form", _cases_both_forms())
def test_nan_at_every_position(case, form, monkeypatch):
    shape, k, s, pad, ceil, dtype = case
    if form == "rows":
        monkeypatch.setattr(pool, "DIRECT_MAX_TAPS", 0)
    if form == "direct-rows-first":  # (a strided window's rows combined first at any size)
        monkeypatch.setitem(pool.VERTICAL_FIRST_MIN, vector_isa(), (2, 0))
    kernel_cache.clear_cache()
    try:
        run = _build(shape, k, s, pad, ceil, dtype)
    finally:
        kernel_cache.clear_cache()
    rng = np.random.default_rng(1)
    base = rng.standard_normal(shape).astype(dtype)
    clean = run(base)
    oh, ow = (clean.shape[-2], clean.shape[-1]) if len(shape) == 4 else (1, clean.shape[-1])
    x4 = base.reshape(shape[:2] + (-1, shape[-1]))
    np.testing.assert_array_equal(clean.reshape(shape[:2] + (oh, ow)), _ref(x4, k, s, pad, oh, ow))
    h, w = x4.shape[-2:]
    rows, cols = _windows(h, k[0], s[0], pad[0], oh), _windows(w, k[1], s[1], pad[1], ow)
    for y in range(h):
        for xpos in range(w):
            xv = x4.copy()
            xv[0, 0, y, xpos] = np.nan if (y + xpos) % 2 else -np.nan  # both signs
            got = run(xv.reshape(shape)).reshape(shape[:2] + (oh, ow))
            hit = np.zeros((oh, ow), bool)
            hit[np.ix_([y in r for r in rows], [xpos in c for c in cols])] = True
            assert np.array_equal(np.isnan(got[0, 0]), hit), (y, xpos, np.isnan(got[0, 0]))
            want = clean.reshape(got.shape)
            np.testing.assert_array_equal(got[0, 0][~hit], want[0, 0][~hit])
            np.testing.assert_array_equal(got[:, 1:], want[:, 1:])


@pytest.mark.parametrize("case", CASES[:4] + CASES[5:6])
def test_nans_beside_infinities(case):
    """Many NaNs and +-inf: NaN wins over +inf and -inf in a window, +inf over numbers."""
    shape, k, s, pad, ceil, dtype = case
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((3,) + shape[1:]).astype(dtype)
    u = rng.random(xv.shape)
    xv[u < 0.08] = np.nan
    xv[(u >= 0.08) & (u < 0.16)] = np.inf
    xv[(u >= 0.16) & (u < 0.2)] = -np.nan
    got = _build(xv.shape, k, s, pad, ceil, dtype)(xv)
    np.testing.assert_array_equal(got, _ref(xv, k, s, pad, got.shape[-2], got.shape[-1]))
    assert np.isnan(got).any() and np.isinf(got).any() and np.isfinite(got).any()
