"""Which loops run on the thread pool, for shapes known only at run time (a BERT layer's
symbolic sequence length): the packing of an activation, the attention GEMMs, layer norms and
head transposes go parallel at seq 128; the packed GEMM's row blocks are of equal size; and
every changed path still matches numpy on odd and symbolic shapes."""

import numpy as np
import pytest

from minitvm import te, tir
from minitvm.arith import Analyzer
from minitvm.codegen.build import build
from minitvm.schedule import common, gemm, gemm_kernel, optimize_prim_func
from minitvm.schedule.gemm_kernel import GemmBuilder
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer
from minitvm.tir.stmt_functor import post_order, substitute, walk_stmts
from minitvm.topi import nn_te

NEVER = 1 << 40


def i64(v):
    return tir.IntImm("int64", v)


def _loops(func, kind=None):
    return [s for s in walk_stmts(func.body) if isinstance(s, S.For)
            and (kind is None or s.kind == kind)]


def _parallel(func):
    return _loops(func, S.ForKind.PARALLEL)


def _min_extent(loop) -> int:
    return int(loop.annotations.get("parallel_min_extent", 2))


def _extent_at(loop, env: dict) -> int:
    """The loop's extent with the symbolic vars of ``env`` (name -> value) substituted."""
    binds = {v: i64(env[v.name]) for v in post_order(loop.extent)
             if isinstance(v, tir.Var) and v.name in env}
    out = Analyzer().simplify(substitute(loop.extent, binds))
    assert isinstance(out, tir.IntImm), f"extent {loop.extent} did not fold: {out}"
    return out.value


def _runs_parallel_at(loop, env: dict) -> bool:
    """Would the generated code hand ``loop`` to the pool at these sizes (2+ threads)?"""
    return _extent_at(loop, env) >= max(2, _min_extent(loop))


def _arrays(params, sizes, rng):
    out = []
    for t in params:
        shape = [d.value if isinstance(d, tir.IntImm) else sizes[d.name] for d in t.shape]
        out.append(rng.standard_normal(shape).astype("float32"))
    return out


# ------------------------------------------------------------ attention: probs x V, batch 12
def _probs_v():
    n = tir.Var("seq", "int64")
    a = te.placeholder((i64(12), n, n), name="probs")
    b = te.placeholder((i64(12), n, i64(64)), name="v")
    r = te.reduce_axis((i64(0), n), name="k")
    c = te.compute((i64(12), n, i64(64)),
                   lambda h, i, j: te.sum(a[h, i, r] * b[h, r, j], axis=r), name="bmm")
    return a, b, c


def test_attention_probs_v_packs_and_computes_in_parallel_at_seq_128():
    a, b, c = _probs_v()
    g = optimize_prim_func(te.create_prim_func([a, b, c]))
    par = _parallel(g)
    pack = [s for s in par if s.loop_var.name.startswith("pb")]
    gemm_loops = [s for s in par if s.loop_var.name.startswith("q")]
    assert len(pack) == 1 and len(gemm_loops) == 1
    # the per-call packing of V (an activation) is on the pool too, not only the GEMM
    assert not [s for s in _loops(g, S.ForKind.SERIAL) if s.loop_var.name.startswith("pb")]
    for seq in (128, 512):
        assert _runs_parallel_at(pack[0], {"seq": seq})
        assert _runs_parallel_at(gemm_loops[0], {"seq": seq})


