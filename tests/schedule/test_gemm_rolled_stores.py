"""Rolled loops in the GEMMs over a symbolic row count: the swapped GEMM's guarded transposed
tile store (``GemmLoops.rolled_transposed_store``) and the in-place kernel's lane sums
(``gemm_tb``), each over a vector-stored copy of the accumulators. Structure, IR size and the
numbers at row counts from 0 through each branch (in place, swapped, packed), with the
schedules made as on AVX2 and as on AVX-512 (``schedule_isa``) on any host."""

import importlib

import numpy as np
import pytest
from schedule_isa import force_isa

from minitvm.backend import kernel_cache
from minitvm.schedule import gemm, gemm_kernel, gemm_tb, optimize_prim_func
from minitvm.script.parser import from_source
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

build = importlib.import_module("minitvm.codegen.build")

_SOURCE = '''@T.prim_func
def fused(p_x: T.handle, w: T.Buffer((T.int64({n}), T.int64({k})), "float32"),
          bias: T.Buffer((T.int64({n}),), "float32"), p_out: T.handle):
    T.func_attr({{"tir.noalias": T.bool(True)}})
    m = T.int64()
    x = T.match_buffer(p_x, (m, T.int64({k})))
    T_relu = T.match_buffer(p_out, (m, T.int64({n})))
    mm = T.alloc_buffer((m, T.int64({n})))
    T_add = T.alloc_buffer((m, T.int64({n})))
    for i, j, r in T.grid(m, T.int64({n}), T.int64({k})):
        with T.block("mm"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, r])
            with T.init():
                mm[vi, vj] = T.float32(0.0)
            mm[vi, vj] = mm[vi, vj] + x[vi, vk] * w[vj, vk]
    for a0, a1 in T.grid(m, T.int64({n})):
        with T.block("T_add"):
            v0, v1 = T.axis.remap("SS", [a0, a1])
            T_add[v0, v1] = mm[v0, v1] + bias[v1]
    for a0, a1 in T.grid(m, T.int64({n})):
        with T.block("T_relu"):
            v0, v1 = T.axis.remap("SS", [a0, a1])
            T_relu[v0, v1] = T.max(T_add[v0, v1], T.float32(0.0))
'''

# 512 x 1024: the smallest weight the swapped GEMM takes (gemm.SWAP_MIN_WEIGHT, N <= K)
N, K = 512, 1024


ISAS = sorted(gemm_kernel.TILES)


@pytest.fixture(params=ISAS)
def isa(request, monkeypatch):
    """The vector ISA the schedules are made for (the code runs on the host)."""
    force_isa(monkeypatch, request.param)
    return request.param


@pytest.fixture(scope="module", params=ISAS)
def swapped(request):
    """(isa, the scheduled PrimFunc, its compiled function, its LLVM IR), made as on ``isa``."""
    assert N * K >= gemm.SWAP_MIN_WEIGHT and N <= K
    with pytest.MonkeyPatch.context() as mp:
        force_isa(mp, request.param)
        g = optimize_prim_func(from_source(_SOURCE.format(n=N, k=K)))
        fn, ir = build.compile_prim_func(g, "fused")
    kernel_cache.clear_cache()
    return request.param, g, fn, ir


def _allocs(func, prefix: str) -> list:
    return [s for s in walk_stmts(func.body)
            if isinstance(s, S.Allocate) and s.buffer_var.name.startswith(prefix)]


def test_swapped_tile_store_is_one_rolled_loop(swapped):
    isa, g, _, ir = swapped
    # each swapped tile (AVX-512: 12 x 32 and the 8-row edge tile; AVX2: 6 x 16 and the
    # 2-row one) stores a copy of its accumulator
    mr, nr = gemm_kernel.TILES[isa]
    copies = _allocs(g, "acc_rows")
    assert copies and all(int(a.extents[0]) in (mr * nr, N % mr * nr) for a in copies)
    # the copy's rows of C run in a serial loop of min(nr, m - first row) turns, no guard per
    # row
    rolled = [s for s in walk_stmts(g.body) if isinstance(s, S.For) and
              s.kind == S.ForKind.SERIAL and isinstance(s.extent, E.Min)]
    assert len(rolled) >= len(copies)
    unrolled_guards = [s for s in walk_stmts(g.body) if isinstance(s, S.For) and
                       s.kind == S.ForKind.UNROLLED and int(s.extent) == nr and
                       isinstance(s.body, S.IfThenElse)]
    assert not unrolled_guards
    # 21.9k lines of LLVM IR before the rolled stores (18k of them the unrolled guarded stores)
    assert len(ir.splitlines()) < 8000, len(ir.splitlines())


