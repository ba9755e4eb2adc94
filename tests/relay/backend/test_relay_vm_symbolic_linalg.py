"""Relay VM symbolic kernels of the dense factorizations (``linalg.cholesky_factor`` /
``lu_factor`` / ``factored_solve``, ``topi.linalg``'s loop kernels): over a run-time batch of
matrices, or a run-time order, ONE kernel per op serves every size (0 and 1 included), with the
bits of the static kernel the per-shape path compiles for that size and the interpreter's values
(its numpy references) within rounding. What the relations assume of run-time sizes (square
matrices, a factor that fits the right-hand sides) is a shape condition checked at each call:
sizes that break it raise as the interpreter does."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.relay.backend.vm.symbolic import SymbolicKernel
from minitvm.relay.expr import bind
from minitvm.runtime.vm import VirtualMachine
from minitvm.testing.symbolic_sweep import check_op

A = relay.Any
L = relay.op.linalg


def _batch_model(order: int = 4, cols: int = 2):
    """Cholesky of an SPD batch, LU of a general one, both solves; the batch a run-time size
    (the rhs's its own ``Any``: the solve's operands are aligned to one size)."""
    s = relay.var("s", shape=(A(), order, order), dtype="float32")
    a = relay.var("a", shape=(A(), order, order), dtype="float32")
    b = relay.var("b", shape=(A(), order, cols), dtype="float32")
    low, lu = L.cholesky_factor(s), L.lu_factor(a)
    body = relay.Tuple([low, lu, L.factored_solve(lu, b, "lu"),
                        L.factored_solve(low, b, "cholesky")])
    return [s, a, b], body


def _args(batch: int, order: int, cols: int, seed: int = 0, dtype: str = "float32"):
    r = np.random.default_rng(seed)
    m = r.standard_normal((batch, order, order))
    spd = m @ m.transpose(0, 2, 1) + order * np.eye(order)
    return [spd.astype(dtype), (m + 3 * np.eye(order)).astype(dtype),
            r.standard_normal((batch, order, cols)).astype(dtype)]


def _outputs(v):
    return [o.numpy() for o in v] if isinstance(v, tvm.runtime.container.ADT) else [v.numpy()]


def _static_run(params, body, args):
    """The outputs of the function compiled at the static shapes of ``args`` (what the
    per-shape path compiles)."""
    new = [relay.var(p.name_hint, shape=x.shape, dtype=str(x.dtype))
           for p, x in zip(params, args, strict=True)]
    mod = tvm.IRModule.from_expr(relay.Function(new, bind(body, dict(zip(params, new,
                                                                          strict=True)))))
    return _outputs(VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu()).run(*args))


def _symbolic_only(exe, kernels: int):
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": kernels, "specialized": 0}
    return [k.run for k in exe.kernels if isinstance(k.run, SymbolicKernel)]


def test_run_time_batch_one_kernel_per_op_every_batch():
    """One compile: batches 0, 1 and 3 run on four symbolic kernels (none specialized), the
    interpreter's values within rounding, the static kernels' bits at batch 3."""
    params, body = _batch_model()
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    exe = relay.vm.compile(mod, target="llvm")
    runs = _symbolic_only(exe, 4)
    vm = VirtualMachine(exe, tvm.cpu())
    interp = relay.create_executor("debug", mod=mod).evaluate()
    for batch in (0, 1, 3):
        args = _args(batch, 4, 2, seed=batch)
        got = _outputs(vm.run(*args))
        assert [g.shape for g in got] == [(batch, 4, 4), (batch, 4, 5), (batch, 4, 2),
                                          (batch, 4, 2)]
        for g, r in zip(got, _outputs(interp(*args)), strict=True):
            np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(got[2], np.linalg.solve(args[1], args[2]), rtol=1e-4,
                                   atol=1e-4)
        if batch == 3:
            for g, w in zip(got, _static_run(params, body, args), strict=True):
                assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
    assert all(r._fallback is None for r in runs)


@pytest.mark.parametrize("shared", [True, False], ids=["one-order", "rows-and-columns"])
def test_run_time_order_one_kernel_with_square_condition(shared):
    """A run-time batch and order (the rows and columns one ``Any``, or two whose equality is a
    shape condition): orders 0, 1, 5 on one kernel each, the static kernels' values within
    rounding (LLVM may contract a run-time order's loops otherwise than a constant one's, so
    the last bits can differ); a non-square call raises, as the interpreter does."""
    if shared:
        b, n = A(), A()
        a = relay.var("a", shape=(b, n, n), dtype="float64")
        rhs = relay.var("r", shape=(b, n, A()), dtype="float64")
    else:
        a = relay.var("a", shape=(A(), A(), A()), dtype="float64")
        rhs = relay.var("r", shape=(A(), A(), A()), dtype="float64")
    lu = L.lu_factor(a)
    params, body = [a, rhs], relay.Tuple([lu, L.factored_solve(lu, rhs, "lu")])
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    exe = relay.vm.compile(mod, target="llvm")
    runs = _symbolic_only(exe, 2)
    if not shared:  # (the factor's columns against its rows: stated, checked per call)
        assert any(c[0] == "equal" for r in runs for c in r.conditions)
    vm = VirtualMachine(exe, tvm.cpu())
    for batch, order in ((2, 0), (1, 1), (2, 5)):
        args = _args(batch, order, 3, seed=order, dtype="float64")[1:]
        got = _outputs(vm.run(*args))
        for g, w in zip(got, _static_run(params, body, args), strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        if order:
            np.testing.assert_allclose(got[1], np.linalg.solve(*args), rtol=1e-9, atol=1e-9)
    assert all(r._fallback is None for r in runs)
    interp = relay.create_executor("debug", mod=mod).evaluate()
    bad = [np.ones((1, 3, 4)), np.ones((1, 3, 2))]
    with pytest.raises(Exception, match="square"):
        interp(*bad)
    with pytest.raises(Exception, match="square"):
        vm.run(*bad)


@pytest.mark.parametrize("kind", ["lower", "upper", "unit_lower", "unit_upper"])
def test_triangular_solves_over_a_run_time_batch(kind):
    """A triangular ``A`` itself over a run-time batch: one kernel, the static kernel's bits;
    a right-hand side of another batch raises (the operands are one batch)."""
    a = relay.var("a", shape=(A(), 3, 3), dtype="float32")
    rhs = relay.var("r", shape=(A(), 3, 2), dtype="float32")
    params, body = [a, rhs], L.factored_solve(a, rhs, kind)
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function(params, body)), target="llvm")
    runs = _symbolic_only(exe, 1)
    vm = VirtualMachine(exe, tvm.cpu())
    for batch in (0, 1, 4):
        args = _args(batch, 3, 2, seed=batch)[1:]
        got = _outputs(vm.run(*args))
        assert got[0].tobytes() == _static_run(params, body, args)[0].tobytes()
    assert runs[0]._fallback is None
    with pytest.raises(Exception, match="does not fit"):
        vm.run(np.ones((2, 3, 3), "float32"), np.ones((3, 3, 2), "float32"))


@pytest.mark.parametrize("case", ["linalg.cholesky_order", "linalg.lu_solve_any"])
def test_sweep_cases_agree(case):
    """The sweep's linalg cases: the VM does what the interpreter does at every shape."""
    counts: dict = {}
    assert check_op(case, counts=counts) == []
    assert counts["specialized"] == 0 and counts["symbolic"] >= 1


