"""The flat form of the pooling schedule (``schedule/pool.py``, ``emit_flat``, ``FLAT``): ``k x
k`` / ``k`` windows tiling an unpadded plane of at most ``FLAT_MAX_COLUMNS`` output columns
combine each plane's rows into a temporary and then the whole plane's windows as one row
where a row ends in a partial vector. Max and avg pools at 1 to 17 output columns (8, 16:
whole vectors, and 17: the direct form), odd planes whose last row
and column no window reads, 3x3 / 3 windows, int8, NaN, on both ISAs' schedules (AVX-512: off,
the direct form as before), against numpy."""

import numpy as np
import pytest
from conv_reference import np_max_pool
from schedule_isa import force_isa

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.schedule import pool
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

# (batch, channels, rows, columns, window = stride): output columns 1 to 17
PLANES = [
    (2, 3, 5, 3, 2), (1, 4, 5, 4, 2), (2, 2, 7, 6, 2), (1, 3, 9, 10, 2), (2, 5, 14, 14, 2),
    (1, 3, 15, 17, 2), (1, 2, 4, 26, 2), (1, 2, 6, 32, 2), (1, 2, 5, 34, 2), (1, 3, 9, 15, 3),
]


def _avg(a, k):
    n, c, h, w = a.shape
    oh, ow = h // k, w // k
    return a[:, :, :oh * k, :ow * k].reshape(n, c, oh, k, ow, k).mean(axis=(3, 5))


def _build(kind, dtype="float32"):
    """One graph of a ``kind`` pool per plane of ``PLANES`` (each its own input)."""
    args, outs = [], []
    for i, (n, c, h, w, k) in enumerate(PLANES):
        x = relay.var(f"x{i}", shape=(n, c, h, w), dtype=dtype)
        pooled = relay.nn.max_pool2d if kind == "max" else relay.nn.avg_pool2d
        outs.append(pooled(x, (k, k), (k, k)))
        args.append(x)
    kernel_cache.clear_cache()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, relay.Tuple(outs))),
                          target="llvm")
    kernel_cache.clear_cache()
    return lib


def _run(lib, feeds):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**feeds)
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def _flat_kernels(lib) -> int:
    return sum("pool_plane" in {s.buffer.name for s in walk_stmts(k.prim_func.body)
                               if isinstance(s, S.DeclBuffer)}
               for k in lib.get_lib().kernels.values())


def _feeds(dtype, rng):
    if dtype == "int8":
        return {f"x{i}": rng.integers(-128, 128, p[:4]).astype("int8")
                for i, p in enumerate(PLANES)}
    return {f"x{i}": rng.standard_normal(p[:4]).astype(dtype) for i, p in enumerate(PLANES)}


@pytest.mark.parametrize("kind, dtype", [("max", "float32"), ("avg", "float32"),
                                         ("max", "int8")])
@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_flat_form_matches_numpy(isa, kind, dtype, rng, monkeypatch):
    force_isa(monkeypatch, isa)
    lib = _build(kind, dtype)
    flat = sum(w // k <= pool.FLAT_MAX_COLUMNS and pool._partial_row(w // k, 8)
               for _, _, _, w, k in PLANES)
    assert flat == len(PLANES) - 3  # (8 and 16 output columns: whole vectors; 17: too wide)
    assert _flat_kernels(lib) == (flat if pool.FLAT[isa] else 0)
    feeds = _feeds(dtype, rng)
    for (_, _, _, _, k), got, x in zip(PLANES, _run(lib, feeds), feeds.values()):
        want = np_max_pool(x.astype("float64"), k, k, 0) if kind == "max" else _avg(x.astype("float64"), k)
        assert got.shape == want.shape and got.dtype == x.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_flat_max_propagates_nan(rng, monkeypatch):
    force_isa(monkeypatch, "avx2")
    lib = _build("max")
    feeds = _feeds("float32", rng)
    x = feeds["x4"]  # 14x14 -> 7x7
    x[0, 0, 3, 5] = np.nan  # window (1, 2), its second row
    x[1, 4, 13, 13] = np.nan  # the last window's last tap
    x[1, 2, :, :] = -np.inf
    got = _run(lib, feeds)[4]
    assert np.isnan(got[0, 0, 1, 2]) and np.isnan(got[1, 4, 6, 6])
    assert np.isnan(got).sum() == 2
    assert (got[1, 2] == -np.inf).all()


def test_windows_that_do_not_tile_the_plane_stay_direct(monkeypatch):
    force_isa(monkeypatch, "avx2")
    for args in [((1, 2, 8, 8), (2, 2), (2, 2), (1, 1), (1, 1, 1, 1)),   # padded
                 ((1, 2, 8, 9), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0)),   # an overhang (ceil)
                 ((1, 2, 9, 9), (3, 3), (2, 2), (1, 1), (0, 0, 0, 0))]:  # overlapping
        x = relay.var("x", shape=args[0])
        y = relay.nn.max_pool2d(x, *args[1:], ceil_mode=True)
        kernel_cache.clear_cache()
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
        assert _flat_kernels(lib) == 0
    kernel_cache.clear_cache()
