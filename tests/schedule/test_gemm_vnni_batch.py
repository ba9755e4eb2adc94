"""``gemm_vnni`` on ``batch_matmul``: uint8 rows times int8 columns of two activations per batch
(a quantized transformer's Q @ K^T and P @ V), summed in int32 on ``vpdpbusd``. Exact against
numpy's int64 products with B ``[.., N, K]`` (transposed) or ``[.., K, N]``, ragged sizes (K
not a multiple of 4: rows copied with zero bytes and B packed byte by byte; N not of 16), a
fused float32 epilogue reading per-row and per-column sums (the zero points' shares), a
constant B (prepacked at build time, batch by batch), two threads, and Relax's 4-D matmul.
Where the host has no VNNI the same graphs run on the float GEMM, as exact."""

import numpy as np
import pytest
from conv_reference import run_graph

import minitvm as tvm
from minitvm import relax, relay
from minitvm.runtime import jit
from minitvm.schedule import conv_vnni, gemm_vnni
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

needs_vnni = pytest.mark.skipif(not conv_vnni.available(),
                                reason="the host has no AVX-512 VNNI (vpdpbusd)")


def _build(a_shape, b_shape, transpose_b: bool, const_b=None, epilogue=False):
    a = relay.var("a", shape=a_shape, dtype="uint8")
    b = relay.const(const_b) if const_b is not None else \
        relay.var("b", shape=b_shape, dtype="int8")
    y = relay.nn.batch_matmul(a, b, out_dtype="int32", transpose_b=transpose_b)
    if epilogue:  # (the importer's: zero points times the row and column sums, scaled)
        rows = relay.sum(relay.cast(a, "int32"), axis=[2], keepdims=True)
        cols = relay.sum(relay.cast(b, "int32"), axis=[2 if transpose_b else 1],
                         keepdims=True)
        if transpose_b:
            cols = relay.transpose(cols, (0, 2, 1))
        y = relay.subtract(y, relay.multiply(rows, relay.const(np.int32(-3))))
        y = relay.subtract(y, relay.multiply(cols, relay.const(np.int32(5))))
        y = relay.multiply(relay.cast(y, "float32"), relay.const(np.float32(0.25)))
    params = [a] if const_b is not None else [a, b]
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")


def _want(a, b, transpose_b: bool, epilogue: bool):
    bt = b.transpose(0, 2, 1) if transpose_b else b
    want = a.astype("int64") @ bt.astype("int64")
    if epilogue:
        rows = a.astype("int64").sum(axis=2, keepdims=True)
        cols = bt.astype("int64").sum(axis=1, keepdims=True)
        want = ((want + 3 * rows - 5 * cols) * 0.25).astype("float32")
    return want


def _kernel(lib):
    (k,) = [k for name, k in lib.get_lib().kernels.items() if "batch_matmul" in name]
    return k


def _names(lib) -> set[str]:
    return {s.buffer.name for s in walk_stmts(_kernel(lib).prim_func.body)
            if isinstance(s, S.DeclBuffer)}


CASES = [  # (batch, M, K, N)
    (4, 128, 64, 128),  # the encoder's Q @ K^T (4 heads of 64)
    (4, 128, 128, 64),  # and its P @ V
    (3, 7, 13, 21),     # every size ragged: K of 13 (rows copied, B packed by bytes)
    (2, 5, 8, 33),      # N past two vectors
    (1, 1, 4, 16),      # one row, one word, one vector
]


@pytest.mark.parametrize("batch, m, k, n", CASES)
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("epilogue", [False, True])
def test_vnni_batch_matmul_is_exact(batch, m, k, n, transpose_b, epilogue):
    rng = np.random.default_rng(batch * 100 + k + n)
    b_shape = (batch, n, k) if transpose_b else (batch, k, n)
    a = rng.integers(0, 256, (batch, m, k)).astype("uint8")
    b = rng.integers(-128, 128, b_shape).astype("int8")
    a.reshape(-1)[0], b.reshape(-1)[0] = 255, -128  # (the extremes)
    lib = _build(a.shape, b_shape, transpose_b, epilogue=epilogue)
    want = _want(a, b, transpose_b, epilogue)
    for threads in (1, 2):
        got = run_graph(lib, {"a": a, "b": b}, threads)
        np.testing.assert_array_equal(got, want.astype(got.dtype))
    if conv_vnni.available():  # each batch's B packed into a temporary by the kernel
        assert {"vg_acc", "w_vnni"} <= _names(lib)
        assert ("a_vnni" in _names(lib)) == (k % 4 != 0)
        assert "batch_matmul" not in _names(lib)  # (the epilogue applied in the stores)


