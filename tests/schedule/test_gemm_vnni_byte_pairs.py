"""``gemm_vnni`` on an AVX2 host without VNNI: uint8 rows and an int8 weight run as int16 pairs
(``conv_vnni.BYTE_PAIRS``: the bytes zero-extended as the rows are copied, the weight
sign-extended as it is packed, ``vpmaddwd``), exactly numpy's int64 product at ragged sizes,
with a fused requantizing epilogue and at two threads; on AVX-512 the bytes stay ``BYTES``
(``vpdpbusd``). The tile is one 16-lane vector x 6 rows (12 ymm accumulators: no spills)."""

import numpy as np
import pytest
from conv_reference import requantize_uint8, run_graph
from schedule_isa import force_isa

import minitvm as tvm
from minitvm import relay
from minitvm.frontend_common import onnx_quant
from minitvm.runtime import jit
from minitvm.schedule import conv_vnni, gemm_vnni
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

pytestmark = pytest.mark.skipif(not jit.host_has("avx2"), reason="the host has no AVX2")


@pytest.fixture
def avx2(monkeypatch):
    """Schedules made as on an AVX2 host without VNNI."""
    force_isa(monkeypatch, "avx2")
    monkeypatch.setattr(conv_vnni, "available", lambda: False)


def _build(a_shape, w, const_weight=True):
    x = relay.var("x", shape=a_shape, dtype="uint8")
    wv = relay.const(w) if const_weight else relay.var("w", shape=w.shape, dtype="int8")
    corr = np.arange(w.shape[0], dtype="int32") * 100  # (a zero-point correction, a scale)
    y = relay.multiply(relay.cast(relay.subtract(relay.nn.dense(x, wv, out_dtype="int32"),
                                                 relay.const(corr)), "float32"),
                       relay.const(np.float32(0.5)))
    params = [x] if const_weight else [x, wv]
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(params, requantize_uint8(y))),
                           target="llvm")


def _want(x, w):
    want = x.reshape(-1, x.shape[-1]).astype("int64") @ w.astype("int64").T
    want = ((want.reshape(*x.shape[:-1], w.shape[0]) - np.arange(w.shape[0]) * 100) * 0.5)
    return np.clip(np.round(want.astype("float32") * np.float32(1 / 4096)) + 100, 0,
                   255).astype("uint8")


def _kernel(lib):
    (k,) = [k for name, k in lib.get_lib().kernels.items() if "dense" in name]
    return k


def _names(lib) -> set[str]:
    return {s.buffer.name for s in walk_stmts(_kernel(lib).prim_func.body)
            if isinstance(s, S.DeclBuffer)}


def test_words_by_isa():
    """uint8 rows are int16 pairs on AVX2 without VNNI (and the importers then take the
    integer product), bytes on AVX-512; int16 rows are ``PAIRS`` on both."""
    w = np.ones((4, 4), "int8")
    for isa, words in (("avx2", conv_vnni.BYTE_PAIRS), ("avx512", conv_vnni.BYTES)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(conv_vnni, "available", lambda: False)
            force_isa(mp, isa)
            assert conv_vnni.row_words("uint8") is words
            assert conv_vnni.row_words("int16") is conv_vnni.PAIRS
            assert onnx_quant.vnni_matmul("uint8", None, True, "int8", w, None) == \
                (isa == "avx2")


@pytest.mark.parametrize("a_shape, n", [((7, 13), 21), ((16, 64), 256), ((2, 5, 32), 96),
                                        ((3, 8), 7)])
def test_byte_pairs_dense_is_exact(avx2, a_shape, n):
    rng = np.random.default_rng(n + a_shape[-1])
    w = rng.integers(-128, 128, (n, a_shape[-1])).astype("int8")
    x = rng.integers(0, 256, a_shape).astype("uint8")
    x.reshape(-1)[:2], w[0, :2] = 255, -128  # (the extremes: a pair of -32640 products)
    lib = _build(a_shape, w)
    for threads in (1, 2):
        np.testing.assert_array_equal(run_graph(lib, {"x": x}, threads), _want(x, w))
    names = _names(lib)
    assert {"vg_acc", "a_vnni"} <= names and "w_vnni" not in names
    prim = _kernel(lib).prim_func
    shapes = [tuple(int(v) for v in prim.buffer_map[p].shape) for p in prim.params]
    assert (-(-n // 16), -(-a_shape[-1] // 2), 16, 2) in shapes  # (int8 pairs)
    packs = [st for st in walk_stmts(prim.body) if isinstance(st, S.For) and
             st.kind == S.ForKind.VECTORIZED and isinstance(st.body, S.BufferStore) and
             st.body.buffer.name == "a_vnni"]  # (the rows copied in vectors of words)
    assert bool(packs) == (a_shape[-1] % (2 * gemm_vnni.PACK_LANES) == 0)
    lib = _build(a_shape, w, const_weight=False)  # (the kernel packs the weight)
    np.testing.assert_array_equal(run_graph(lib, {"x": x, "w": w}), _want(x, w))
    assert {"vg_acc", "w_vnni"} <= _names(lib)


def test_pack_weight_sign_extends():
    """``PackWeight`` of BYTE_PAIRS: ``[ceil(N/16), ceil(K/2), 16, 2]`` int8 (sign-extended
    as the dot loads them), element ``[nb, c, l, j]`` the weight at column ``16*nb + l``,
    reduction ``2*c + j``."""
    w = np.random.default_rng(1).integers(-128, 128, (21, 5)).astype("int8")
    p = gemm_vnni.PackWeight(21, 5, True, conv_vnni.kind_name(conv_vnni.BYTE_PAIRS))(w)
    assert p.shape == (2, 3, 16, 2) and p.dtype == np.int8
    q = p
    assert q[1, 2, 4, 0] == w[20, 4] and q[0, 1, 3, 1] == w[3, 3]
    assert not q[1, :, 5:].any() and not q[:, 2, :, 1].any()


@pytest.mark.skipif(vector_isa() != "avx2", reason="the host's code is not AVX2's")
def test_machine_code_multiplies_with_vpmaddwd(avx2):
    """The K loop of a 16 x 64 x 256 product: 12 ``vpmaddwd`` (6 rows x 2 ymm halves of the
    vector) on ymm registers; the stack read only for the rows' words (``a_vnni``), which
    ``vpbroadcastd`` reads: no accumulator spilled."""
    lib = _build((16, 64), np.random.default_rng(1).integers(-128, 128, (256, 64)).astype(
        "int8"))
    k = _kernel(lib)
    asm = jit.assembly(k.ir, getattr(k.compiled, "opt", 3))
    loops = [b for b in asm.split("\n\t.p2align") if "vpmaddwd" in b]
    assert loops, "no vpmaddwd in the kernel"
    inner = max(loops, key=lambda b: b.count("vpmaddwd"))
    assert inner.count("vpmaddwd") == 12
    assert all("ymm" in line for line in inner.split("\n") if "vpmaddwd" in line)
    body = inner.split("vpmaddwd", 1)[1].rsplit("vpmaddwd", 1)[0].split("\n")
    assert all("vpbroadcastd" in line for line in body if "rsp" in line)
