"""relay.build (and the VM compiler) honour an FTVMStrategy registered by user code, as TVM's
TECompiler does: the op's compute is the one the strategy selects for the target (highest plevel;
generic functions dispatch on the target's keys), inside fused kernels too, and the build stops
using it once the registration is gone. Every case computes something the built-in op does not,
so the numbers prove whose compute ran. (Schedules stay minitvm's rule table: the strategy's
schedule function is not called.)"""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te
from minitvm.contrib import graph_executor
from minitvm.relay.op import op as reg
from minitvm.relay.testing.temp_op_attr import TempOpAttr

RNG = np.random.default_rng(17)
A = RNG.standard_normal((4, 5)).astype("float32")


def _scaled(k: float, name: str):
    """An implementation computing ``k * x`` (a compute the op itself never has)."""

    def compute(attrs, inputs, out_type):
        x = inputs[0]
        return [te.compute(x.shape, lambda *i: x(*i) * k, name=name)]

    return compute


def _no_schedule(attrs, outs, target):
    return None


def _strategy(*impls):
    def fstrategy(attrs, inputs, out_type, target):
        s = relay.op.OpStrategy()
        for k, plevel in impls:
            s.add_implementation(
                _scaled(k, f"scale{int(k)}"),
                _no_schedule,
                name=f"scale{int(k)}.user",
                plevel=plevel,
            )
        return s

    return fstrategy


def _mod():
    x = relay.var("x", shape=(4, 5))
    return tvm.IRModule.from_expr(relay.Function([x], relay.negative(x) + relay.const(1.0)))


def _build_run(mod=None):
    mod = mod or _mod()
    with tvm.transform.PassContext(opt_level=3):
        factory = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(factory["default"](tvm.cpu()))
    m.set_input(0, A)
    m.run()
    return m.get_output(0).numpy(), factory


def test_temp_op_attr_strategy_computes_the_fused_kernel():
    out, factory = _build_run()
    np.testing.assert_allclose(out, 1 - A, rtol=1e-6)
    with TempOpAttr("negative", "FTVMStrategy", _strategy((3.0, 10))):
        out, factory = _build_run()
        np.testing.assert_allclose(out, 3 * A + 1, rtol=1e-6)
        lib = factory.get_lib()
        assert lib.native_functions and all(k.kind == "native" for k in lib.kernels.values())
    out, _ = _build_run()  # the registration is gone: no stale kernel or cached build
    np.testing.assert_allclose(out, 1 - A, rtol=1e-6)


def test_the_highest_plevel_implementation_wins():
    with TempOpAttr("negative", "FTVMStrategy", _strategy((2.0, 10), (5.0, 15), (7.0, 12))):
        out, _ = _build_run()
    np.testing.assert_allclose(out, 5 * A + 1, rtol=1e-6)


def test_register_strategy_and_set_attr_as_tvm_code_writes_them():
    op = relay.op.get("negative")
    try:
        reg.register_strategy("negative", _strategy((4.0, 10)), level=11)
        out, _ = _build_run()
        np.testing.assert_allclose(out, 4 * A + 1, rtol=1e-6)
        op.reset_attr("FTVMStrategy")
        op.set_attr("FTVMStrategy", _strategy((6.0, 10)), 12)
        out, _ = _build_run()
        np.testing.assert_allclose(out, 6 * A + 1, rtol=1e-6)
    finally:
        op.reset_attr("FTVMStrategy")
    out, _ = _build_run()
    np.testing.assert_allclose(out, 1 - A, rtol=1e-6)


def test_generic_function_strategy_dispatches_on_the_target_keys():
    """``override_native_generic_func`` + ``.register("cpu")``: llvm's keys include cpu, so the
    cpu body's compute runs, not the default's."""

    @tvm.target.override_native_generic_func("test_user_negative_strategy")
    def negative_strategy(attrs, inputs, out_type, target):
        return _strategy((8.0, 10))(attrs, inputs, out_type, target)

    @negative_strategy.register("cpu", override=True)
    def negative_strategy_cpu(attrs, inputs, out_type, target):
        return _strategy((9.0, 10))(attrs, inputs, out_type, target)

    assert tvm.target.get_native_generic_func("test_user_negative_strategy") is negative_strategy
    with TempOpAttr("negative", "FTVMStrategy", negative_strategy):
        out, _ = _build_run()
    np.testing.assert_allclose(out, 9 * A + 1, rtol=1e-6)
    with tvm.target.Target("cuda"):  # no cuda body: the default
        assert negative_strategy(None, [], None, None).implementations[0].name == "scale8.user"


def test_vm_compile_honours_the_strategy_too():
    with TempOpAttr("negative", "FTVMStrategy", _strategy((3.0, 10))):
        with tvm.transform.PassContext(opt_level=3):
            f = relay.create_executor("vm", mod=_mod(), target="llvm").evaluate()
            out = f(A).numpy()
    np.testing.assert_allclose(out, 3 * A + 1, rtol=1e-6)


def test_generic_func_errors_name_the_function():
    f = tvm.target.generic_func(lambda: 1)
    f.register("cpu")(lambda: 2)
    with pytest.raises(ValueError, match="key 'cpu' is already registered"):
        f.register("cpu")(lambda: 3)
    with tvm.target.Target("llvm"):
        assert f() == 2
    assert f() == 1
    empty = tvm.target.GenericFunc("nothing")
    with pytest.raises(ValueError, match="'nothing' has no body"):
        empty()


def _custom_op(name: str):
    """An op registered from Python as TVM code does: ``register`` then the builder methods."""
    from minitvm.ir.op import Op

    if name in Op.list_op_names():
        return relay.op.get(name)
    reg.register(name, "scale by five")
    op = relay.op.get(name)
    op.set_num_inputs(1)
    op.add_argument("data", "Tensor", "The input data tensor.")
    op.add_type_rel("Identity")
    op.set_support_level(1)
    reg.register_pattern(name, reg.OpPattern.ELEMWISE)
    reg.register_stateful(name, False)
    reg.register_strategy(name, _strategy((5.0, 10)))
    return op


def test_an_op_registered_from_python_builds_with_its_strategy_alone():
    """The op has no compute and no numpy reference of its own: relay.build lowers it (fused
    with the add that follows) natively through its strategy."""
    op = _custom_op("test.user_scale5")
    assert op.num_inputs == 1 and op.support_level == 1 and op.arguments[0][0] == "data"
    x = relay.var("x", shape=(4, 5))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Call(op, [x]) + relay.const(1.0)))
    out, factory = _build_run(mod)
    np.testing.assert_allclose(out, 5 * A + 1, rtol=1e-6)
    assert all(k.kind == "native" for k in factory.get_lib().kernels.values())
    with pytest.raises(ValueError, match="no type relation named 'NoSuchRel'"):
        op.add_type_rel("NoSuchRel")