def test_constant_b_is_prepacked_batch_by_batch():
    """A constant B: ``PackWeight`` packs each batch at build time, stacked
    ``[batch, ceil(N/16), ceil(K/4), 16, 4]``; the kernel packs nothing."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (3, 9, 20)).astype("uint8")
    b = rng.integers(-128, 128, (3, 20, 24)).astype("int8")
    lib = _build(a.shape, b.shape, False, const_b=b)
    np.testing.assert_array_equal(run_graph(lib, {"a": a}), _want(a, b, False, False))
    if conv_vnni.available():
        assert "vg_acc" in _names(lib) and "w_vnni" not in _names(lib)
        prim = _kernel(lib).prim_func
        shapes = [tuple(int(v) for v in prim.buffer_map[p].shape) for p in prim.params]
        assert (3, 2, 5, 16, 4) in shapes
    packed = gemm_vnni.PackWeight(24, 20, False)(b)
    np.testing.assert_array_equal(packed[1], gemm_vnni.PackWeight(24, 20, False)(b[1]))


def test_relax_4d_matmul_is_exact():
    """Relax's matmul of two 4-D activations (raised to ``batch_matmul``: the batch axes
    flatten)."""
    from minitvm.relax import op as R

    rng = np.random.default_rng(9)
    a_shape, b_shape = (1, 3, 10, 12), (1, 3, 12, 20)
    x = relax.Var("x", relax.TensorStructInfo(a_shape, "uint8"))
    w = relax.Var("w", relax.TensorStructInfo(b_shape, "int8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(R.matmul(x, w, out_dtype="int32"))
            z = bb.emit_output(R.multiply(R.astype(y, "float32"), relax.const(np.float32(2))))
        bb.emit_func_output(z)
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(bb.get(), "llvm")
    av = rng.integers(0, 256, a_shape).astype("uint8")
    bv = rng.integers(-128, 128, b_shape).astype("int8")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(av), tvm.nd.array(bv))
    np.testing.assert_array_equal(got.numpy(), (av.astype("int64") @ bv.astype("int64") * 2)
                                  .astype("float32"))
    if conv_vnni.available():
        assert any("vg_acc" in str(rec.prim_func) for rec, _ in ex.kernels.values())


def test_broadcast_batch_stays_off_vnni():
    """A batch of one broadcast against another (one B for every batch) is not this
    schedule's: the float GEMM, exact."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 256, (3, 4, 8)).astype("uint8")
    b = rng.integers(-128, 128, (1, 8, 16)).astype("int8")
    av = relay.var("a", shape=a.shape, dtype="uint8")
    bv = relay.var("b", shape=b.shape, dtype="int8")
    y = relay.nn.batch_matmul(av, bv, out_dtype="int32", transpose_b=False)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([av, bv], y)), target="llvm")
    np.testing.assert_array_equal(run_graph(lib, {"a": a, "b": b}),
                                  a.astype("int64") @ b.astype("int64"))
    assert "vg_acc" not in _names(lib)


@needs_vnni
def test_machine_code_multiplies_with_vpdpbusd():
    """The K loop of the encoder's P @ V tile: ``vpdpbusd`` on zmm registers."""
    lib = _build((4, 128, 128), (4, 128, 64), False)
    k = _kernel(lib)
    asm = jit.assembly(k.ir, getattr(k.compiled, "opt", 3))
    inner = max((b for b in asm.split("\n\t.p2align") if "vpdpbusd" in b),
                key=lambda b: b.count("vpdpbusd"))
    assert inner.count("vpdpbusd") >= 16
    assert all("zmm" in line for line in inner.split("\n") if "vpdpbusd" in line)


def test_without_vnni_the_float_gemm_stays_exact(monkeypatch):
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (2, 7, 13)).astype("uint8")
    b = rng.integers(-128, 128, (2, 21, 13)).astype("int8")
    lib = _build(a.shape, b.shape, True)
    np.testing.assert_array_equal(run_graph(lib, {"a": a, "b": b}),
                                  _want(a, b, True, False))
    assert "vg_acc" not in _names(lib)