@pytest.mark.parametrize("seq", [1, 7, 33, 130])
def test_attention_probs_v_matches_numpy(seq, rng):
    a, b, c = _probs_v()
    f = build(optimize_prim_func(te.create_prim_func([a, b, c])))["main"]
    x, y, out = _arrays([a, b, c], {"seq": seq}, rng)
    f(x, y, out)
    np.testing.assert_allclose(out, x @ y, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------- layer norm and head transposes
def _layer_norm():
    n = tir.Var("seq", "int64")
    x = te.placeholder((i64(1), n, i64(768)), name="x")
    gamma = te.placeholder((i64(768),), name="gamma")
    beta = te.placeholder((i64(768),), name="beta")
    return x, gamma, beta, nn_te.layer_norm(x, gamma, beta, [-1], 1e-5)


def test_layer_norm_rows_run_in_parallel_at_seq_128():
    x, gamma, beta, y = _layer_norm()
    g = optimize_prim_func(te.create_prim_func([x, gamma, beta, y]))
    par = _parallel(g)
    assert par
    for loop in par:  # every pass over the rows (sums, normalization)
        assert _runs_parallel_at(loop, {"seq": 128})
        assert not _runs_parallel_at(loop, {"seq": 8})  # 6 K elements: one thread
    assert common.PARALLEL_MIN_WORK <= 128 * 768


@pytest.mark.parametrize("seq", [1, 5, 129])
def test_layer_norm_matches_numpy(seq, rng):
    x, gamma, beta, y = _layer_norm()
    f = build(optimize_prim_func(te.create_prim_func([x, gamma, beta, y])))["main"]
    xa, ga, ba, out = _arrays([x, gamma, beta, y], {"seq": seq}, rng)
    f(xa, ga, ba, out)
    m = xa.mean(-1, keepdims=True)
    v = ((xa - m) ** 2).mean(-1, keepdims=True)
    np.testing.assert_allclose(out, (xa - m) / np.sqrt(v + 1e-5) * ga + ba, rtol=1e-4,
                               atol=1e-4)


def _split_heads():
    n = tir.Var("seq", "int64")
    x = te.placeholder((i64(1), n, i64(768)), name="x")
    t = te.compute((i64(1), i64(12), n, i64(64)),
                   lambda z, h, s, d: x[z, s, h * i64(64) + d], name="T_transpose")
    return x, t


def test_head_transpose_runs_in_parallel_at_seq_128(rng):
    x, t = _split_heads()
    g = optimize_prim_func(te.create_prim_func([x, t]))
    par = _parallel(g)
    assert len(par) == 1
    assert _runs_parallel_at(par[0], {"seq": 128})
    f = build(g)["main"]
    for seq in (3, 131):
        xa, out = _arrays([x, t], {"seq": seq}, rng)
        f(xa, out)
        np.testing.assert_array_equal(out, xa.reshape(1, seq, 12, 64).transpose(0, 2, 1, 3))


# ------------------------------------------------------------ packed GEMM: balanced blocks
@pytest.mark.parametrize("tiles,most,want", [(128, 24, 22), (170, 24, 22), (20, 24, 24),
                                             (48, 24, 24), (49, 24, 17), (86, 43, 43)])
def test_balanced_row_blocks(tiles, most, want):
    tpb = gemm_kernel._balanced(tiles, most)
    assert tpb == want and tpb <= most
    blocks = -(-tiles // tpb)
    assert blocks == -(-tiles // most)  # no more blocks than before, only more even
    if blocks > 1:  # the last block is nearly full
        assert tiles - (blocks - 1) * tpb >= tpb - blocks


def _blocked_builder(m, n, k):
    mr, nr = 6, 16
    bld = GemmBuilder(None, m, n, k, False, False, False, "float32", mr, nr, 144, True, False,
                      False, gemm_kernel.PARALLEL_MIN_WORK)
    bld.blocking = (384, 8)  # the AVX2 cache-blocked schedule, whatever the host's ISA
    bld.prefetch_b = False
    return bld


def test_blocked_gemm_768_rows_in_six_even_blocks():
    bld = _blocked_builder(768, 128, 768)
    body = bld.compute_blocked()
    func = tir.PrimFunc([bld.A, bld.Bp, bld.C], body, attrs={"tir.noalias": True})
    par = _parallel(func)
    assert len(par) == 1 and par[0].extent.value == 6 * 4  # 6 row blocks x 4 panel groups
    tile_loops = [s for s in _loops(func, S.ForKind.SERIAL) if s.loop_var.name == "t"]
    # 22 tiles of 6 rows per block (22 x 5 + 18 = 128 tiles), not 24 x 5 + 8
    assert tile_loops and {s.extent.value for s in tile_loops} == {22}


@pytest.mark.parametrize("m", [770, 131, 5])
def test_blocked_gemm_balanced_blocks_match_numpy(m, rng):
    bld = _blocked_builder(m, 50, 401)
    func = tir.PrimFunc([bld.A, bld.Bp, bld.C], bld.compute_blocked(),
                        attrs={"tir.noalias": True, "global_symbol": "g"})
    f = build(func)["g"]
    a = rng.standard_normal((m, 401)).astype("float32")
    b = rng.standard_normal((401, 50)).astype("float32")
    c = np.zeros((m, 50), "float32")
    f(a, gemm_kernel.pack_b(b, 16), c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)


def test_inline_pack_rows_split_into_even_chunks():
    bld = GemmBuilder(None, 512, 768, 768, True, False, False, "float32", 6, 16, 144, False,
                      False, False, gemm_kernel.PARALLEL_MIN_WORK)
    bld.blocking = (384, 8)
    # 512 rows: two chunks of 258 / 254 rows (each packs its own copy of W), not 252/252/8
    tpc, chunks = bld.inline_pack_chunks()
    assert chunks == 2 and tpc * 6 >= 256


@pytest.mark.parametrize("m", [17, 300, 517])
def test_inline_pack_gemm_matches_numpy(m, rng):
    n, k = 40, 777
    bld = GemmBuilder(None, m, n, k, True, False, False, "float32", 6, 16, 144, False, False,
                      False, gemm_kernel.PARALLEL_MIN_WORK)
    bld.blocking = (384, 8)
    shape = bld.inline_pack_shape()
    bld.Bp = decl_buffer(shape, "float32", "bblock")
    body = bld.compute_inline_pack()
    body = S.Allocate(bld.Bp.data, "float32", [int(np.prod(shape))], True,
                      S.DeclBuffer(bld.Bp, body))
    func = tir.PrimFunc([bld.A, bld.B, bld.C], body,
                        attrs={"tir.noalias": True, "global_symbol": "g"})
    f = build(func)["g"]
    a = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    c = np.zeros((m, n), "float32")
    f(a, w, c)
    np.testing.assert_allclose(c, a @ w.T, rtol=1e-4, atol=1e-3)


# ---------------------------------------------------------------------- packing threshold
def test_packing_follows_the_gemm_threshold():
    # a GEMM worth the pool packs on the pool from PACK_PARALLEL_MIN_WORK elements ...
    big = gemm_kernel.gemm(64, 128, 784, transpose_b=True)
    assert [s for s in _parallel(big) if s.loop_var.name.startswith("pb")]
    # ... one under the GEMM's threshold keeps its packing on the calling thread, and a
    # threshold no GEMM reaches (the tuning space's "never parallel") keeps every loop there
    assert not _parallel(gemm_kernel.gemm(1, 128, 784, transpose_b=True))
    assert not _parallel(gemm_kernel.gemm(64, 128, 784, transpose_b=True,
                                          parallel_min_work=NEVER))


@pytest.mark.parametrize("m", [1, 9, 70])
def test_parallel_packing_matches_numpy(m, rng):
    f = build(gemm_kernel.gemm(m, 100, 333, transpose_b=True, parallel_min_work=1))["gemm"]
    a = rng.standard_normal((m, 333)).astype("float32")
    w = rng.standard_normal((100, 333)).astype("float32")
    c = np.zeros((m, 100), "float32")
    f(a, w, c)
    np.testing.assert_allclose(c, a @ w.T, rtol=1e-4, atol=1e-3)


# --------------------------------------------------- the swapped GEMM (weights at run time)
def _linear(k, n_out):
    s = tir.Var("seq", "int64")
    x = te.placeholder((s, i64(k)), name="x")
    w = te.placeholder((i64(n_out), i64(k)), name="w")
    r = te.reduce_axis((i64(0), i64(k)), name="k")
    y = te.compute((s, i64(n_out)), lambda i, j: te.sum(x[i, r] * w[j, r], axis=r),
                   name="matmul")
    return x, w, y


def test_linear_768_at_seq_128_packs_in_parallel(rng):
    x, w, y = _linear(768, 768)
    g = optimize_prim_func(te.create_prim_func([x, w, y]))
    par = _parallel(g)
    # every parallel loop of the paths a seq of 128 can take runs on the pool there
    assert par
    for loop in par:
        if loop.loop_var.name.startswith(("pb", "q")):
            assert _runs_parallel_at(loop, {"seq": 128}), loop.loop_var.name
    f = build(g)["main"]
    for seq in (3, 40, 130):
        xa, wa, out = _arrays([x, w, y], {"seq": seq}, rng)
        f(xa, wa, out)
        np.testing.assert_allclose(out, xa @ wa.T, rtol=1e-4, atol=1e-3)


def test_dense_threshold_is_a_tuning_candidate():
    from minitvm.schedule import tunable

    assert gemm.DENSE_PARALLEL_MIN_WORK in tunable._MIN_WORK


# ------------------------------------------- merging heads: [.., h, s, d] read as [.., s, h*d]
def _merge_heads(heads, d, lead_static=None):
    n = tir.Var("seq", "int64") if lead_static is None else i64(lead_static)
    x = te.placeholder((i64(1), i64(heads), n, i64(d)), name="x")
    y = te.compute((i64(1), n, i64(heads * d)),
                   lambda z, s, j: x[z, j // i64(d), s, j % i64(d)], name="T_reshape")
    return x, y


def _vector_loads_contiguous(func) -> bool:
    """Every load in a vectorized loop indexes its last axis by the vector lane directly
    (no ``//`` or ``%`` of it: a contiguous vector load, not a gather)."""
    assert _loops(func, S.ForKind.VECTORIZED)
    for loop in _loops(func, S.ForKind.VECTORIZED):
        for st in walk_stmts(loop.body):
            if isinstance(st, S.BufferStore):
                for e in post_order(st.value):
                    if isinstance(e, tir.BufferLoad) and any(
                            isinstance(x, (tir.FloorDiv, tir.FloorMod))
                            for x in post_order(e.indices[-1])):
                        return False
    return True


@pytest.mark.parametrize("heads,d,split", [(12, 64, True), (3, 48, True), (5, 24, True),
                                           (2, 8, False)])
def test_merge_heads_loops_heads_outside_the_vector(heads, d, split, rng):
    x, y = _merge_heads(heads, d)
    g = optimize_prim_func(te.create_prim_func([x, y]))
    # d at least one 16-lane vector: one loop over heads, vector loads along d (24: a vector
    # and a half vector a head, lower._split_row); d of 8, under a vector: lanes across heads
    assert _vector_loads_contiguous(g) == split
    f = build(g)["main"]
    for seq in (1, 7, 130):
        xa, out = _arrays([x, y], {"seq": seq}, rng)
        f(xa, out)
        np.testing.assert_array_equal(out, xa.transpose(0, 2, 1, 3).reshape(1, seq, heads * d))


def test_merge_heads_static_shape(rng):
    x, y = _merge_heads(4, 32, lead_static=9)
    g = optimize_prim_func(te.create_prim_func([x, y]))
    assert _vector_loads_contiguous(g)
    xa, out = _arrays([x, y], {}, rng)
    build(g)["main"](xa, out)
    np.testing.assert_array_equal(out, xa.transpose(0, 2, 1, 3).reshape(1, 9, 128))
