"""The packed GEMM's default register tile per vector ISA: it fits the register file, the knob
spaces default to it, and Relay dense / matmul / batch_matmul compute correctly with either
ISA's tile forced, on odd M, N and K."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend.te_compiler import build_te
from minitvm.relay.transform.pipeline import optimize
from minitvm.schedule import LoweringOptions, gemm, gemm_kernel
from minitvm.schedule.common import vector_isa
from minitvm.schedule.knobs import space_of
from minitvm.transform.context import PassContext
from minitvm.tune.task import _primitive_calls

# float32 lanes and vector registers of each ISA
REGS = {"avx512": (16, 32), "avx2": (8, 16)}
ISAS = sorted(gemm_kernel.TILES)


@pytest.fixture
def isa(request, monkeypatch):
    """Force the vector ISA the GEMM schedule sizes its default tile by."""
    monkeypatch.setattr(gemm_kernel, "vector_isa", lambda: request.param)
    return request.param


def _build_run(func, inputs):
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.use_blas": False}):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**inputs)
    return lib, m.get_output(0).numpy()


def _anchor(func):
    mod = tvm.IRModule.from_expr(func)
    with PassContext(opt_level=3):
        opt, _ = optimize(mod, "llvm", None)
    _, outputs = build_te(_primitive_calls(opt["main"])[0].op)[0::2]
    return outputs[0]


def test_every_tile_fits_its_register_file():
    for name, (mr, nr) in gemm_kernel.TILES.items():
        lanes, regs = REGS[name]
        assert nr % lanes == 0, name
        # accumulators + the B vectors of one step + the broadcast A value
        assert mr * nr // lanes + nr // lanes + 1 <= regs, (name, mr, nr)
    # 24 zmm accumulators for two 512-bit FMA ports (27 of 32 registers)
    assert gemm_kernel.TILES["avx512"] == (12, 32)


def test_host_default_follows_the_vector_isa():
    from minitvm.schedule.common import vector_isa

    assert gemm_kernel.default_tile() == gemm_kernel.TILES[vector_isa()]


@pytest.mark.parametrize("isa", ISAS, indirect=True)
def test_default_knobs_and_widths_follow_the_isa(isa):
    mr, nr = gemm_kernel.TILES[isa]
    assert gemm_kernel.default_tile() == (mr, nr)
    assert gemm._dense_nr(4 * nr + 3) == nr
    assert gemm._dense_nr(10) == max(16, nr // 2)
    assert gemm._direct_nr(3 * gemm_kernel.direct_widths()[0]) == gemm_kernel.direct_widths()[0]
    # (an N the full width pads by no more than the half width: HALF_WIDTH_PAD_SAVING)
    x = relay.var("x", shape=(29, 31))
    w = relay.const(np.ones((4 * nr + 3, 31), "float32"))
    space = space_of(_anchor(relay.Function([x], relay.nn.dense(x, w))), LoweringOptions())[1]
    assert (space.default()["mr"], space.default()["nr"]) == (mr, nr)
    assert mr in space.values("mr") and nr in space.values("nr")


@pytest.mark.parametrize("isa", ISAS, indirect=True)
@pytest.mark.parametrize("m", [2, 29, 67])
def test_dense_with_the_isa_tile(isa, m):
    mr, nr = gemm_kernel.TILES[isa]
    n, k = 4 * nr + 5, 33  # full panels and a partial one; rows leave a remainder of mr
    rng = np.random.default_rng(m)
    x = relay.var("x", shape=(m, k))
    wv = rng.standard_normal((n, k)).astype("float32")
    bv = rng.standard_normal(n).astype("float32")
    xv = rng.standard_normal((m, k)).astype("float32")
    want = np.maximum(xv @ wv.T + bv, 0)
    body = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, relay.const(wv)), relay.const(bv)))
    lib, got = _build_run(relay.Function([x], body), {"x": xv})
    if m * n * k >= gemm.MIN_GEMM_MACS:  # the packed GEMM: its weight prepacked at build time
        packed = [v.numpy().shape for v in lib.get_params().values() if v.numpy().ndim == 3]
        assert packed == [(-(-n // nr), k, nr)]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # a weight given at run time: packed per call
    wvar = relay.var("w", shape=(n, k))
    _, got = _build_run(relay.Function([x, wvar], relay.nn.dense(x, wvar)), {"x": xv, "w": wv})
    np.testing.assert_allclose(got, xv @ wv.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("isa", ISAS, indirect=True)
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_and_batch_matmul_with_the_isa_tile(isa, transpose_b):
    rng = np.random.default_rng(7)
    m, n, k = 45, 41, 27
    a = relay.var("a", shape=(m, k))
    bv = rng.standard_normal((n, k) if transpose_b else (k, n)).astype("float32")
    av = rng.standard_normal((m, k)).astype("float32")
    body = relay.nn.matmul(a, relay.const(bv), transpose_b=transpose_b)
    _, got = _build_run(relay.Function([a], body), {"a": av})
    np.testing.assert_allclose(got, av @ (bv.T if transpose_b else bv), rtol=1e-4, atol=1e-4)
    batch = 3
    a3 = relay.var("a", shape=(batch, m, k))
    b3 = relay.var("b", shape=(batch, n, k) if transpose_b else (batch, k, n))
    a3v = rng.standard_normal((batch, m, k)).astype("float32")
    b3v = rng.standard_normal((batch, n, k) if transpose_b else (batch, k, n)).astype("float32")
    body = relay.nn.batch_matmul(a3, b3, transpose_b=transpose_b)
    _, got = _build_run(relay.Function([a3, b3], body), {"a": a3v, "b": b3v})
    want = a3v @ (np.swapaxes(b3v, 1, 2) if transpose_b else b3v)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tile", sorted(set(gemm_kernel.TILES.values())))
@pytest.mark.parametrize("M,N,K", [(1, 37, 29), (13, 17, 5), (31, 67, 43)])
def test_kernel_with_each_tile_on_odd_shapes(tile, M, N, K):
    mr, nr = tile
    rng = np.random.default_rng(M * N)
    a = rng.standard_normal((M, K)).astype("float32")
    w = rng.standard_normal((N, K)).astype("float32")
    bias = rng.standard_normal(N).astype("float32")
    f = codegen.build(gemm_kernel.gemm(M, N, K, transpose_b=True, bias=True, relu=True, mr=mr,
                                       nr=nr, prepacked_b=True))["gemm"]
    c = np.empty((M, N), "float32")
    f(a, gemm_kernel.pack_b(w, nr, transpose_b=True), bias, c)
    np.testing.assert_allclose(c, np.maximum(a @ w.T + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("isa", ISAS, indirect=True)
def test_default_width_prefers_whole_half_width_panels(isa):
    """A half-width tile that divides N (where the full width does not) is the default: no
    partial last panel, which is packed and stored element by element."""
    _, nr = gemm_kernel.TILES[isa]
    half = max(16, nr // 2)
    assert gemm._dense_nr(2 * nr) == nr
    assert gemm._dense_nr(3 * half) == (half if (3 * half) % nr else nr)
    assert gemm._dense_nr(5 * half + 1) == nr  # neither divides: the full width
    assert gemm._dense_nr(nr * 31 + half) == half
    big = gemm.HALF_WIDTH_MAX_N // nr * nr + half  # past the bound: the full width
    assert gemm._dense_nr(big) == nr
    x = relay.var("x", shape=(9, 20))
    w = relay.const(np.ones((3 * half, 20), "float32"))
    space = space_of(_anchor(relay.Function([x], relay.nn.dense(x, w))), LoweringOptions())[1]
    assert space.default()["nr"] == gemm._dense_nr(3 * half)


@pytest.mark.parametrize("n", [48, 80, 208])
def test_half_width_default_matches_numpy(n):
    """dense and the attention-score batch_matmul (B transposed, additive masks fused) on
    widths that take the half-width tile on AVX-512."""
    rng = np.random.default_rng(n)
    x = relay.var("x", shape=(37, 64))
    wv = rng.standard_normal((n, 64)).astype("float32")
    xv = rng.standard_normal((37, 64)).astype("float32")
    lib, got = _build_run(relay.Function([x], relay.nn.dense(x, relay.const(wv))), {"x": xv})
    nr = gemm._dense_nr(n)
    assert [v.numpy().shape for v in lib.get_params().values()] == [(-(-n // nr), 64, nr)]
    np.testing.assert_allclose(got, xv @ wv.T, rtol=1e-4, atol=1e-4)
    q, k = relay.var("q", shape=(6, 24, 16)), relay.var("k", shape=(6, n, 16))
    m1, m2 = relay.var("m1", shape=(1, 24, n)), relay.var("m2", shape=(6, 1, n))
    body = relay.add(relay.add(relay.nn.batch_matmul(q, k), m1), m2)
    feeds = {"q": rng.standard_normal((6, 24, 16)), "k": rng.standard_normal((6, n, 16)),
             "m1": rng.standard_normal((1, 24, n)), "m2": rng.standard_normal((6, 1, n))}
    feeds = {key: v.astype("float32") for key, v in feeds.items()}
    _, got = _build_run(relay.Function([q, k, m1, m2], body), feeds)
    want = feeds["q"] @ feeds["k"].transpose(0, 2, 1) + feeds["m1"] + feeds["m2"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_half_width_where_the_full_width_pads_far_more():
    """``HALF_WIDTH_PAD_SAVING`` (on for the host's ISA or not): 77 columns pad to 96 in 32-wide
    panels, to 80 in 16-wide ones; 197 pad to 224 or 208, under the saving. A partial panel
    narrowed to its lanes (``NARROW_PARTIAL_PANEL``) computes 64 + 16 = 80 columns at 32 wide:
    no saving, the full width."""
    saving = gemm.HALF_WIDTH_PAD_SAVING[vector_isa()]
    narrowed = gemm_kernel.NARROW_PARTIAL_PANEL[vector_isa()]
    nr = gemm_kernel.default_tile()[1]
    half = max(16, nr // 2)
    assert gemm._dense_nr(197) == nr
    assert gemm._dense_nr(77) == (half if saving and half < nr and not narrowed else nr)
    assert gemm_kernel.computed_width(77, 32) == (80 if narrowed else 96)
    assert gemm_kernel.computed_width(197, 32) == (200 if narrowed else 224)
    assert gemm_kernel.computed_width(64, 32) == 64
