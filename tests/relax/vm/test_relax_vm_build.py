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
    inputs = [np.random.rand(3, 5).astype("float32") for _ in range(4)]
    outs = [vm["main"](a) for a in inputs]  # results held while later calls run
    for a, out in zip(inputs, outs, strict=True):
        np.testing.assert_allclose(out.numpy(), a * 6, rtol=1e-6)


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
    ex = tvm.compile(_sym_module(), target="llvm")
    assert isinstance(ex, relax.Executable)
    a = np.ones((2, 4), "float32")
    np.testing.assert_allclose(relax.VirtualMachine(ex, tvm.cpu())["main"](a, a).numpy(),
                               np.full((2, 4), 7.0))
    prim = _sym_module()["_add"]
    lib = tvm.compile(prim)  # PrimFuncs only: a native module
    out = np.empty((2, 4), "float32")
    lib[lib.function_names[0]](a, a, out)
    np.testing.assert_allclose(out, 2 * a)
    with pytest.raises(ValueError, match="only the 'llvm'"):
        relax.build(_sym_module(), target="cuda")


def test_100k_bindings_through_the_pipeline():
    """A 100,000-binding chain goes through the whole default pipeline (one kernel, marked
    opaque so that fusion leaves the chain as it is) and runs at the default recursion limit."""
    limit = sys.getrecursionlimit()
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    length = 100_000
    with bb.function("main", [x]):
        with bb.dataflow():
            v = bb.emit_te(_add, x, x, primfunc_attrs={"op_pattern": 8})
            first = bb.lookup_binding(v)
            for _ in range(length - 1):
                v = bb.emit(relax.op.call_tir(first.args[0], (v, x), first.sinfo_args[0]))
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    assert len(ex.kernels) == 1
    vm = relax.VirtualMachine(ex, tvm.cpu())
    a = np.ones(4, "float32")
    np.testing.assert_allclose(vm["main"](a).numpy(), a * (length + 1))
    assert sys.getrecursionlimit() == limit


def test_closure_tir_vars_and_symbolic_prim_value():
    """make_closure / invoke_closure, a kernel taking a symbolic scalar (call_te tir_vars), and
    a symbolic R.prim_value handed to a packed function."""
    seen = []
    tvm.register_func("test_relax_vm.seen", lambda k: seen.append(k) or k, override=True)
    n = tir.Var("n", "int64")
    m = tir.Var("m", "int64")
    bb = relax.BlockBuilder()
    c = relax.Var("c", relax.TensorStructInfo([n], "float32"))
    a = relax.Var("a", relax.TensorStructInfo([n], "float32"))
    with bb.function("add_captured", [c, a]):
        gv = bb.emit_te(_add, c, a)
        add_captured = bb.emit_func_output(gv)
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    s = relax.Var("s", relax.ShapeStructInfo([m]))
    with bb.function("main", [x, s]):
        clo = bb.emit(relax.op.make_closure(add_captured, relax.Tuple([x])))
        y = bb.emit(relax.op.invoke_closure(clo, relax.Tuple([x]),
                                            relax.TensorStructInfo([n], "float32")))
        # m is no input's dimension: the kernel receives it as a scalar (tir_vars)
        z = bb.emit_te(lambda t: te.compute((m,), lambda i: t[i % n] + tir.Cast("float32", m),
                                            name="plus_m"), y)
        k = bb.emit(relax.Call(relax.ExternFunc("test_relax_vm.seen"), [relax.PrimValue(n)],
                               sinfo_args=[relax.PrimStructInfo("int64")]))
        bb.emit_func_output(relax.Tuple([z, k]))
    mod = bb.get()
    assert "tir_vars=R.shape([m])" in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for rows in (3, 8):
        v = np.random.rand(rows).astype("float32")
        out = vm["main"](v, tvm.runtime.ShapeTuple([10]))
        np.testing.assert_allclose(out[0].numpy(), np.resize(2 * v, 10) + 10, rtol=1e-6)
        assert out[1] == rows
    assert seen == [3, 8]
    with pytest.raises(TypeError, match="param=s.*expected a shape"):
        vm["main"](v, 10)


