"""The dense factorization kernels (``topi.linalg`` stages, ``schedule.linalg`` loops, Relay's
``linalg.cholesky_factor`` / ``lu_factor`` / ``factored_solve``, Relax's ``call_rule_stage``):
built native and run by the interpreter (the numpy references) against numpy's LAPACK at an
order past the importers' old unrolled limit of 16; a failed Cholesky pivot (NaN from its
column on) and a zero LU pivot (its elimination skipped); loops whose code does not grow with
the order; and the type relations' errors."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay, te
from minitvm.contrib import graph_executor
from minitvm.relax.transform.legalize_ops.rule_stage import call_rule_stage
from minitvm.schedule import linalg as linalg_rule
from minitvm.schedule.lower import lower_te
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts
from minitvm.topi import linalg as topi_linalg

_RNG = np.random.default_rng(3)


def _inputs(b: int, n: int, m: int, dtype: str):
    a = _RNG.standard_normal((b, n, n)).astype(dtype)
    spd = (a @ a.transpose(0, 2, 1) + n * np.eye(n)).astype(dtype)
    return (a + 3 * np.eye(n)).astype(dtype), spd, _RNG.standard_normal((b, n, m)).astype(dtype)


def _module(b: int, n: int, m: int, dtype: str):
    xa = relay.var("a", shape=(b, n, n), dtype=dtype)
    xs = relay.var("s", shape=(b, n, n), dtype=dtype)
    xb = relay.var("b", shape=(b, n, m), dtype=dtype)
    lu = relay.op.linalg.lu_factor(xa)
    low = relay.op.linalg.cholesky_factor(xs)
    out = relay.Tuple([low, lu, relay.op.linalg.factored_solve(lu, xb, "lu"),
                       relay.op.linalg.factored_solve(low, xb, "cholesky")])
    return tvm.IRModule.from_expr(relay.Function([xa, xs, xb], out))


def _native(mod, inputs: dict):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in inputs.items():
        g.set_input(name, value)
    g.run()
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())]


def _check_against_lapack(outs, a, spd, b, n: int, tol: float):
    low, packed, x_lu, x_chol = outs
    np.testing.assert_allclose(low, np.linalg.cholesky(spd), rtol=tol, atol=tol)
    lu, pivots = packed[..., :n], packed[..., n]
    for k in range(a.shape[0]):  # P A = L U with the exchanges replayed on the identity
        perm = np.arange(n)
        for i, p in enumerate(pivots[k].astype(int)):
            perm[[i, p]] = perm[[p, i]]
        lower = np.tril(lu[k], -1) + np.eye(n)
        np.testing.assert_allclose(lower @ np.triu(lu[k]), a[k][perm], rtol=tol, atol=tol * n)
        assert np.abs(np.tril(lu[k], -1)).max() <= 1  # partial pivoting's multipliers
    np.testing.assert_allclose(x_lu, np.linalg.solve(a, b), rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(x_chol, np.linalg.solve(spd, b), rtol=tol * 10, atol=tol)


@pytest.mark.parametrize("dtype, tol", [("float32", 2e-5), ("float64", 1e-11)])
def test_kernels_match_lapack_native_and_interpreted(dtype, tol):
    b, n, m = 2, 24, 3
    a, spd, rhs = _inputs(b, n, m, dtype)
    mod = _module(b, n, m, dtype)
    native = _native(mod, {"a": a, "s": spd, "b": rhs})
    _check_against_lapack(native, a, spd, rhs, n, tol)
    interpreted = relay.create_executor("debug", mod=mod).evaluate()(a, spd, rhs)
    for got, ref in zip(native, interpreted, strict=True):
        assert got.dtype == ref.numpy().dtype
        np.testing.assert_allclose(got, ref.numpy(), rtol=tol * 10, atol=tol * 10)


def test_failed_cholesky_pivot_and_zero_lu_pivot():
    """A non positive-definite leading minor of order 3: columns 0-1 as LAPACK's, NaN from
    column 2 on; a zero column 1: U[1, 1] = 0, its elimination skipped, the others exact."""
    n = 5
    a, spd, rhs = _inputs(1, n, 2, "float64")
    spd[0, 2, 2] = -100.0
    a[0, :, 1] = 0.0
    low, packed, x_lu, _ = _native(_module(1, n, 2, "float64"), {"a": a, "s": spd, "b": rhs})
    head = np.linalg.cholesky(spd[0, :2, :2])
    np.testing.assert_allclose(low[0, :2, :2], head, rtol=1e-12)
    assert np.isnan(np.diagonal(low[0])[2:]).all() and not np.isnan(low[0, :, :2]).any()
    lu = packed[0, :, :n]
    assert lu[1, 1] == 0 and np.count_nonzero(np.diagonal(lu)) == n - 1
    assert not np.isfinite(x_lu).all()


def _statements(n: int, stage) -> int:
    x = te.placeholder((2, n, n), "float32", "x")
    func, _ = lower_te([x], [stage(x)])
    return sum(1 for s in walk_stmts(func.body) if isinstance(s, S.For | S.BufferStore))


@pytest.mark.parametrize("stage", [topi_linalg.cholesky_stage, topi_linalg.lu_stage],
                         ids=["cholesky", "lu"])
def test_loops_do_not_grow_with_the_order(stage):
    assert _statements(4, stage) == _statements(64, stage) > 0
    x = te.placeholder((2, 8, 8), "float32", "x")
    assert linalg_rule.supported(stage(x))


def test_relax_call_rule_stage_runs_the_kernels():
    n, m = 20, 2
    a, spd, rhs = _inputs(2, n, m, "float32")
    xa = relax.Var("a", relax.TensorStructInfo((2, n, n), "float32"))
    xb = relax.Var("b", relax.TensorStructInfo((2, n, m), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xa, xb]):
        packed = bb.emit(call_rule_stage(bb, topi_linalg.lu_stage, xa, name="lu",
                                         rule=linalg_rule.RULE))
        x = bb.emit(call_rule_stage(
            bb, lambda f, r: topi_linalg.factored_solve_stage(f, r, "lu"), packed, xb,
            name="lu_solve", rule=linalg_rule.RULE))
        bb.emit_func_output(x)
    ex = relax.build(bb.get(), "llvm")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(a), tvm.nd.array(rhs))
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a, rhs), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("build, match", [
    (lambda: relay.op.linalg.lu_factor(relay.var("x", shape=(2, 3, 4))), "square"),
    (lambda: relay.op.linalg.cholesky_factor(relay.var("x", shape=(3, 3), dtype="float32")),
     "\\(batch, n, n\\)"),
    (lambda: relay.op.linalg.cholesky_factor(relay.var("x", shape=(1, 3, 3), dtype="int32")),
     "float32 or float64"),
    (lambda: relay.op.linalg.factored_solve(relay.var("f", shape=(1, 3, 3)),
                                            relay.var("b", shape=(1, 3, 2)), "lu"),
     "does not fit"),
    (lambda: relay.op.linalg.factored_solve(relay.var("f", shape=(1, 3, 3)),
                                            relay.var("b", shape=(1, 3, 2)), "qr"),
     "kind must be"),
], ids=["non-square", "not-batched", "integer", "lu-factor-shape", "kind"])
def test_type_relation_errors(build, match):
    with pytest.raises(Exception, match=match):
        relay.transform.InferType()(tvm.IRModule.from_expr(build()))


@pytest.mark.parametrize("kind", ["lower", "upper", "unit_lower", "unit_upper"])
def test_triangular_solve_kinds_read_only_their_triangle(kind):
    """``factored_solve`` of a triangular ``A`` itself: one substitution, native and by the
    interpreter, equal to numpy's solve of ``A``'s triangle (the other triangle holds garbage
    that must not be read; a unit kind ignores the diagonal too)."""
    b, n, m = 2, 19, 3
    full = _RNG.standard_normal((b, n, n)) + 4 * np.eye(n)
    rhs = _RNG.standard_normal((b, n, m))
    tri = np.tril(full) if "lower" in kind else np.triu(full)
    if kind.startswith("unit"):
        tri = tri - np.diagonal(tri, axis1=1, axis2=2)[..., None] * np.eye(n) + np.eye(n)
    xa = relay.var("a", shape=(b, n, n), dtype="float64")
    xb = relay.var("b", shape=(b, n, m), dtype="float64")
    mod = tvm.IRModule.from_expr(relay.Function([xa, xb], relay.op.linalg.factored_solve(
        xa, xb, kind)))
    native = _native(mod, {"a": full, "b": rhs})[0]
    np.testing.assert_allclose(native, np.linalg.solve(tri, rhs), rtol=1e-10, atol=1e-10)
    interpreted = relay.create_executor("debug", mod=mod).evaluate()(full, rhs).numpy()
    np.testing.assert_allclose(interpreted, native, rtol=1e-10, atol=1e-10)
    assert "linalg.factored_solve" in mod.astext() and f'kind="{kind}"' in mod.astext()
