"""``gemm_vnni``: dense / matmul of uint8 rows and an int8 weight summed in int32 (``vpdpbusd``
on AVX-512 VNNI). The results equal numpy's int64 products exactly at ragged sizes (M not a
multiple of the row tile, K not of 4: the rows copied with zero bytes, N not of 16: the last
column tile stores fewer columns), a 3-D input, 16-, 32- and 64-column tiles, a fused float32
or requantizing uint8 epilogue, a weight passed at run time (packed by the kernel), two
threads, and Relax's matmul with B transposed or not. The kernel's machine code multiplies with
``vpdpbusd``. Where the host has no VNNI (``conv_vnni.available`` False) the same graphs run on
the other schedules, as exact."""

import numpy as np
import pytest
from conv_reference import requantize_uint8, run_graph

import minitvm as tvm
from minitvm import relax, relay
from minitvm.runtime import jit
from minitvm.schedule import conv_vnni, gemm_vnni
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

needs_vnni = pytest.mark.skipif(not conv_vnni.available(),
                                reason="the host has no AVX-512 VNNI (vpdpbusd)")


def _build(a_shape, w, const_weight=True, epilogue=None):
    x = relay.var("x", shape=a_shape, dtype="uint8")
    wv = relay.const(w) if const_weight else relay.var("w", shape=w.shape, dtype="int8")
    y = relay.nn.dense(x, wv, out_dtype="int32")
    if epilogue:  # (a zero-point correction and a scale, as the importer's)
        corr = np.arange(w.shape[0], dtype="int32") * 100
        y = relay.multiply(relay.cast(relay.subtract(y, relay.const(corr)), "float32"),
                           relay.const(np.float32(0.5)))
    if epilogue == "uint8":  # (and requantized: round, add a zero point, saturate)
        y = requantize_uint8(y)
    params = [x] if const_weight else [x, wv]
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")


def _want(x, w, epilogue):
    want = x.reshape(-1, x.shape[-1]).astype("int64") @ w.astype("int64").T
    want = want.reshape(*x.shape[:-1], w.shape[0])
    if epilogue:
        want = ((want - np.arange(w.shape[0]) * 100) * 0.5).astype("float32")
    if epilogue == "uint8":
        want = np.clip(np.round(want * np.float32(1 / 4096)) + 100, 0, 255).astype("uint8")
    return want


def _kernel(lib):
    (k,) = [k for name, k in lib.get_lib().kernels.items() if "dense" in name]
    return k


def _names(lib) -> set[str]:
    return {s.buffer.name for s in walk_stmts(_kernel(lib).prim_func.body)
            if isinstance(s, S.DeclBuffer)}


CASES = [  # (A's shape, N, K is A's last)
    ((16, 64), 256),    # the MLP's first product: 64-column tiles
    ((16, 256), 64),    # and its second
    ((7, 13), 21),      # every size ragged: rows of 7, K of 13, N of 21 (a 5-column tail)
    ((1, 4), 16),       # one row, one word, one vector
    ((33, 100), 48),    # 16-column tiles (3 blocks of N), rows in tiles of 7 and 6
    ((2, 5, 32), 96),   # a 3-D input; 32-column tiles
    ((3, 8), 7),        # fewer columns than a vector
    ((64, 512), 128),   # large enough for the thread pool
]


