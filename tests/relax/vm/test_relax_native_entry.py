"""The Relax VM's native entry (runtime/relax_vm/native_entry.py): straight-line functions run
as one native call per call shape, with the interpreter's results and error messages."""

import threading

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.codegen.build import cache_info
from minitvm.runtime.relax_vm import Executable, VMFunction
from minitvm.runtime.relax_vm.executable import ARG_IMM, ARG_REG, CALL, MOVE, RET
from minitvm.runtime.relax_vm.native_entry import MAX_PLANS, MISS, RECORD


def _mlp_module():
    """main(x: (n, 16)) = relu(x @ w1 + b1) @ w2 + b2, weights as constants."""
    rng = np.random.default_rng(0)
    w = {"w1": rng.standard_normal((16, 32)).astype("float32"),
         "b1": rng.standard_normal(32).astype("float32"),
         "w2": rng.standard_normal((32, 5)).astype("float32"),
         "b2": rng.standard_normal(5).astype("float32")}
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 16], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.matmul(x, relax.const(w["w1"])))
            h = bb.emit(relax.op.nn.relu(relax.op.add(h, relax.const(w["b1"]))))
            y = bb.emit(relax.op.add(relax.op.matmul(h, relax.const(w["w2"])),
                                     relax.const(w["b2"])))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    return bb.get(), w


def _ref(w, x):
    return np.maximum(x @ w["w1"] + w["b1"], 0) @ w["w2"] + w["b2"]


@pytest.fixture(scope="module")
def mlp():
    mod, w = _mlp_module()
    ex = relax.build(mod, "llvm")
    return ex, w


def _fast(vm, name, *args):
    """The native entry's answer for ``args`` (MISS / RECORD when it would not run)."""
    return vm._native[name].try_call(args)


def test_native_matches_numpy_and_interpreter_at_several_sizes(mlp):
    ex, w = mlp
    vm = relax.VirtualMachine(ex, tvm.cpu())
    interp = relax.VirtualMachine(ex, tvm.cpu())
    interp.native_entry = False
    assert "main" in vm._native
    before = cache_info()["misses"]
    rng = np.random.default_rng(1)
    for rows in (1, 3, 64, 3, 1):
        x = rng.standard_normal((rows, 16)).astype("float32")
        first = vm["main"](x).numpy()  # a new shape records, a known one replays
        got = _fast(vm, "main", tvm.nd.array(x))
        assert got is not MISS and got is not RECORD
        assert isinstance(got, tvm.nd.NDArray)
        for out in (first, got.numpy(), vm.invoke("main", x).numpy()):
            np.testing.assert_allclose(out, _ref(w, x), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got.numpy(), interp["main"](x).numpy())
    assert len(vm._native["main"].plans) == 3
    assert cache_info()["misses"] == before  # one build, no compilation per shape


def test_outputs_are_fresh_per_call(mlp):
    ex, w = mlp
    vm = relax.VirtualMachine(ex, tvm.cpu())
    xs = [np.random.rand(4, 16).astype("float32") for _ in range(4)]
    outs = [vm["main"](x) for x in xs]  # all held while later calls run
    for x, out in zip(xs, outs, strict=True):
        np.testing.assert_allclose(out.numpy(), _ref(w, x), rtol=1e-5, atol=1e-5)
    assert len({id(o.numpy()) for o in outs}) == 4


@pytest.mark.parametrize("arg, match", [
    (np.zeros((3, 16, 1), "float32"), r"param=x.*expected a tensor of rank 2, got rank 3"),
    (np.zeros((3, 16), "float64"), r"param=x.*expected dtype float32, got float64"),
    (np.zeros((3, 7), "float32"), r"param=x.*dimension 1 must be 16, got 7"),
    ((1, 2), r"param=x.*expected a tensor, got a tuple"),
])
def test_errors_after_plans_exist_name_the_parameter(mlp, arg, match):
    ex, _ = mlp
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for rows in (2, 3):
        vm["main"](np.zeros((rows, 16), "float32"))
    with pytest.raises((ValueError, TypeError), match=match):
        vm["main"](arg)
    with pytest.raises(TypeError, match=r"main\(\) takes 1 arguments \(x\), got 2"):
        vm["main"](np.zeros((2, 16), "float32"), np.zeros((2, 16), "float32"))
    out = vm["main"](np.ones((2, 16), "float32"))  # still fine afterwards
    assert out.shape == (2, 5)


