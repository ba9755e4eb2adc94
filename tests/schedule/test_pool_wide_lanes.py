"""Max pools at column stride 1 in vectors of 16 on AVX-512 (``pool.WIDE_MAX_LANES``): rows of
at least 16 interior columns take 16-lane vectors, shorter ones and means 8 as before; at a
column stride without the row temporary (``pool.STRIDED_MAX_LANES``) rows of at least 24
interior outputs; the values match numpy at odd widths, every direct-form stride, padding, and with NaN
anywhere in a row (NaN out wherever a window holds one), at 16 and 8 lanes alike."""

import numpy as np
import pytest
from test_pool_direct import _build, _pool_prims, _ref, _run

from minitvm.backend import kernel_cache
from minitvm.schedule import pool
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

CASES = [  # shape, pool size, strides, padding (top, left, bottom, right)
    ((1, 3, 20, 37), (3, 3), (1, 1), (1, 1, 1, 1)),  # Inception's 3x3 / 1, 37 columns
    ((1, 4, 23, 53), (3, 3), (2, 2), (1, 1, 1, 1)),  # ResNet's 3x3 / 2, 27 columns out
    ((1, 3, 8, 55), (3, 3), (2, 2), (0, 0, 1, 1)),  # SqueezeNet's (ceil mode), 27 out
    ((1, 3, 7, 49), (2, 2), (2, 2), (0, 0, 0, 0)),  # 24 columns out: 16 lanes
    ((1, 3, 7, 47), (2, 2), (2, 2), (0, 0, 0, 0)),  # 23: vectors of 8
    ((2, 2, 9, 70), (2, 3), (1, 3), (0, 1, 1, 2)),
    ((1, 2, 5, 66), (1, 4), (3, 1), (0, 1, 0, 2)),  # a row stride only: 16 lanes
    ((1, 2, 11, 71), (5, 5), (2, 4), (2, 2, 2, 2)),
    ((1, 3, 6, 18), (3, 3), (1, 1), (1, 1, 1, 1)),  # 16 interior columns: one vector
    ((1, 3, 6, 17), (3, 3), (1, 1), (1, 1, 1, 1)),  # 15 interior columns: vectors of 8
]


def _vector_widths(lib) -> set:
    (prim,) = _pool_prims(lib)
    return {int(s.extent.value) for s in walk_stmts(prim.body)
            if isinstance(s, S.For) and s.kind == S.ForKind.VECTORIZED}


@pytest.fixture
def lanes(monkeypatch):
    def set_lanes(n):
        monkeypatch.setitem(pool.WIDE_MAX_LANES, vector_isa(), n)
        monkeypatch.setitem(pool.STRIDED_MAX_LANES, vector_isa(), (n, 24 if n > 8 else n))
        kernel_cache.clear_cache()
    yield set_lanes
    kernel_cache.clear_cache()


@pytest.mark.parametrize("wide", [16, 8])
@pytest.mark.parametrize("shape,k,s,pad", CASES)
def test_max_pool_matches_numpy(shape, k, s, pad, wide, lanes, rng):
    lanes(wide)
    xv = rng.standard_normal(shape).astype("float32")
    lib = _build(shape, "max", k, s, (1, 1), pad)
    got = _run(lib, xv)
    np.testing.assert_array_equal(got, _ref(xv, "max", k, s, (1, 1), pad).astype("float32"))
    widths = _vector_widths(lib)
    assert (16 in widths) == (wide == 16 and _sixteen(shape, k, s, pad))


def _sixteen(shape, k, s, pad) -> bool:
    """Do 16-lane vectors apply: 16 columns past the edges at column stride 1, 24 interior
    outputs at a stride where the taps are loaded from the input (no row temporary)?"""
    if s[1] == 1:
        return shape[3] >= 18
    ow = (shape[3] + pad[1] + pad[3] - k[1]) // s[1] + 1
    lo, hi = pool._interior(shape[3], k[1], s[1], 1, pad[1], ow)
    min_kh, min_w = pool.VERTICAL_FIRST_MIN[vector_isa()]
    rows_first = k[0] >= max(min_kh, 2) and shape[3] >= min_w
    return hi - lo >= 24 and not rows_first


@pytest.mark.parametrize("wide", [16, 8])
@pytest.mark.parametrize("shape,k,s,pad", CASES[:4])
def test_nan_anywhere_gives_nan(shape, k, s, pad, wide, lanes, rng):
    lanes(wide)
    xv = rng.standard_normal(shape).astype("float32")
    flat = xv.reshape(-1)
    flat[rng.choice(flat.size, size=max(3, flat.size // 50), replace=False)] = np.nan
    got = _run(_build(shape, "max", k, s, (1, 1), pad), xv)
    # numpy's reference: NaN where any tap of the window is NaN, else the max
    filled = np.where(np.isnan(xv), np.float32(-1e30), xv)
    want = _ref(filled, "max", k, s, (1, 1), pad)
    has_nan = _ref(np.isnan(xv).astype("float32"), "max", k, s, (1, 1), pad) > 0
    assert has_nan.any() and (~has_nan).any()
    np.testing.assert_array_equal(np.isnan(got), has_nan)
    np.testing.assert_array_equal(got[~has_nan], want[~has_nan].astype("float32"))


def test_means_keep_vectors_of_8(lanes, rng):
    lanes(16)
    shape = (1, 3, 12, 40)
    xv = rng.standard_normal(shape).astype("float32")
    lib = _build(shape, "avg", (3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
    np.testing.assert_allclose(_run(lib, xv), _ref(xv, "avg", (3, 3), (1, 1), (1, 1),
                                                   (1, 1, 1, 1)), rtol=1e-5, atol=1e-5)
    assert 16 not in _vector_widths(lib)