def test_in_place_lane_sums_are_one_rolled_loop(swapped):
    isa, g, _, _ = swapped
    with pytest.MonkeyPatch.context() as mp:
        force_isa(mp, isa)
        lanes = gemm_tb.tile_shape()[2]
    copies = _allocs(g, "nt_lanes")
    assert copies  # the 4 x 4 tile and the one-row tail
    sums = [s for s in walk_stmts(g.body) if isinstance(s, S.For) and
            s.kind == S.ForKind.SERIAL and isinstance(s.extent, E.IntImm) and
            int(s.extent) == lanes and isinstance(s.body, S.For) and
            s.body.kind == S.ForKind.UNROLLED]
    assert len(sums) == len(copies)


@pytest.mark.parametrize("m", [0, 1, 3, 7, 16, 17, 45, 128, 131])
def test_rolled_stores_match_numpy(swapped, m):
    # 0-15 rows: in place (gemm_tb); 16-128 swapped; above 128 packed
    _, _, fn, _ = swapped
    rng = np.random.default_rng(m)
    x = rng.standard_normal((m, K)).astype("float32")
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype("float32")
    b = rng.standard_normal(N).astype("float32")
    out = np.full((m, N), np.nan, "float32")
    fn(x, w, b, out)
    want = np.maximum(x.astype("float64") @ w.T.astype("float64") + b, 0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m", [0, 1, 5, 6])
def test_lane_sum_order_is_sequential(m):
    # each output's lanes are added one by one from lane 0 (the order of the unrolled adds
    # this loop replaced): the kernel's result equals numpy's float32 left-to-right lane sum
    n, k = 4, 64
    lanes = gemm_tb.tile_shape()[2]
    g = optimize_prim_func(from_source(_SOURCE.format(n=n, k=k)))
    assert _allocs(g, "nt_lanes")
    fn, _ = build.compile_prim_func(g, "fused")
    rng = np.random.default_rng(7 + m)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    out = np.zeros((m, n), "float32")
    fn(x, w, b, out)
    # (m, n, k) products, exact in float64: lane l of vector step q is k = q*lanes + l, each
    # step a fused multiply-add (one rounding; float64's is exact here but for rare ties)
    prod = x.astype("float64")[:, None, :] * w.astype("float64")[None, :, :]
    acc = np.zeros((m, n, lanes), "float32")
    for q in range(k // lanes):
        acc = (acc + prod[:, :, q * lanes:(q + 1) * lanes]).astype("float32")
    s = np.zeros((m, n), "float32")
    for lane in range(lanes):
        s = s + acc[:, :, lane]
    np.testing.assert_array_equal(out, np.maximum(s + b, np.float32(0)))



def test_swapped_one_row_tile_rolled_store_matches_numpy(isa, monkeypatch):
    # N = mr + 1 (AVX-512: 13 = 12 + 1; the swapped GEMM taken for any weight here): the last
    # tile has one row of W, its accumulator split into gemv_split partial sums, the copy
    # taking the summed row
    monkeypatch.setattr(gemm, "SWAP_MIN_WEIGHT", 1)
    mr = gemm_kernel.TILES[isa][0]
    n, k = mr + 1, 64
    g = optimize_prim_func(from_source(_SOURCE.format(n=n, k=k)))
    one, full = sorted(int(a.extents[0]) for a in _allocs(g, "acc_rows"))
    assert full == mr * one  # (an mr-row tile and a one-row tile of the same panel width)
    fn, _ = build.compile_prim_func(g, "fused")
    for m in (16, 45, 128):
        rng = np.random.default_rng(m)
        x = rng.standard_normal((m, k)).astype("float32")
        w = rng.standard_normal((n, k)).astype("float32")
        b = rng.standard_normal(n).astype("float32")
        out = np.full((m, n), np.nan, "float32")
        fn(x, w, b, out)
        want = np.maximum(x.astype("float64") @ w.T.astype("float64") + b, 0)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
