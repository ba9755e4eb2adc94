"""float32 ``pow(x, c)`` with a constant exponent inline (codegen/llvm/vmath.pow_const_exponent):
integers by multiplications, quarter powers by square roots, other exponents by the inline
exp/log; no ``powf`` per lane. Against C's ``pow`` (``math.pow``, float64) on random values and
the special ones (0, -0, inf, -inf, NaN, negatives, denormals), vector bodies and scalar tails;
and the exponent reaching the kernel as a constant from Relay and from Relax's legalization.

Relative errors against float64: integers (|c| <= 64) and quarter powers (|c| <= 8) a few
ulp (allowed 4e-7, 8e-7 for |c| > 8); exp/log exponents about 1.2e-7 * (1 + |c log x|), the
float32 exponent's rounding (allowed 2.5e-7 * (1 + |c log x|))."""

import math

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relax, relay, tir
from minitvm.contrib import graph_executor
from minitvm.relax import op as R

EXPONENTS = [0.0, 1.0, 2.0, 3.0, 5.0, 8.0, -1.0, -2.0, -3.0, 0.5, -0.5, 0.25, 0.75, -0.75,
             1.5, 2.25, -7.75, 0.3, -1.7, 1 / 3, 9.0, -11.0, 12.5, 100.0]
SPECIAL = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 2.0, -2.0, 0.5, -0.5, 1e-30,
           1e30, -3.0, 1e-42, -1e-42, 7.0, 3e38, -3e38, 1e-3]


def _kernel(c: float, n: int, lanes: int):
    """``B[i] = pow(A[i], c)`` in vector chunks of ``lanes`` plus a scalar tail."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    io, ii, t = tir.Var("io", "int32"), tir.Var("ii", "int32"), tir.Var("t", "int32")
    nvec = n // lanes
    parts = []
    exponent = tir.FloatImm("float32", c)
    if nvec:
        idx = io * lanes + ii
        parts.append(tir.For(io, 0, nvec, tir.ForKind.SERIAL, tir.For(
            ii, 0, lanes, tir.ForKind.VECTORIZED,
            tir.BufferStore(B, tir.pow(A[idx], exponent), [idx]))))
    if n % lanes:
        parts.append(tir.For(t, nvec * lanes, n % lanes, tir.ForKind.SERIAL,
                             tir.BufferStore(B, tir.pow(A[t], exponent), [t])))
    f = tir.PrimFunc([A, B], tir.SeqStmt(parts), attrs={"tir.noalias": True})
    return codegen.build(f, auto_parallel=False)


def _c_pow(x: np.ndarray, c: float) -> np.ndarray:
    """C's pow in float64 (math.pow; NaN where it raises for a negative base), as float32."""
    out = []
    for v in x.astype("float64"):
        cc = np.float64(np.float32(c))
        odd = cc.is_integer() and int(cc) % 2 == 1
        if v == 0 and cc < 0:  # (math.pow raises: C's pow gives inf, signed for odd powers)
            out.append(math.copysign(math.inf, v) if odd else math.inf)
            continue
        try:
            r = math.pow(v, cc)
        except ValueError:
            r = math.nan
        except OverflowError:
            r = math.copysign(math.inf, v) if float(c).is_integer() and int(c) % 2 else math.inf
        out.append(r)
    return np.array(out)


def _check(out, x, c):
    ref = _c_pow(x, c)
    ref32 = ref.astype("float32")
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(out), nan, err_msg=f"NaN pattern, c={c}")
    exact = ~nan & (~np.isfinite(ref32) | (ref32 == 0))  # inf and zero results: exactly so
    np.testing.assert_array_equal(out[exact], ref32[exact], err_msg=f"c={c}")
    assert not np.any(np.signbit(out[exact]) != np.signbit(ref32[exact])), f"sign of 0, c={c}"
    rest = ~nan & ~exact & (np.abs(ref) > 1e-37)
    if (4 * c).is_integer() and abs(c) <= 8 or float(c).is_integer() and abs(c) <= 64:
        tol = np.full(len(x), 4e-7 if abs(c) <= 8 else 8e-7)
    else:  # exp(c log x): the float32 exponent's rounding, amplified by |c log x|
        tol = 2.5e-7 * (1 + np.abs(c * np.log(np.abs(x.astype("float64")) + 1e-300)))
    rel = np.abs(out[rest] - ref[rest]) / np.abs(ref[rest])
    assert np.all(rel < tol[rest]), f"c={c}: relative errors up to {rel.max()}"


@pytest.mark.parametrize("c", EXPONENTS)
@pytest.mark.parametrize("n,lanes", [(len(SPECIAL), 4), (37, 16), (1, 16)])
def test_special_and_random_values(c, n, lanes, rng):
    x = np.array(SPECIAL, "float32") if n == len(SPECIAL) else \
        (rng.standard_normal(n) * 10).astype("float32")
    out = np.empty_like(x)
    _kernel(c, n, lanes)["main"](x, out)
    _check(out, x, c)


@pytest.mark.parametrize("c", [0.75, -0.75, 0.3, 2.5, -11.0])
def test_accuracy_sweep(c, rng):
    x = np.exp(rng.uniform(np.log(1e-30), np.log(1e30), 4099)).astype("float32")
    x = x[np.abs(np.log(x.astype("float64")) * c) < 80]  # results inside float32's range
    out = np.empty_like(x)
    _kernel(c, len(x), 16)["main"](x, out)
    _check(out, x, c)


@pytest.mark.parametrize("c", [0.75, -0.5, 0.3, 3.0])
def test_no_powf_call(c):
    src = _kernel(c, 64, 16).get_source()
    assert "<16 x float>" in src and "powf" not in src and "llvm.pow" not in src


def test_non_constant_exponent_keeps_pow():
    A = tir.decl_buffer((8,), "float32", "A")
    B = tir.decl_buffer((8,), "float32", "B")
    i = tir.Var("i", "int32")
    f = tir.PrimFunc([A, B], tir.For(i, 0, 8, tir.ForKind.SERIAL, tir.BufferStore(
        B, tir.pow(A[i], B[i]), [i])), attrs={"tir.noalias": True})
    assert "pow" in codegen.build(f, auto_parallel=False).get_source()


def test_relay_power_by_constant():
    data = np.abs(np.random.default_rng(1).standard_normal((2, 3, 7, 9))).astype("float32")
    x = relay.var("x", shape=data.shape)
    y = relay.power(relay.add(x, relay.const(1.0)), relay.const(np.float32(-0.75)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    assert "powf" not in lib.get_lib().get_source()
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", data)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), (data + 1.0) ** -0.75, rtol=1e-6)


@pytest.mark.parametrize("exponent", [np.float32(0.75), np.array([0.75], "float32")])
def test_relax_power_by_constant_is_inline(exponent):
    data = np.abs(np.random.default_rng(2).standard_normal((3, 5, 7))).astype("float32")
    xv = relax.Var("x", relax.TensorStructInfo(data.shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(R.power(xv, relax.const(exponent))))
        bb.emit_func_output(out)
    legal = relax.transform.LegalizeOps()(bb.get())
    assert len(legal["power"].params) == 2  # x and the output: the exponent is inline
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.nd.array(data)).numpy(), data ** 0.75,
                               rtol=1e-6)


def test_relax_power_by_tensor_keeps_the_operand():
    xv = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(R.power(xv, relax.const(
                np.array([1.0, 2.0, 0.5, 3.0], "float32")))))
        bb.emit_func_output(out)
    assert len(relax.transform.LegalizeOps()(bb.get())["power"].params) == 3
