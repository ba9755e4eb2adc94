"""``gemm_vnni`` on int16 rows (``conv_vnni.PAIRS``: two int16 a word, ``vpdpwssd`` or
``vpmaddwd``) with an int16 or an int8 weight: dense equal to numpy's int64 product at ragged
sizes (K odd: the rows copied with a zero half, N not a multiple of 16), a 3-D input, a
weight passed at run time, a fused float64 epilogue, two threads; the packed layout."""

import numpy as np
import pytest
from conv_reference import run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.schedule import conv_vnni, gemm_vnni
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

pytestmark = pytest.mark.skipif(not conv_vnni.pairs_available(),
                                reason="the host has neither AVX-512BW nor AVX2")


def _build(a_shape, w, const_weight=True, epilogue=False):
    x = relay.var("x", shape=a_shape, dtype="int16")
    wv = relay.const(w) if const_weight else relay.var("w", shape=w.shape, dtype=str(w.dtype))
    y = relay.nn.dense(x, wv, out_dtype="int32")
    if epilogue:
        y = relay.multiply(relay.cast(y, "float64"), relay.const(0.5, "float64"))
    params = [x] if const_weight else [x, wv]
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")


def _names(lib) -> set[str]:
    (k,) = [k for name, k in lib.get_lib().kernels.items() if "dense" in name]
    return {s.buffer.name for s in walk_stmts(k.prim_func.body) if isinstance(s, S.DeclBuffer)}


CASES = [((16, 64), 256), ((7, 13), 21), ((1, 1), 16), ((2, 5, 32), 96), ((3, 9), 7)]


@pytest.mark.parametrize("a_shape, n", CASES)
@pytest.mark.parametrize("w_dtype", ["int8", "int16"])
def test_int16_dense_is_exact(a_shape, n, w_dtype):
    rng = np.random.default_rng(n + a_shape[-1])
    lo, hi = (-128, 128) if w_dtype == "int8" else (-1000, 1000)
    w = rng.integers(lo, hi, (n, a_shape[-1])).astype(w_dtype)
    x = rng.integers(-32768, 32768, a_shape).astype("int16")
    x.reshape(-1)[0], w[0, 0] = -32768, lo
    want = x.reshape(-1, x.shape[-1]).astype("int64") @ w.astype("int64").T
    assert np.abs(want).max() < 2**31
    want = want.reshape(*a_shape[:-1], n)
    lib = _build(a_shape, w)
    for threads in (1, 2):
        np.testing.assert_array_equal(run_graph(lib, {"x": x}, threads), want)
    names = _names(lib)
    assert "vg_acc" in names and "w_vnni" not in names
    assert ("a_vnni" in names) == (a_shape[-1] % 2 != 0)
    lib = _build(a_shape, w, const_weight=False, epilogue=True)
    np.testing.assert_array_equal(run_graph(lib, {"x": x, "w": w}), want * 0.5)
    assert {"vg_acc", "w_vnni"} <= _names(lib)


def test_pack_weight_pairs_layout():
    """``[ceil(N/16), ceil(K/2), 16, 2]`` int16, element ``[nb, k2, l, j]`` the weight at
    column ``16*nb + l``, reduction index ``2*k2 + j``; an int8 weight's seen as bytes."""
    rng = np.random.default_rng(2)
    w = rng.integers(-128, 128, (20, 5)).astype("int8")
    p = gemm_vnni.PackWeight(20, 5, True, "int16", "int16")(w)
    assert p.shape == (2, 3, 16, 2) and p.dtype == np.int16
    assert p[1, 1, 3, 1] == w[19, 3] and not p[:, 2, :, 1].any() and not p[1, :, 4:].any()
    b = gemm_vnni.PackWeight(5, 20, False, "int16", "int8")(w)  # ([K, N]: 20 x 5)
    assert b.shape == (1, 10, 16, 4) and b.dtype == np.int8
    assert b.view("int16")[0, 3, 4, 1] == w[7, 4]