def test_symbolic_dim_used_twice_checked_on_every_shape():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.multiply(x, y)))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    a, b = np.random.rand(3, 4).astype("float32"), np.random.rand(3, 4).astype("float32")
    for _ in range(2):
        np.testing.assert_allclose(vm["main"](a, b).numpy(), a * b, rtol=1e-6)
    assert _fast(vm, "main", a, b) not in (MISS, RECORD)
    with pytest.raises(ValueError, match=r"param=y.*dimension 0 is 5 but the annotation "
                                         r"requires 3"):
        vm["main"](a, np.zeros((5, 4), "float32"))
    # the same array twice (aliased arguments), and a non-contiguous argument
    np.testing.assert_allclose(vm["main"](a, a).numpy(), a * a, rtol=1e-6)
    np.testing.assert_allclose(vm["main"](a, a).numpy(), a * a, rtol=1e-6)
    big = np.random.rand(3, 8).astype("float32")
    np.testing.assert_allclose(vm["main"](big[:, ::2], b).numpy(), big[:, ::2] * b, rtol=1e-6)


def test_tuple_result_views_of_arguments_and_constants():
    """A result holding a kernel output, a reshape view of an argument and a constant."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    c = np.arange(3, dtype="float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            s = bb.emit(relax.op.add(x, x))
            r = bb.emit(relax.op.reshape(s, relax.ShapeExpr([n * 2, 2])))
            v = bb.emit(relax.op.reshape(x, relax.ShapeExpr([n * 4])))
            gv = bb.emit_output(relax.Tuple([r, relax.Tuple([v, relax.const(c)]), s]))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for rows in (2, 5, 2, 5):
        a = np.random.rand(rows, 4).astype("float32")
        r, (v, k), s = vm["main"](a)
        np.testing.assert_allclose(r.numpy(), (a + a).reshape(rows * 2, 2), rtol=1e-6)
        np.testing.assert_array_equal(v.numpy(), a.reshape(-1))
        np.testing.assert_array_equal(k.numpy(), c)
        np.testing.assert_allclose(s.numpy(), a + a, rtol=1e-6)
    assert len(vm._native["main"].plans) == 2
    r, (v, _k), _s = _fast(vm, "main", a)  # replayed natively, not interpreted
    np.testing.assert_array_equal(v.numpy(), a.reshape(-1))


def test_functions_with_branches_stay_interpreted():
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    cond = relax.Var("c", relax.TensorStructInfo([], "bool"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, cond]):
        t = relax.SeqExpr([], relax.op.add(x, x))
        f = relax.SeqExpr([], relax.op.multiply(x, x))
        gv = bb.emit(relax.If(cond, t, f))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    assert "main" not in vm._native
    a = np.array([3.0, 4.0], "float32")
    np.testing.assert_allclose(vm["main"](a, np.array(True)).numpy(), a + a)
    np.testing.assert_allclose(vm["main"](a, np.array(False)).numpy(), a * a)


def test_export_load_stateful_timing_and_threads(mlp, tmp_path):
    ex, w = mlp
    path = str(tmp_path / "mlp.so")
    ex.export_library(path)
    vm = relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    x = np.random.rand(6, 16).astype("float32")
    vm.set_input("main", x)
    vm.invoke_stateful("main")
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main").numpy(), _ref(w, x), rtol=1e-5, atol=1e-5)
    res = vm.time_evaluator("main", tvm.cpu(), number=3, repeat=2)(x)
    assert len(res.results) == 2 and res.mean > 0
    # concurrent calls: a plan in use by one thread makes the other interpret
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(30):
            a = rng.standard_normal((6, 16)).astype("float32")
            if not np.allclose(vm["main"](a).numpy(), _ref(w, a), rtol=1e-4, atol=1e-4):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_plans_are_bounded(mlp):
    ex, w = mlp
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for rows in range(1, MAX_PLANS + 4):
        x = np.random.rand(rows, 16).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), _ref(w, x), rtol=1e-5, atol=1e-5)
    assert len(vm._native["main"].plans) == MAX_PLANS


def _hand_executable(code, num_regs, consts=()):
    return Executable([VMFunction("main", ["x"], num_regs, code)],
                      [("packed", "vm.builtin.make_tuple")], list(consts), {})


def test_100k_instruction_function_at_default_recursion_limit():
    n = 100_000
    code = [[MOVE, k + 1, [ARG_REG, k]] for k in range(n)] + [[RET, n]]
    vm = relax.VirtualMachine(_hand_executable(code, n + 1), tvm.cpu())
    a = np.random.rand(3).astype("float32")
    for _ in range(2):
        np.testing.assert_array_equal(vm["main"](a).numpy(), a)
    assert _fast(vm, "main", a) not in (MISS, RECORD)


def test_deeply_nested_result_is_interpreted():
    depth = 100
    code = [[MOVE, 1, [ARG_REG, 0]]]
    for k in range(depth):
        code.append([CALL, k + 2, 0, [[ARG_REG, k + 1], [ARG_IMM, k]]])
    code.append([RET, depth + 1])
    vm = relax.VirtualMachine(_hand_executable(code, depth + 2), tvm.cpu())
    a = np.random.rand(2).astype("float32")
    for _ in range(2):
        out = vm["main"](a)
        for _ in range(depth):
            out, _k = out
        np.testing.assert_array_equal(out.numpy(), a)
    assert _fast(vm, "main", a) is MISS  # recorded as not plannable


def test_bound_weight_transposes_fold_at_build_time():
    """FoldConstant runs before LegalizeOps too: permute_dims of a bound weight is a constant,
    not a transpose kernel run on every call."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 6], "float32"))
    wt = np.random.rand(4, 6).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            t = bb.emit(relax.op.permute_dims(relax.const(wt), [1, 0]))
            gv = bb.emit_output(bb.emit(relax.op.matmul(x, t)))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    assert not [k for k in ex.kernels if "transpose" in k]
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for rows in (1, 5, 5):
        a = np.random.rand(rows, 6).astype("float32")
        np.testing.assert_allclose(vm["main"](a).numpy(), a @ wt.T, rtol=1e-5)