def test_warm_compile_restores_the_kernels_and_their_conditions(tmp_path, monkeypatch):
    """A second compile (a fresh process: only the disk cache remembers) loads the LU kernel
    over ``(?, ?, ?)`` without lowering it again, with the square condition its compute
    stated: a non-square call still raises."""
    from vm_disk_cache import forget_compiled, own_disk_cache

    from minitvm.backend import parallel_compile
    from minitvm.relay.backend.vm import exe_cache, saved, symbolic

    own_disk_cache(tmp_path, monkeypatch)
    a = relay.var("a", shape=(A(), A(), A()), dtype="float64")
    mod = tvm.IRModule.from_expr(relay.Function([a], L.lu_factor(a)))
    # (the kernels' records are what this checks: whole executables not cached)
    with tvm.transform.PassContext(opt_level=3, config={parallel_compile.CONFIG_KEY: 1,
                                                        exe_cache.CONFIG_KEY: False}):
        cold = relay.vm.compile(mod, target="llvm")
        forget_compiled()
        scheduled, hits = symbolic.STATS["scheduled"], saved.STATS["hits"]
        warm = relay.vm.compile(mod, target="llvm")
    assert symbolic.STATS["scheduled"] == scheduled and saved.STATS["hits"] - hits == 1
    (run,) = _symbolic_only(warm, 1)
    assert any(c[0] == "equal" for c in run.conditions)
    x = _args(2, 4, 1, dtype="float64")[1]
    want = VirtualMachine(cold, tvm.cpu()).run(x).numpy()
    assert VirtualMachine(warm, tvm.cpu()).run(x).numpy().tobytes() == want.tobytes()
    with pytest.raises(Exception, match="square"):
        VirtualMachine(warm, tvm.cpu()).run(np.ones((1, 2, 3)))
    forget_compiled()  # (nothing of this cache kept for the next test)
