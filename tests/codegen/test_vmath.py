"""Inline float32 exp/log/tanh/erf/sigmoid/sin/cos/asin/acos/atan (codegen/llvm/vmath.py):
accuracy, special values.

Measured maximum relative errors against float64 references (1M-point sweeps, this machine):
exp 1.2e-7, log 8.2e-8, tanh 1.4e-7 (3.3e-7 on AVX2 hosts: its rational form,
tests/codegen/test_vmath_isa_forms.py), erf 1.8e-7 (3.3e-7 on AVX2 hosts: its rational form,
tests/codegen/test_vmath_erf.py), sigmoid 1.9e-7, sin and cos 1.7e-7 on
|x| <= 6000 (2.3e-7 next to their zeros), asin 2.0e-7, acos 1.4e-7 (also next to +-1), atan
1.5e-7; the tests below allow 4e-7.
"""

from math import erf

import numpy as np
import pytest

from minitvm import codegen, tir

REF = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "erf": np.vectorize(erf),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "sin": np.sin, "cos": np.cos,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
}
DOMAIN = {
    "exp": (-103, 88.7), "log": (1e-30, 1e30), "tanh": (-12, 12), "erf": (-6, 6),
    "sigmoid": (-40, 40), "sin": (-6000, 6000), "cos": (-6000, 6000),
    "asin": (-1, 1), "acos": (-1, 1), "atan": (-1e4, 1e4),
}
MAX_REL = 4e-7


