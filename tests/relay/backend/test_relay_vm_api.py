"""The Relay VM's public API as TVM users call it: compile, VirtualMachine (invoke, run,
set_input, invoke_stateful/get_outputs, benchmark), bytecode/stats, save/load_exec,
create_executor("vm"), and clear errors for bad arguments."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime import vm as runtime_vm
from minitvm.runtime.vm import Executable, VirtualMachine


def _two_input_mod():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    y = relay.var("y", shape=(3,), dtype="float32")
    body = relay.Tuple([relay.nn.relu(x + y), relay.sum(x * y, axis=1)])
    return tvm.IRModule.from_expr(relay.Function([x, y], body))


def _args():
    rng = np.random.default_rng(3)
    return rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal(3).astype("float32")


def _check(out, x, y):
    np.testing.assert_allclose(out[0].numpy(), np.maximum(x + y, 0), rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), (x * y).sum(axis=1), rtol=1e-5)


def test_aliases_are_tvms_module_paths():
    assert relay.vm.compile is relay.backend.vm.compile
    assert relay.vm.VirtualMachine is tvm.runtime.vm.VirtualMachine
    assert isinstance(relay.vm.compile(_two_input_mod(), "llvm"), Executable)


def test_invoke_run_kwargs_set_input_and_stateful():
    exe = relay.vm.compile(_two_input_mod(), target="llvm")
    vm = VirtualMachine(exe, tvm.cpu())
    x, y = _args()
    _check(vm.invoke("main", x, y), x, y)
    _check(vm.run(tvm.nd.array(x), tvm.nd.array(y)), x, y)
    _check(vm.run(y=y, x=x), x, y)
    vm.set_input("main", x, y)
    _check(vm.invoke("main"), x, y)
    vm.invoke_stateful("main", x, y)
    outs = vm.get_outputs()
    assert len(outs) == 2 and vm.get_num_outputs() == 2
    _check(outs, x, y)
    assert vm.get_input_index("y") == 1 and vm.get_input_index("nope") == -1
    res = vm.benchmark(tvm.cpu(), x, y, repeat=2, number=2)
    assert res.mean > 0 and len(res.results) == 2


def test_bytecode_and_stats_are_printable():
    exe = relay.vm.compile(_two_input_mod(), target="llvm")
    text = exe.bytecode
    assert text.startswith("VM Function[0]: main(x: Tensor[(2, 3), float32], y: "
                           "Tensor[(3), float32])")
    assert "# reg file size =" in text and "invoke_packed PackedFunc[" in text
    assert "alloc_data" in text and "ret $" in text
    stats = exe.stats
    assert "Globals (#1): [(main, 0)]" in stats and "Primitive ops (#" in stats
    assert all(n.startswith("vm_mod_fused_") for n in exe.primitive_ops)


def test_save_and_load_exec_round_trip():
    w = np.arange(3, dtype="float32")
    mod = _two_input_mod()
    x = mod["main"].params[0]
    mod["main"] = relay.Function(mod["main"].params, relay.Tuple(
        [mod["main"].body, x * relay.const(w)]))
    exe = relay.vm.compile(mod, target="llvm")
    code, lib = exe.save()
    assert isinstance(code, bytes) and set(lib.kernels) == set(exe.primitive_ops)
    loaded = Executable.load_exec(code, lib)
    assert loaded.bytecode == exe.bytecode
    xv, yv = _args()
    out = VirtualMachine(loaded, tvm.cpu()).run(xv, yv)
    _check(out[0], xv, yv)
    np.testing.assert_array_equal(out[1].numpy(), xv * w)
    with pytest.raises(ValueError, match="not a saved Relay VM executable"):
        Executable.load_exec(b"garbage", lib)
    with pytest.raises(ValueError, match="lacks the kernels"):
        Executable.load_exec(code, tvm.runtime.module.GraphLib({}))


def test_create_executor_vm_uses_the_vm():
    x = relay.var("x", shape=(2,))
    body = relay.If(relay.sum(x) > relay.const(0.0), x * relay.const(2.0), x)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    ex = relay.create_executor("vm", mod=mod, device=tvm.cpu(0), target="llvm")
    f = ex.evaluate()
    np.testing.assert_allclose(f(np.array([1.0, 2.0], "float32")).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(np.array([-1.0, -2.0], "float32")).numpy(), [-1.0, -2.0])
    assert isinstance(ex.executable, Executable) and "if $" in ex.executable.bytecode
    # evaluate(fn) and evaluate(expr) as TVM
    y = relay.var("y", shape=(2,))
    g = ex.evaluate(relay.Function([y], y + y))
    np.testing.assert_allclose(g(np.ones(2, "float32")).numpy(), [2.0, 2.0])
    assert float(ex.evaluate(relay.const(3.0) * relay.const(2.0)).numpy()) == 6.0


def test_params_are_bound_as_constants():
    mod = _two_input_mod()
    x, y = _args()
    exe = relay.vm.compile(mod, target="llvm", params={"y": y})
    assert exe.functions[0].params == ["x"]
    _check(VirtualMachine(exe, tvm.cpu()).run(x), x, y)


def test_argument_errors_name_the_parameter():
    vm = VirtualMachine(relay.vm.compile(_two_input_mod(), target="llvm"), tvm.cpu())
    x, y = _args()
    with pytest.raises(ValueError, match=r"main\(\) takes 2 argument\(s\) \(x, y\), got 1"):
        vm.run(x)
    with pytest.raises(ValueError, match=r"argument 'y': expected Tensor\[\(3\), float32\], got "
                                          r"shape \(4\) float32"):
        vm.run(x, np.zeros(4, "float32"))
    with pytest.raises(ValueError, match=r"argument 'x': expected Tensor\[\(2, 3\), float32\], "
                                          r"got shape \(2, 3\) float64"):
        vm.run(x.astype("float64"), y)
    with pytest.raises(ValueError, match="unexpected keyword argument 'z'"):
        vm.run(x, z=y)
    with pytest.raises(ValueError, match="has no function 'nope'"):
        vm.invoke("nope", x, y)
    with pytest.raises(TypeError, match="expects a Relay VM Executable"):
        VirtualMachine(object(), tvm.cpu())


def test_compile_errors():
    with pytest.raises(ValueError, match="no 'main' function"):
        relay.vm.compile(tvm.IRModule(), "llvm")
    with pytest.raises(ValueError, match="only the 'llvm'"):
        relay.vm.compile(_two_input_mod(), target="cuda")
    with pytest.raises(TypeError, match="expects an IRModule"):
        relay.vm.compile("main", "llvm")


def test_no_match_is_a_clear_runtime_error():
    mod = tvm.IRModule()
    p = relay.prelude.Prelude(mod)
    lst, cons, nil = p.mod.get_type("List")
    lv = relay.var("l", relay.TypeCall(lst, [relay.TensorType((), "float32")]))
    h = relay.var("h")
    body = relay.Match(lv, [relay.Clause(
        relay.PatternConstructor(cons, [relay.PatternVar(h), relay.PatternWildcard()]), h)],
        complete=False)
    mod["main"] = relay.Function([lv], body)
    vm = VirtualMachine(relay.vm.compile(mod, "llvm"), tvm.cpu())
    empty = runtime_vm.vm.ADT(nil.tag, [])
    with pytest.raises(RuntimeError, match="no match clause applies"):
        vm.run(empty)
    one = runtime_vm.vm.ADT(cons.tag, [np.array(2.5, "float32"), empty])
    assert float(vm.run(one).numpy()) == 2.5