def test_recursive_relax_function_runs_without_python_recursion():
    """count(x, i) = count(x + 1, i - 1) if i > 0 else x, 5,000 calls deep."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo([], "float32"))
    i = relax.Var("i", relax.TensorStructInfo([], "int64"))
    gv_count = relax.GlobalVar("count")
    gv_count._checked_type = relax.FuncStructInfo(
        [x.struct_info, i.struct_info], relax.TensorStructInfo([], "float32"))
    with bb.function("count_body", [x, i]):
        cond = bb.emit_te(lambda t: te.compute((), lambda: t() > 0, name="positive"), i)
        x1 = bb.emit_te(lambda t: te.compute((), lambda: t() + 1.0, name="inc"), x)
        i1 = bb.emit_te(lambda t: te.compute((), lambda: t() - 1, name="dec"), i)
        then = relax.SeqExpr([], bb.normalize(relax.Call(gv_count, [x1, i1])))
        r = bb.emit(relax.If(cond, bb.normalize(then), bb.normalize(relax.SeqExpr([], x))))
        gv = bb.emit_func_output(r)
    mod = bb.get()
    func = mod[gv]
    mod.remove(gv)
    mod[gv_count] = func.without_attr("global_symbol") if func.attrs else func
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["count"](np.array(0.5, "float32"), np.array(5000, "int64"))
    assert float(out.numpy()) == 5000.5


def test_symbolic_dims_bound_from_a_call_result():
    """A packed function returning a data-dependent shape binds its new symbolic variable; the
    later allocation uses it, and a wrong rank from the function is a clear error."""
    tvm.register_func("test_relax_vm.positives", lambda a: a[a > 0].copy(), override=True)
    n = tir.Var("n", "int64")
    k = tir.Var("k", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        p = bb.emit(relax.op.call_pure_packed("test_relax_vm.positives", x,
                                              sinfo_args=relax.TensorStructInfo([k], "float32")))
        y = bb.emit_te(_scale, p)
        bb.emit_func_output(y)
    ex = relax.build(bb.get(), "llvm")
    assert "loc=call result, var=lv" in ex.as_text()
    vm = relax.VirtualMachine(ex, tvm.cpu())
    v = np.array([1.0, -2.0, 3.0, -4.0, 5.0], "float32")
    np.testing.assert_allclose(vm["main"](v).numpy(), [3.0, 9.0, 15.0])
    tvm.register_func("test_relax_vm.positives", lambda a: a.reshape(1, -1), override=True)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    with pytest.raises(ValueError, match="call result.*expected a tensor of rank 1, got rank 2"):
        vm["main"](v)


def test_call_inplace_packed():
    op = pytest.importorskip("minitvm.relax.op.call_inplace")
    tvm.register_func("test_relax_vm.double_inplace", lambda a: np.multiply(a, 2, out=a),
                      override=True)
    x = relax.Var("x", relax.TensorStructInfo([3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit_te(_scale, x)
        z = bb.emit(op.call_inplace_packed("test_relax_vm.double_inplace", y,
                                           inplace_indices=0,
                                           sinfo_args=relax.TensorStructInfo([3], "float32")))
        bb.emit_func_output(z)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    v = np.arange(3, dtype="float32")
    np.testing.assert_allclose(vm["main"](v).numpy(), v * 6)
    np.testing.assert_allclose(v, np.arange(3))  # the input itself is untouched


def test_exported_executable_runs_in_a_fresh_process(sym_vm, tmp_path):
    import subprocess

    ex, _ = sym_vm
    path = str(tmp_path / "fresh.so")
    ex.export_library(path)
    code = (
        "import numpy as np, minitvm as tvm\n"
        "from minitvm.runtime.relax_vm import VirtualMachine\n"
        f"vm = VirtualMachine(tvm.runtime.load_module({path!r}), tvm.cpu())\n"
        "a = np.full((5, 4), 2.0, 'float32'); b = np.ones((5, 4), 'float32')\n"
        "print(float(vm['main'](a, b).numpy().sum()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    assert float(out.stdout.strip()) == 20 * ((2 + 1) * 3 + 1)


def test_tuple_parameter_with_symbolic_fields():
    n = tir.Var("n", "int64")
    t = relax.Var("t", relax.TupleStructInfo([relax.TensorStructInfo([n], "float32"),
                                              relax.TensorStructInfo([n], "float32")]))
    bb = relax.BlockBuilder()
    with bb.function("main", [t]):
        a = bb.emit(relax.TupleGetItem(t, 0))
        b = bb.emit(relax.TupleGetItem(t, 1))
        bb.emit_func_output(bb.emit_te(_add, a, b))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    u, v = np.arange(4, dtype="float32"), np.ones(4, "float32")
    np.testing.assert_allclose(vm["main"]((u, v)).numpy(), u + v)
    with pytest.raises(ValueError, match=r"param=t.*dimension 0 is 3 but the annotation "
                                         r"requires 4"):
        vm["main"]((u, np.ones(3, "float32")))
    with pytest.raises(ValueError, match=r"param=t.*expected a tuple of 2 fields, got 3"):
        vm["main"]((u, v, v))


def test_if_branches_allocate_with_symbolic_shapes():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 2], "float32"))
    flag = relax.Var("flag", relax.TensorStructInfo([], "bool"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, flag]):
        branches = []
        for call in (bb.call_te(_scale, x), bb.call_te(_add, x, x)):
            call = bb.normalize(call)
            v = relax.Var("r", call.struct_info)
            branches.append(bb.normalize(relax.SeqExpr(
                [relax.BindingBlock([relax.VarBinding(v, call)])], v)))
        r = bb.emit(relax.If(flag, branches[0], branches[1]))
        bb.emit_func_output(bb.emit_te(_add, r, x))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for rows in (1, 5):
        a = np.random.rand(rows, 2).astype("float32")
        np.testing.assert_allclose(vm["main"](a, np.array(True)).numpy(), 4 * a, rtol=1e-6)
        np.testing.assert_allclose(vm["main"](a, np.array(False)).numpy(), 3 * a, rtol=1e-6)