def _kernel(name: str, n: int, lanes: int):
    """``B[i] = name(A[i])`` with the loop split in vector chunks of ``lanes`` plus a tail."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    fop = getattr(tir, name)
    io, ii, t = tir.Var("io", "int32"), tir.Var("ii", "int32"), tir.Var("t", "int32")
    nvec = n // lanes
    parts = []
    if nvec:
        idx = io * lanes + ii
        parts.append(tir.For(io, 0, nvec, tir.ForKind.SERIAL, tir.For(
            ii, 0, lanes, tir.ForKind.VECTORIZED, tir.BufferStore(B, fop(A[idx]), [idx]))))
    if n % lanes:
        parts.append(tir.For(t, nvec * lanes, n % lanes, tir.ForKind.SERIAL,
                             tir.BufferStore(B, fop(A[t]), [t])))
    f = tir.PrimFunc([A, B], tir.SeqStmt(parts), attrs={"tir.noalias": True})
    return codegen.build(f, auto_parallel=False)


def _sample(name, n, rng):
    lo, hi = DOMAIN[name]
    if name == "log":
        return np.exp(rng.uniform(np.log(lo), np.log(hi), n)).astype("float32")
    return rng.uniform(lo, hi, n).astype("float32")


def _max_rel(out, x, name):
    ref = REF[name](x.astype("float64"))
    keep = np.abs(ref) > 1e-30
    return float(np.max(np.abs(out[keep] - ref[keep]) / np.abs(ref[keep])))


@pytest.mark.parametrize("name", sorted(REF))
@pytest.mark.parametrize("n,lanes", [(1, 16), (37, 16), (4099, 16), (31, 8), (101, 48)])
def test_accuracy_vector_and_tail(name, n, lanes, rng):
    mod = _kernel(name, n, lanes)
    x = _sample(name, n, rng)
    out = np.empty_like(x)
    mod["main"](x, out)
    assert _max_rel(out, x, name) < MAX_REL


@pytest.mark.parametrize("name", sorted(REF))
def test_no_libm_call_in_vector_code(name):
    src = _kernel(name, 64, 16).get_source()
    assert "<16 x float>" in src
    for libm in ("@expf", "@logf", "@tanhf", "@erff", "@llvm.exp.", "@llvm.log.", "@asinf",
                 "@acosf", "@atanf"):
        assert libm not in src
    if name in ("sin", "cos"):  # libm only on the branch for lanes beyond +-6000
        calls = [ln for ln in src.splitlines() if "call" in ln and f"llvm.{name}." in ln]
        assert len(calls) == 1 and "<16 x float>" in calls[0]


def _run(name, values):
    x = np.array(values, dtype="float32")
    out = np.empty_like(x)
    _kernel(name, len(x), 4)["main"](x, out)
    return out


def test_exp_special_values():
    inf, nan = np.inf, np.nan
    out = _run("exp", [0.0, -0.0, 88.72, 88.73, 1000, -87.5, -100.0, -104.0, -inf, inf, nan, 1])
    assert out[0] == 1 and out[1] == 1
    assert np.isfinite(out[2]) and out[3] == inf and out[4] == inf
    np.testing.assert_allclose(out[5:7], np.exp(np.float64([-87.5, -100.0])), rtol=1e-6,
                               atol=2e-45)  # denormal results keep their leading bits
    assert out[7] == 0 and out[8] == 0 and out[9] == inf and np.isnan(out[10])



@pytest.mark.parametrize("lanes", [4, 8, 16, 48])
def test_exp_underflow_edge_in_mixed_vectors(lanes):
    # lanes below the edge (exp rounds to 0) are zeroed, not computed; next to them the last
    # denormals and normal lanes keep their values, in vector chunks of each width (the
    # zeroing mask of 4, 8 and 16 lanes, 48 as three 16-lane pieces) and the scalar tail
    x = np.float32([-103.97, -103.973, -110.0, 1.5, -3e38, -103.9, -np.inf, -0.5, -87.0, -300.0,
                    -1e30, 2.0, -103.972, np.nan] * 8)[:lanes + 3]
    out = np.empty_like(x)
    _kernel("exp", len(x), lanes)["main"](x, out)
    assert np.isnan(out[np.isnan(x)]).all()
    out, x = out[~np.isnan(x)], x[~np.isnan(x)]
    want = np.exp(x.astype("float64"))
    zero = x < np.float32(-103.97208404541016)
    assert (out[zero] == 0).all() and (out[~zero] > 0).all()
    np.testing.assert_allclose(out[~zero], want[~zero], rtol=1e-6, atol=2e-45)


def test_log_special_values():
    inf, nan = np.inf, np.nan
    x = [1.0, 0.0, -0.0, -1.0, inf, nan, 1e-40, 3e38]
    out = _run("log", x)
    assert out[0] == 0 and out[1] == -inf and out[2] == -inf
    assert np.isnan(out[3]) and out[4] == inf and np.isnan(out[5])
    np.testing.assert_allclose(out[6:], np.log(np.float64(x[6:])), rtol=3e-7)


@pytest.mark.parametrize("name,big", [("tanh", 1.0), ("erf", 1.0), ("sigmoid", 1.0)])
def test_saturating_functions(name, big):
    inf = np.inf
    out = _run(name, [inf, -inf, 50.0, -50.0, np.nan, 0.0, -0.0, 1e-20])
    low = 0.0 if name == "sigmoid" else -big
    assert out[0] == big and out[1] == low
    np.testing.assert_allclose(out[2:4], REF[name](np.float64([50.0, -50.0])), rtol=3e-7)
    assert np.isnan(out[4])
    mid = 0.5 if name == "sigmoid" else 0.0
    assert out[5] == mid and out[6] == mid
    np.testing.assert_allclose(out[7], REF[name](1e-20), rtol=1e-6)


def test_float64_keeps_libm_path(rng):
    A = tir.decl_buffer((5,), "float64", "A")
    B = tir.decl_buffer((5,), "float64", "B")
    i = tir.Var("i", "int32")
    f = tir.PrimFunc([A, B], tir.For(i, 0, 5, 0, tir.BufferStore(B, tir.erf(A[i]), [i])))
    x = rng.uniform(-3, 3, 5)
    out = np.empty_like(x)
    codegen.build(f)["main"](x, out)
    np.testing.assert_allclose(out, REF["erf"](x), rtol=1e-14)


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_near_their_zeros_and_large(name):
    """Relative accuracy where the result is tiny (x next to a multiple of pi, or pi/2 for cos:
    the reduction x - n pi/2 must not lose the last bits), and lanes beyond the reduction's
    range (+-6000) and the special values going to libm."""
    k = np.arange(-1900, 1900) + (0.5 if name == "cos" else 0.0)
    x = np.float32(k * np.pi)
    x = np.concatenate([x, np.nextafter(x, np.float32(np.inf))]).astype("float32")
    out = np.empty_like(x)
    _kernel(name, len(x), 16)["main"](x, out)
    assert _max_rel(out, x, name) < MAX_REL
    big = [7000.5, -1e5, 3e38, 0.25, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, 6000.0, -2.0]
    out = _run(name, big)
    with np.errstate(invalid="ignore"):  # (numpy's note on sin(inf))
        ref = REF[name](np.float32(big).astype("float64"))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(out[finite], ref[finite], rtol=MAX_REL, atol=1e-37)
    assert np.isnan(out[~finite]).all()
    if name == "sin":
        assert out[7] == 0 and out[8] == 0 and out[9] == np.float32(1e-30)


def test_inverse_trig_special_values_and_edges():
    """Next to +-1 (acos's 2 asin(sqrt((1 - x) / 2)) branch, no cancellation), out of [-1, 1]
    (NaN), signed zeros, infinities (atan: +-pi/2) and NaN."""
    inf, nan = np.inf, np.nan
    edge = np.float32([1.0, -1.0, 0.5, -0.5, 0.99999994, -0.99999994, 1e-20, -1e-20])
    for name in ("asin", "acos"):
        out = _run(name, edge)
        want = REF[name](edge.astype("float64"))
        np.testing.assert_allclose(out, want, rtol=3e-7, atol=0 if name == "acos" else 1e-30)
        bad = _run(name, [1.0000001, -1.5, inf, -inf, nan])
        assert np.isnan(bad).all()
    assert np.signbit(_run("asin", [-0.0])[0]) and _run("acos", [0.0])[0] == np.float32(np.pi / 2)
    out = _run("atan", [inf, -inf, 0.0, -0.0, nan, 3e38, -1e-30, 1.0])
    assert out[0] == np.float32(np.pi / 2) and out[1] == -np.float32(np.pi / 2)
    assert out[2] == 0 and np.signbit(out[3]) and np.isnan(out[4])
    np.testing.assert_allclose(out[5:], np.arctan(np.float64([3e38, -1e-30, 1.0])), rtol=3e-7)


def _kernel2(name: str, n: int, lanes: int):
    """``C[i] = name(A[i], B[i])``, vector chunks of ``lanes`` plus a scalar tail."""
    A, B, C = (tir.decl_buffer((n,), "float32", k) for k in "ABC")
    fop = getattr(tir, name)
    io, ii, t = tir.Var("io", "int32"), tir.Var("ii", "int32"), tir.Var("t", "int32")
    nvec, parts = n // lanes, []
    if nvec:
        idx = io * lanes + ii
        parts.append(tir.For(io, 0, nvec, tir.ForKind.SERIAL, tir.For(
            ii, 0, lanes, tir.ForKind.VECTORIZED,
            tir.BufferStore(C, fop(A[idx], B[idx]), [idx]))))
    if n % lanes:
        parts.append(tir.For(t, nvec * lanes, n % lanes, tir.ForKind.SERIAL,
                             tir.BufferStore(C, fop(A[t], B[t]), [t])))
    f = tir.PrimFunc([A, B, C], tir.SeqStmt(parts), attrs={"tir.noalias": True})
    return codegen.build(f, auto_parallel=False)


@pytest.mark.parametrize("n,lanes", [(1, 16), (4099, 16), (31, 8), (101, 48)])
def test_atan2_accuracy_every_octant(n, lanes, rng):
    # magnitudes over many decades and every sign pair (1M-point sweeps: 1.9e-7 relative)
    y = (rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-20, 20, n)).astype("float32")
    x = (rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-20, 20, n)).astype("float32")
    x[::7] = y[::7] * rng.uniform(0.5, 2, len(x[::7]))  # near the diagonals
    out = np.empty_like(x)
    _kernel2("atan2", n, lanes)["main"](y, x, out)
    ref = np.arctan2(y.astype("float64"), x.astype("float64"))
    keep = np.abs(ref) > 1e-30
    assert np.max(np.abs(out[keep] - ref[keep]) / np.abs(ref[keep])) < MAX_REL


def test_atan2_special_values_and_no_libm_call():
    inf, nan = np.inf, np.nan
    y = np.float32([0.0, -0.0, 0.0, -0.0, 3.0, -3.0, inf, -inf, inf, -inf, inf, 2.0, -2.0, 5.0,
                    nan, 1.0, 0.0, -1e-45])
    x = np.float32([0.0, 0.0, -0.0, -0.0, 0.0, -0.0, inf, inf, -inf, -inf, 7.0, inf, -inf, -1.0,
                    1.0, nan, -5.0, 1e38])
    out = np.empty_like(x)
    mod = _kernel2("atan2", len(x), 4)
    mod["main"](y, x, out)
    ref = np.arctan2(y, x)
    np.testing.assert_allclose(out, ref, rtol=3e-7, atol=0)
    assert (np.signbit(out) == np.signbit(ref))[~np.isnan(ref)].all()
    src = _kernel2("atan2", 64, 16).get_source()
    assert "<16 x float>" in src and "@atan2f" not in src
