"""float32 erf's two inline forms (codegen/llvm/vmath._erf): the rational x P(x^2) / Q(x^2) of
AVX2 hosts and the two-branch form (polynomial below 1, exp and erfc's series above) of AVX-512
hosts, each built on any host by naming the ISA: IR shape, accuracy, special values, and a
GELU fused into a dense's epilogue against numpy."""

from math import erf

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.backend import kernel_cache
from minitvm.codegen.build import clear_cache as clear_code_cache
from minitvm.codegen.llvm import vmath

REF = np.vectorize(erf)
MAX_REL = 4e-7  # as tests/codegen/test_vmath.py (the rational form: 3.3e-7 on 3M points)


@pytest.fixture(params=["avx2", "avx512"])
def isa(request, monkeypatch):
    """Kernels built with ``isa``'s erf form (the code generator keeps the host's features).
    The caches key on the source function and the host, not on the patch: emptied around the
    test, the on-disk one off."""
    monkeypatch.setattr(vmath, "_isa", lambda: request.param)
    monkeypatch.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    kernel_cache.clear_cache()
    clear_code_cache()
    yield request.param
    kernel_cache.clear_cache()
    clear_code_cache()


def _erf_kernel(n: int, lanes: int):
    """``B[i] = erf(A[i])``: vector chunks of ``lanes`` plus a scalar tail."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    io, ii, t = tir.Var("io", "int32"), tir.Var("ii", "int32"), tir.Var("t", "int32")
    parts = []
    if n // lanes:
        idx = io * lanes + ii
        parts.append(tir.For(io, 0, n // lanes, tir.ForKind.SERIAL, tir.For(
            ii, 0, lanes, tir.ForKind.VECTORIZED, tir.BufferStore(B, tir.erf(A[idx]), [idx]))))
    if n % lanes:
        parts.append(tir.For(t, n - n % lanes, n % lanes, tir.ForKind.SERIAL,
                             tir.BufferStore(B, tir.erf(A[t]), [t])))
    f = tir.PrimFunc([A, B], tir.SeqStmt(parts), attrs={"tir.noalias": True})
    return codegen.build(f, auto_parallel=False)


def _erf(values, lanes: int = 8) -> np.ndarray:
    x = np.asarray(values, dtype="float32")
    out = np.empty_like(x)
    _erf_kernel(len(x), lanes)["main"](x, out)
    return out


def test_ir_shape(isa):
    src = _erf_kernel(64, 8).get_source()
    vec = [ln for ln in src.splitlines() if "<8 x float>" in ln]
    assert vec and "@erff" not in src and "@llvm.exp." not in src
    divs = [ln for ln in vec if " fdiv " in ln]
    assert len(divs) == 1  # P / Q; or 1 / |x| for erfc's series
    fmas = src.count("call <8 x float> @\"llvm.fma.v8f32\"")
    if isa == "avx2":  # no exp (no rounding to an integer exponent): P's and Q's 6 + 4 FMAs
        assert "llvm.rint" not in src and fmas == 10
    else:  # x P(x^2) below 1, erfc's series and exp(-x^2) above: both computed
        assert "llvm.rint" in src and fmas > 20


@pytest.mark.parametrize("n,lanes", [(4099, 8), (37, 16), (5, 4)])
def test_accuracy(isa, n, lanes, rng):
    x = rng.uniform(-6, 6, n).astype("float32")
    out = _erf(x, lanes)
    ref = REF(x.astype("float64"))
    assert float(np.max(np.abs(out - ref) / np.abs(ref))) < MAX_REL


def test_near_the_clamp_and_small(isa):
    # around the rational form's clamp at 3.92 (both sides), and tiny / denormal inputs
    x = np.float32(np.concatenate([np.linspace(3.5, 4.5, 4001), -np.linspace(3.5, 4.5, 401),
                                   [1e-20, -1e-20, 1e-38, 3e-39, 1e-3, 0.5, 1.0, 2.0]]))
    out = _erf(x)
    ref = REF(x.astype("float64"))
    assert np.all(np.abs(out) <= 1.0)
    assert float(np.max(np.abs(out - ref) / np.abs(ref))) < MAX_REL


def test_special_values(isa):
    inf = np.inf
    out = _erf([inf, -inf, 50.0, -50.0, np.nan, 0.0, -0.0, 3.92])
    assert out[0] == 1 and out[1] == -1 and out[2] == 1 and out[3] == -1
    assert np.isnan(out[4])
    assert out[5] == 0 and not np.signbit(out[5])
    assert out[6] == 0 and np.signbit(out[6])
    np.testing.assert_allclose(out[7], erf(3.92), rtol=1e-7)


def test_gelu_in_dense_epilogue(isa, rng):
    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    x = rng.standard_normal((12, 64)).astype("float32")
    w = (rng.standard_normal((96, 64)) / 4).astype("float32")
    b = rng.standard_normal(96).astype("float32")
    v = relay.var("x", shape=x.shape)
    y = relay.nn.bias_add(relay.nn.dense(v, relay.const(w)), relay.const(b))
    gelu = y * relay.const(0.5) * (relay.const(1.0) + relay.erf(
        y * relay.const(0.7071067811865476)))
    mod = tvm.IRModule.from_expr(relay.Function([v], gelu))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", x)
    g.run()
    pre = x.astype("float64") @ w.T.astype("float64") + b
    want = pre * 0.5 * (1 + REF(pre / np.sqrt(2)))
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)
