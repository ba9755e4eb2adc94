"""relax.build and the Relax VM: static and symbolic shapes with one build, argument checks,
control flow, calls between functions, closures, packed functions, shape values, the stateful
API, timing and profiling, export / load, and a 100,000-binding function."""

import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.codegen.build import cache_info


def _add(a, b):
    return te.compute(a.shape, lambda *i: a[i] + b[i], name="T_add")


def _scale(a):
    return te.compute(a.shape, lambda *i: a[i] * 3.0, name="T_scale")


def _sym_module():
    """main(x: (n, 4), y: (n, 4)) = (x + y) * 3 + y, with a symbolic n."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit_te(_add, x, y)
            b = bb.emit_te(_scale, a)
            c = bb.emit_te(_add, b, y)
            gv = bb.emit_output(c)
        bb.emit_func_output(gv)
    return bb.get()


@pytest.fixture(scope="module")
def sym_vm():
    ex = relax.build(_sym_module(), target="llvm")
    return ex, relax.VirtualMachine(ex, tvm.cpu())


def test_symbolic_shapes_one_build(sym_vm):
    ex, vm = sym_vm
    before = cache_info()["misses"]
    for rows in (1, 7, 64):
        a = np.random.rand(rows, 4).astype("float32")
        b = np.random.rand(rows, 4).astype("float32")
        out = vm["main"](tvm.nd.array(a), b)
        assert isinstance(out, tvm.nd.NDArray)
        np.testing.assert_allclose(out.numpy(), (a + b) * 3 + b, rtol=1e-5)
    assert cache_info()["misses"] == before  # no compilation per shape
    assert "vm.builtin.match_shape" in ex.as_text()


def test_static_shapes():
    x = relax.Var("x", relax.TensorStructInfo([3, 5], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit_te(_scale, bb.emit_te(_add, x, x)))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    a = np.random.rand(3, 5).astype("float32")
    for _ in range(3):  # storage reused across calls must not corrupt results
        np.testing.assert_allclose(vm["main"](a).numpy(), a * 6, rtol=1e-6)


@pytest.mark.parametrize("args, match", [
    ((np.zeros((3, 4, 1), "float32"), np.zeros((3, 4), "float32")),
     r"param=x.*expected a tensor of rank 2, got rank 3"),
    ((np.zeros((3, 4), "float64"), np.zeros((3, 4), "float32")),
     r"param=x.*expected dtype float32, got float64"),
    ((np.zeros((3, 4), "float32"), np.zeros((5, 4), "float32")),
     r"param=y.*dimension 0 is 5 but the annotation requires 3"),
    ((np.zeros((3, 5), "float32"), np.zeros((3, 5), "float32")),
     r"param=x.*dimension 1 must be 4, got 5"),
    ((np.zeros((3, 4), "float32"), (1, 2)),
     r"param=y.*expected a tensor, got a tuple"),
])
def test_argument_errors_name_the_parameter(sym_vm, args, match):
    _, vm = sym_vm
    with pytest.raises((ValueError, TypeError), match=match):
        vm["main"](*args)


def test_wrong_argument_count_and_function(sym_vm):
    _, vm = sym_vm
    with pytest.raises(TypeError, match=r"main\(\) takes 2 arguments \(x, y\), got 1"):
        vm["main"](np.zeros((2, 4), "float32"))
    with pytest.raises(AttributeError, match="no Relax function 'nope'"):
        vm["nope"]


def test_stateful_api_timing_profile(sym_vm):
    _, vm = sym_vm
    a = np.random.rand(7, 4).astype("float32")
    b = np.random.rand(7, 4).astype("float32")
    vm.set_input("main", a, y=b)
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main").numpy(), (a + b) * 3 + b, rtol=1e-5)
    res = vm.time_evaluator("main", tvm.cpu(), number=5, repeat=2)()
    assert len(res.results) == 2 and res.mean > 0
    report = vm.profile("main", a, b)
    kernels = [k for k in report.rows if not k.startswith("vm.builtin")]
    assert kernels and all(report.rows[k][1] > 0 for k in kernels)
    assert "Total" in str(report)


def test_export_load_round_trip(sym_vm, tmp_path):
    ex, _ = sym_vm
    path = str(tmp_path / "exe.so")
    ex.export_library(path)
    loaded = tvm.runtime.load_module(path)
    vm = relax.VirtualMachine(loaded, tvm.cpu())
    a = np.random.rand(9, 4).astype("float32")
    b = np.random.rand(9, 4).astype("float32")
    np.testing.assert_allclose(vm["main"](a, b).numpy(), (a + b) * 3 + b, rtol=1e-5)
    with open(path, "rb") as f:
        head = f.read(2)
    assert head == b"PK"  # a zip archive, never a pickle
    with pytest.raises(ValueError, match="dimension 1 must be 4"):
        vm["main"](np.zeros((2, 5), "float32"), np.zeros((2, 5), "float32"))


def test_load_damaged_file(tmp_path):
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"not a library")
    with pytest.raises(ValueError, match="not a minitvm library"):
        tvm.runtime.load_module(str(bad))


def test_if_calls_closures_packed_and_shape_values():
    """Control flow, a call to another Relax function, R.shape_of, match_cast, tuples,
    call_packed of a registered function with a PrimValue, and a closure."""
    calls = []
    tvm.register_func("test_relax_vm.record", lambda t, k: calls.append((t.shape, k)) or t,
                      override=True)
    n = tir.Var("n", "int64")
    m = tir.Var("m", "int64")
    bb = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorStructInfo([n], "float32"))
    with bb.function("double", [a]):
        gv = bb.emit_te(_add, a, a)
        double = bb.emit_func_output(gv)
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    flag = relax.Var("flag", relax.TensorStructInfo([], "bool"))
    with bb.function("main", [x, flag]):
        t = relax.SeqExpr([], bb.normalize(relax.Call(double, [x])))
        f = relax.SeqExpr([], x)
        r = bb.emit(relax.If(flag, bb.normalize(t), bb.normalize(f)))
        s = bb.emit(relax.op.shape_of(r))
        y = bb.match_cast(bb.emit(relax.Call(relax.ExternFunc("test_relax_vm.record"),
                                             [r, relax.PrimValue(5)],
                                             sinfo_args=[relax.TensorStructInfo(ndim=1)])),
                          relax.TensorStructInfo([m], "float32"))
        z = bb.emit_te(_scale, y)
        bb.emit_func_output(relax.Tuple([z, s]))
    mod = bb.get()
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    v = np.arange(6, dtype="float32")
    out = vm["main"](v, np.array(True))
    np.testing.assert_allclose(out[0].numpy(), v * 6)
    assert tuple(out[1]) == (6,)
    out = vm["main"](v, np.array(False))
    np.testing.assert_allclose(out[0].numpy(), v * 3)
    assert calls == [((6,), 5), ((6,), 5)]
    np.testing.assert_allclose(vm["double"](v).numpy(), v * 2)


def test_missing_packed_function_is_a_clear_error():
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.Call(relax.ExternFunc("test_relax_vm.not_registered"), [x],
                               sinfo_args=[relax.TensorStructInfo([2], "float32")]))
        bb.emit_func_output(y)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    with pytest.raises(ValueError, match="'test_relax_vm.not_registered', which is not "
                                         "registered"):
        vm["main"](np.zeros(2, "float32"))


def test_unlowered_op_is_a_clear_error():
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.op.add(x, x))
        bb.emit_func_output(y)
    with pytest.raises(ValueError, match="operator relax.add is not lowered"):
        relax.build(bb.get(), "llvm", pipeline=None)


def test_tvm_compile_alias_and_target_check():
    assert tvm.compile is relax.build
    with pytest.raises(ValueError, match="only supports the 'llvm' target"):
        relax.build(_sym_module(), target="cuda")


def test_100k_bindings_through_the_pipeline():
    """A 100,000-binding chain builds (one kernel) and runs at the default recursion limit."""
    limit = sys.getrecursionlimit()
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    length = 100_000
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for _ in range(length):
                v = bb.emit_te(_add, v, x)
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    mod = bb.get()
    ex = relax.build(mod, "llvm", pipeline=None)
    assert len(ex.kernels) == 1
    vm = relax.VirtualMachine(ex, tvm.cpu())
    a = np.ones(4, "float32")
    np.testing.assert_allclose(vm["main"](a).numpy(), a * (length + 1))
    assert sys.getrecursionlimit() == limit