@pytest.mark.parametrize("a_shape, n", CASES)
@pytest.mark.parametrize("epilogue", [None, "float32", "uint8"])
def test_vnni_dense_is_exact(a_shape, n, epilogue):
    rng = np.random.default_rng(n + a_shape[-1])
    w = rng.integers(-128, 128, (n, a_shape[-1])).astype("int8")
    x = rng.integers(0, 256, a_shape).astype("uint8")
    x.reshape(-1)[0], w[0, 0] = 255, -128  # (the extremes)
    lib = _build(a_shape, w, epilogue=epilogue)
    want = _want(x, w, epilogue)
    for threads in (1, 2):
        got = run_graph(lib, {"x": x}, threads)
        np.testing.assert_array_equal(got, want.astype(got.dtype))
    if conv_vnni.available():  # the schedule took it, its weight packed as int8 at build time
        assert "vg_acc" in _names(lib) and "w_vnni" not in _names(lib)
        assert "dense" not in _names(lib)  # (the epilogue applied in the tile's stores)
        assert ("a_vnni" in _names(lib)) == (a_shape[-1] % 4 != 0)
        prim = _kernel(lib).prim_func
        shapes = [tuple(int(v) for v in prim.buffer_map[p].shape) for p in prim.params]
        assert (-(-n // 16), -(-a_shape[-1] // 4), 16, 4) in shapes
        macs = int(np.prod(a_shape)) * n
        parallel = any(isinstance(st, S.For) and st.kind == S.ForKind.PARALLEL
                       for st in walk_stmts(prim.body))
        assert parallel == (macs >= gemm_vnni.PARALLEL_MIN_MACS and n > 64)  # (2+ tiles)


@pytest.mark.parametrize("a_shape, n", [((7, 13), 21), ((16, 64), 256)])
def test_vnni_dense_weight_at_run_time(a_shape, n):
    """A weight that is no constant: the kernel packs it (``w_vnni``) each call."""
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (n, a_shape[-1])).astype("int8")
    x = rng.integers(0, 256, a_shape).astype("uint8")
    lib = _build(a_shape, w, const_weight=False)
    np.testing.assert_array_equal(run_graph(lib, {"x": x, "w": w}), _want(x, w, None))
    if conv_vnni.available():
        assert {"vg_acc", "w_vnni"} <= _names(lib)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_relax_matmul_is_exact(transpose_b):
    """Relax's matmul (raised to the ``matmul`` tag): B ``[K, N]``, or ``[N, K]`` read
    transposed."""
    from minitvm.relax import op as R

    rng = np.random.default_rng(9)
    a_shape, n = (2, 6, 44), 40
    w = rng.integers(-128, 128, (a_shape[-1], n)).astype("int8")
    x = relax.Var("x", relax.TensorStructInfo(a_shape, "uint8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            b = R.permute_dims(relax.const(w.T.copy()), [1, 0]) if transpose_b else \
                relax.const(w)
            y = bb.emit(R.matmul(x, b, out_dtype="int32"))
            z = bb.emit_output(R.multiply(R.astype(y, "float32"), relax.const(np.float32(2))))
        bb.emit_func_output(z)
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(bb.get(), "llvm")
    xv = rng.integers(0, 256, a_shape).astype("uint8")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(xv)).numpy()
    np.testing.assert_array_equal(got, (xv.astype("int64") @ w.astype("int64") * 2)
                                  .astype("float32"))
    if conv_vnni.available():
        assert any("vg_acc" in str(rec.prim_func) for rec, _ in ex.kernels.values())


@needs_vnni
def test_machine_code_multiplies_with_vpdpbusd():
    """The K loop of a 16 x 64 x 256 product: 16 ``vpdpbusd`` (4 rows x 4 vectors) on zmm
    registers, no stack access."""
    rng = np.random.default_rng(1)
    lib = _build((16, 64), rng.integers(-128, 128, (256, 64)).astype("int8"), epilogue="uint8")
    k = _kernel(lib)
    asm = jit.assembly(k.ir, getattr(k.compiled, "opt", 3))
    loops = [b for b in asm.split("\n\t.p2align") if "vpdpbusd" in b]
    assert loops, "no vpdpbusd in the kernel"
    inner = max(loops, key=lambda b: b.count("vpdpbusd"))
    assert inner.count("vpdpbusd") == 16
    assert all("zmm" in line for line in inner.split("\n") if "vpdpbusd" in line)
    assert "rsp" not in inner.split("vpdpbusd", 1)[1].rsplit("vpdpbusd", 1)[0]


def test_without_vnni_other_schedules_stay_exact(monkeypatch):
    """A host without VNNI (``conv_vnni.available`` False) nor int16 pairs (an AVX2 host runs
    the bytes as int16 pairs: ``test_gemm_vnni_byte_pairs``): the generic schedules, as
    exact."""
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)
    rng = np.random.default_rng(2)
    w = rng.integers(-128, 128, (21, 13)).astype("int8")
    x = rng.integers(0, 256, (7, 13)).astype("uint8")
    lib = _build((7, 13), w, epilogue="uint8")
    np.testing.assert_array_equal(run_graph(lib, {"x": x}), _want(x, w, "uint8"))
    assert "vg_acc" not in _names(lib)


def test_pack_weight_layout():
    """``PackWeight``: ``[ceil(N/16), ceil(K/4), 16, 4]``, element ``[nb, c, l, j]`` the weight
    at column ``16*nb + l``, reduction index ``4*c + j`` (zero past N and K)."""
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, (21, 6)).astype("int8")  # [N, K]
    p = gemm_vnni.PackWeight(21, 6, True)(w)
    assert p.shape == (2, 2, 16, 4) and p.dtype == np.int8
    assert p[1, 1, 4, 1] == w[20, 5]
    assert not p[1, :, 5:].any() and not p[:, 1, :, 2:].any()
    np.testing.assert_array_equal(gemm_vnni.PackWeight(21, 6, False)(w.T.copy()), p)


def test_other_dtypes_stay_off_vnni():
    """``vpdpbusd`` multiplies unsigned by signed bytes: a uint8 weight (or int8 rows) is
    another schedule's."""
    rng = np.random.default_rng(2)
    for a_dt, w_dt in (("uint8", "uint8"), ("int8", "int8")):
        lo = 0 if w_dt == "uint8" else -128
        w = rng.integers(lo, lo + 256, (32, 16)).astype(w_dt)
        xv = relay.var("x", shape=(8, 16), dtype=a_dt)
        y = relay.nn.dense(xv, relay.const(w), out_dtype="int32")
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([xv], y)), target="llvm")
        lo = 0 if a_dt == "uint8" else -128
        x = rng.integers(lo, lo + 256, (8, 16)).astype(a_dt)
        np.testing.assert_array_equal(run_graph(lib, {"x": x}),
                                      x.astype("int64") @ w.astype("int64").T)
        assert "vg_acc" not in _names(lib)
