"""The direct form of the pooling schedule (``schedule/pool.py``, ``emit_direct``): max and avg
pooling against numpy on odd planes, every stride the direct form takes, asymmetric padding,
dilation and ceil mode, with and without the rows combined first (``VERTICAL_FIRST``); the
same values as the row form (``emit_rows``) where padding meets -inf and NaN; and which form
a window gets (the direct form on AVX2 and AVX-512 alike: ``DIRECT``)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import pool
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

DIRECT = pool.DIRECT[vector_isa()]  # the direct form on the host's ISA (both ISAs)


def _out_size(n, k, s, d, p0, p1, ceil):
    span = n + p0 + p1 - (k - 1) * d - 1
    o = (-(-span // s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= n + p0:  # (the last window must start inside input or left pad)
        o -= 1
    return o


def _ref(x, kind, k, s, d, pad, ceil=False, include_pad=False):
    """numpy pooling (float64): max over a window's in-bounds taps (padding never wins on
    finite data); avg as their sum over the tap count (or the window size with padding)."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = pad
    oh = _out_size(h, k[0], s[0], d[0], pt, pb, ceil)
    ow = _out_size(w, k[1], s[1], d[1], pl, pr, ceil)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            ys = [i * s[0] + a * d[0] - pt for a in range(k[0])]
            xs = [j * s[1] + b * d[1] - pl for b in range(k[1])]
            ys = [y for y in ys if 0 <= y < h]
            xs = [v for v in xs if 0 <= v < w]
            win = x[:, :, ys][:, :, :, xs].astype("float64")
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                # (with count_include_pad the window is clipped to the padded input, as in TVM)
                ylo, yhi = i * s[0] - pt, min(i * s[0] + (k[0] - 1) * d[0] - pt, h + pb - 1)
                xlo, xhi = j * s[1] - pl, min(j * s[1] + (k[1] - 1) * d[1] - pl, w + pr - 1)
                cnt = ((yhi - ylo) // d[0] + 1) * ((xhi - xlo) // d[1] + 1) if include_pad \
                    else len(ys) * len(xs)
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out


def _build(shape, kind, k, s, d, pad, ceil=False, include_pad=False):
    x = relay.var("x", shape=shape)
    if kind == "max":
        y = relay.nn.max_pool2d(x, k, s, d, pad, ceil_mode=ceil)
    else:
        y = relay.nn.avg_pool2d(x, k, s, d, pad, ceil_mode=ceil, count_include_pad=include_pad)
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")


def _build_fresh(*args):
    """``_build`` with the in-process kernel cache emptied before and after (a switch patched
    by the test must not meet kernels built without it, nor leave its own behind)."""
    kernel_cache.clear_cache()
    try:
        return _build(*args)
    finally:
        kernel_cache.clear_cache()


def _run(lib, xv, threads=None):
    old = threadpool.get_num_threads() if threads else None
    if threads:
        threadpool.set_num_threads(threads)
    try:
        g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        g.set_input("x", xv)
        g.run()
        return g.get_output(0).numpy()
    finally:
        if threads:
            threadpool.set_num_threads(old)


def _pool_prims(lib):
    return [k.prim_func for name, k in lib.get_lib().kernels.items() if "pool" in name]


def _buffer_names(prim) -> set:
    return {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}


CASES = [
    # shape, kind, pool size, strides, dilation, padding (top, left, bottom, right), ceil
    ((1, 64, 112, 112), "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),  # ResNet's
    ((2, 3, 13, 17), "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),
    ((1, 5, 11, 9), "max", (2, 3), (1, 1), (1, 1), (0, 1, 0, 1), False),
    ((1, 4, 15, 23), "max", (3, 3), (3, 3), (1, 1), (1, 0, 2, 1), True),
    ((1, 3, 10, 29), "max", (5, 5), (4, 4), (1, 1), (2, 2, 2, 2), False),
    ((1, 2, 12, 12), "max", (3, 3), (1, 2), (2, 2), (2, 1, 2, 1), False),     # dilated
    ((1, 3, 7, 5), "max", (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), True),
    ((1, 3, 6, 4), "max", (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False),       # 2 columns
    ((2, 6, 19, 21), "avg", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),
    ((1, 3, 14, 30), "avg", (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False),
    ((1, 4, 9, 27), "avg", (3, 5), (1, 3), (1, 1), (1, 2, 1, 2), False),
]


@pytest.mark.parametrize("case, include_pad", [(c, False) for c in CASES] +
                         [(c, True) for c in CASES if c[1] == "avg"])
def test_matches_numpy(case, include_pad, rng):
    shape, kind, k, s, d, pad, ceil = case
    xv = rng.standard_normal(shape).astype("float32")
    lib = _build(shape, kind, k, s, d, pad, ceil, include_pad)
    got = _run(lib, xv)
    want = _ref(xv, kind, k, s, d, pad, ceil, include_pad)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if DIRECT:
        (prim,) = _pool_prims(lib)
        names = _buffer_names(prim)
        assert "pool_vrow" not in names  # the direct form (or the flat one)
        assert ("pool_plane" in names) == _flat(shape, k, s, pad, ceil)
        assert ("pool_col" in names) == (_rows_first(shape, k, s) and
                                         not _flat(shape, k, s, pad, ceil))


def _flat(shape, k, s, pad, ceil):
    """Does the window take the flat form on the host's ISA (``pool.FLAT``): ``k x k`` / ``k``
    windows tiling an unpadded plane of at most ``FLAT_MAX_COLUMNS`` output columns?"""
    h, w = shape[-2:]
    return pool.FLAT[vector_isa()] and k[0] == s[0] and k[1] == s[1] >= 2 and \
        not any(pad) and w // s[1] <= pool.FLAT_MAX_COLUMNS and \
        (ceil is False or h % s[0] == 0 and w % s[1] == 0) and \
        pool._partial_row(w // s[1], pool.DIRECT_LANES)


def _rows_first(shape, k, s):
    """Does the direct form combine the window's rows into a row temporary first (at a column
    stride, where the window and the input row are large enough on this ISA)?"""
    min_kh, min_w = pool.VERTICAL_FIRST_MIN[vector_isa()]
    return s[1] > 1 and k[0] >= max(min_kh, 2) and shape[-1] >= min_w


@pytest.mark.parametrize("case", [c for c in CASES if c[3][1] > 1 and c[2][0] > 1])
def test_rows_first_on_any_plane(case, rng, monkeypatch):
    """The row temporary at every size (``VERTICAL_FIRST_MIN`` lowered): the same numbers, and
    the temporary is there (AVX-512 otherwise keeps it to wide rows of tall windows)."""
    shape, kind, k, s, d, pad, ceil = case
    xv = rng.standard_normal(shape).astype("float32")
    monkeypatch.setitem(pool.VERTICAL_FIRST_MIN, vector_isa(), (2, 0))
    monkeypatch.setitem(pool.FLAT, vector_isa(), False)  # (tiling windows: the flat form)
    lib = _build_fresh(shape, kind, k, s, d, pad, ceil)
    (prim,) = _pool_prims(lib)
    assert "pool_col" in _buffer_names(prim) or not DIRECT
    np.testing.assert_allclose(_run(lib, xv), _ref(xv, kind, k, s, d, pad, ceil),
                               rtol=1e-5, atol=1e-5)


def test_two_threads_match_numpy(rng):
    shape = (1, 48, 57, 57)
    xv = rng.standard_normal(shape).astype("float32")
    lib = _build(shape, "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1))
    np.testing.assert_array_equal(
        _run(lib, xv, threads=2), _ref(xv, "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)))


@pytest.mark.parametrize("case", [c for c in CASES if c[3][1] > 1][:4])
def test_strided_taps_without_row_temporary(case, rng, monkeypatch):
    """``VERTICAL_FIRST`` off: every tap a strided load of the input, the same numbers."""
    shape, kind, k, s, d, pad, ceil = case
    xv = rng.standard_normal(shape).astype("float32")
    monkeypatch.setattr(pool, "VERTICAL_FIRST", False)
    lib = _build_fresh(shape, kind, k, s, d, pad, ceil)
    (prim,) = _pool_prims(lib)
    assert not {"pool_col", "pool_vrow"} & _buffer_names(prim) or not DIRECT
    np.testing.assert_allclose(_run(lib, xv), _ref(xv, kind, k, s, d, pad, ceil),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, k, s, pad", [((1, 3, 9, 20), (3, 3), (2, 2), (1, 1, 1, 1)),
                                             ((1, 2, 8, 11), (2, 3), (1, 2), (1, 0, 1, 2))])
def test_same_values_as_row_form(shape, k, s, pad, rng, monkeypatch):
    """-inf inputs next to padding give the lowest finite value (padding), not -inf, and a NaN
    anywhere in a window gives NaN, exactly as the row form computes them."""
    xv = rng.standard_normal(shape).astype("float32")
    xv[:, :, :, :3] = -np.inf  # whole edge windows of -inf
    xv[:, :, -2:, :] = -np.inf
    xv[0, 0, 4, 5] = np.nan
    xv[0, 1, 0, 0] = np.nan
    direct = _run(_build(shape, "max", k, s, (1, 1), pad), xv)
    monkeypatch.setattr(pool, "DIRECT_MAX_TAPS", 0)  # every window to the row form
    lib = _build_fresh(shape, "max", k, s, (1, 1), pad)
    (prim,) = _pool_prims(lib)
    assert "pool_vrow" in _buffer_names(prim)
    rows = _run(lib, xv)
    np.testing.assert_array_equal(direct, rows)
    assert np.isnan(direct).any() and (direct == np.finfo("float32").min).any()


def test_large_windows_and_strides_leave_the_direct_form(rng):
    """A window of more than ``DIRECT_MAX_TAPS`` taps takes ``pool_symbolic``'s rows-first form
    (``pool_row``); a column stride past 4 the row form."""
    for shape, k, s, pad, form in [
            ((1, 2, 16, 16), (7, 7), (1, 1), (3, 3, 3, 3), "pool_row"),   # 49 taps
            ((1, 2, 30, 30), (3, 3), (5, 5), (0, 0, 0, 0), "pool_vrow")]:  # stride 5
        xv = rng.standard_normal(shape).astype("float32")
        lib = _build(shape, "max", k, s, (1, 1), pad)
        (prim,) = _pool_prims(lib)
        assert form in _buffer_names(prim)
        np.testing.assert_allclose(_run(lib, xv), _ref(xv, "max", k, s, (1, 1), pad))


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_both_isas_take_the_direct_form(isa, rng, monkeypatch):
    """AVX2 and AVX-512 both take the direct form (``DIRECT``: measured on a Zen 4 with
    AVX-512); with the switch off for the ISA (the schedule AVX-512 had before) the window
    takes the row form. The same numbers both ways."""
    args = ((1, 3, 13, 17), "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1))
    xv = rng.standard_normal(args[0]).astype("float32")
    want = _ref(xv, *args[1:])
    monkeypatch.setattr(pool, "vector_isa", lambda: isa)
    assert pool.DIRECT[isa]
    for direct in (True, False):
        monkeypatch.setitem(pool.DIRECT, isa, direct)
        lib = _build_fresh(*args)
        (prim,) = _pool_prims(lib)
        assert ("pool_vrow" in _buffer_names(prim)) != direct
        np.testing.assert_allclose(_run(lib, xv), want, rtol=1e-5, atol=1e-5)


def test_interior_and_taps():
    # 112 columns, 3 taps at stride 2 with one column of padding: output 0 reads the padding
    assert pool._interior(112, 3, 2, 1, 1, 56) == (1, 56)
    assert pool._taps(0, 112, 3, 2, 1, 1) == [1, 2]
    assert pool._taps(55, 112, 3, 2, 1, 1) == [0, 1, 2]
    # an input smaller than the window: no interior position
    assert pool._interior(2, 5, 1, 1, 2, 2) == (2, 2)
    assert pool._taps(1, 2, 5, 1, 1, 2) == [1, 2]