def test_a_planning_failure_warns_and_interprets(mlp, monkeypatch):
    from minitvm.runtime.relax_vm import native_entry

    ex, w = mlp
    vm = relax.VirtualMachine(ex, tvm.cpu())

    def broken(self, *args):
        raise IndexError("simulated")

    monkeypatch.setattr(native_entry.NativeFunction, "_plan", broken)
    x = np.random.rand(3, 16).astype("float32")
    with pytest.warns(RuntimeWarning, match=r"main\(\) cannot be planned.*simulated"):
        out = vm["main"](x)
    np.testing.assert_allclose(out.numpy(), _ref(w, x), rtol=1e-5, atol=1e-5)
    assert _fast(vm, "main", x) is MISS
    np.testing.assert_allclose(vm["main"](x).numpy(), _ref(w, x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_while_recording_and_restored(mlp, monkeypatch, enabled):
    import gc

    from minitvm.runtime.relax_vm import native_entry

    ex, w = mlp
    vm = relax.VirtualMachine(ex, tvm.cpu())
    seen = []
    plan = native_entry.NativeFunction._plan

    def noting(self, *args):
        seen.append(gc.isenabled())
        return plan(self, *args)

    monkeypatch.setattr(native_entry.NativeFunction, "_plan", noting)
    x = np.random.rand(2, 16).astype("float32")
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        out = vm["main"](x)  # a new call shape: recorded
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
    assert seen == [False]
    np.testing.assert_allclose(out.numpy(), _ref(w, x), rtol=1e-5, atol=1e-5)


def test_shape_and_scalar_arguments():
    """A shape argument is part of the call shape (a plan per value); a float argument keeps
    the function interpreted (a plan per value would never be reused)."""
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    s = relax.Var("s", relax.ShapeStructInfo([m, 2]))
    f = relax.Var("f", relax.PrimStructInfo("float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, s]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x))
            gv = bb.emit_output(bb.emit(relax.op.reshape(y, s)))
        bb.emit_func_output(gv)
    with bb.function("scaled", [x, f]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.add(x, x)))
        bb.emit_func_output(relax.Tuple([gv, f]))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for rows in (3, 3, 5, 5):
        a = np.random.rand(rows, 4).astype("float32")
        shape = tvm.runtime.ShapeTuple([rows * 2, 2])
        np.testing.assert_allclose(vm["main"](a, shape).numpy(), (a + a).reshape(-1, 2))
    assert len(vm._native["main"].plans) == 2
    assert _fast(vm, "main", a, shape) not in (MISS, RECORD)
    with pytest.raises(ValueError, match=r"param=s.*dimension 1 must be 2, got 3"):
        vm["main"](a, tvm.runtime.ShapeTuple([10, 3]))
    for k in range(3):
        out, g = vm["scaled"](a, 0.5 + k)
        np.testing.assert_allclose(out.numpy(), a + a)
        assert g == 0.5 + k
    assert _fast(vm, "scaled", a, 1.5) is MISS


def test_plans_hold_bounded_memory(mlp, monkeypatch):
    from minitvm.runtime.relax_vm import native_entry

    ex, w = mlp
    vm = relax.VirtualMachine(ex, tvm.cpu())
    vm["main"](np.random.rand(64, 16).astype("float32"))
    plan, = vm._native["main"].plans.values()
    assert plan.nbytes >= 64 * 32 * 4  # holds the (64, 32) hidden activation at least
    monkeypatch.setattr(native_entry, "MAX_PLAN_BYTES", plan.nbytes + 1)
    for rows in (63, 62, 61):
        x = np.random.rand(rows, 16).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), _ref(w, x), rtol=1e-5, atol=1e-5)
        assert len(vm._native["main"].plans) == 1  # each new shape evicts the previous one


def test_busy_plan_interprets_and_profile_rebuilds_the_same_result(mlp):
    """A call shape's plan held by another thread is a MISS (the call interprets, same
    numbers); the profile's result rebuilding (``plan.build``) and the per-call path agree."""
    ex, w = mlp
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x = np.random.default_rng(3).standard_normal((3, 16)).astype("float32")
    fast = vm["main"](x).numpy()
    plan, = vm._native["main"].plans.values()
    assert plan.lock.acquire(False)
    try:
        assert _fast(vm, "main", x) is MISS
        np.testing.assert_array_equal(vm["main"](x).numpy(), fast)  # interpreted meanwhile
    finally:
        plan.lock.release()
    assert _fast(vm, "main", tvm.nd.array(x)) is not MISS
    report = vm.profile("main", x)
    assert report.native and sum(c for c, _ in report.rows.values()) >= 2
    key, arrays = vm._native["main"].conv(x)
    outs = [np.empty(s, d) for s, d in plan.outs]
    assert isinstance(plan.build(arrays, outs), tvm.nd.NDArray)
    np.testing.assert_allclose(fast, _ref(w, x), rtol=1e-5, atol=1e-5)
    assert _fast(vm, "main") is MISS  # a wrong argument count: the interpreter's error
    with pytest.raises(TypeError, match=r"main\(\) takes 1 arguments"):
        vm["main"]()


def test_least_recent_shape_dropped_first_after_a_lone_plan(mlp, monkeypatch):
    """A plan called while it is the only one keeps its recording tick (the fast path skips
    the tick): the shapes dropped are still the least recently called."""
    from minitvm.runtime.relax_vm import native_entry

    ex, w = mlp
    monkeypatch.setattr(native_entry, "MAX_PLANS", 2)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    xs = {r: np.random.rand(r, 16).astype("float32") for r in (1, 2, 3, 4)}
    for _ in range(3):
        vm["main"](xs[1])  # alone: no tick
    vm["main"](xs[2])
    vm["main"](xs[1])  # among others: ticked, now more recent than (2, 16)
    vm["main"](xs[3])  # two plans at most: (2, 16) is dropped for it
    assert sorted(k[0][0] for k in vm._native["main"].plans) == [1, 3]
    vm["main"](xs[4])
    assert sorted(k[0][0] for k in vm._native["main"].plans) == [3, 4]
    for x in xs.values():
        np.testing.assert_allclose(vm["main"](x).numpy(), _ref(w, x), rtol=1e-5, atol=1e-5)
