"""PlanDevices inside relay.build: annotations resolving to the one CPU still compile and run;
a device minitvm cannot execute is named, at PlanDevices time where TVM's pass rejects it too
(no target for it) and at build time where TVM's pass accepts it (a VirtualDevice with a target).
"""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay import transform
from minitvm.target import Target, VirtualDevice

RNG = np.random.default_rng(3)


def _annotated_program():
    x, y = relay.var("x", shape=(4,)), relay.var("y", shape=(4,))
    a = relay.annotation.on_device(relay.add(x, y), tvm.cpu())
    b = relay.device_copy(relay.negative(a), tvm.cpu(), tvm.cpu())
    lv = relay.Var("l")
    body = relay.Let(lv, relay.multiply(b, y),
                     relay.annotation.on_device(relay.subtract(lv, x), tvm.cpu()))
    return tvm.IRModule.from_expr(relay.Function([x, y], body))


def _reference(x, y):
    return (-(x + y) * y) - x


def test_default_config_plans_everything_on_the_cpu():
    mod = transform.InferType()(_annotated_program())
    out = transform.InferType()(transform.PlanDevices()(mod))
    cpu = VirtualDevice(tvm.cpu(), Target("llvm"))
    f = out["main"]
    assert f.virtual_device_ == cpu and all(p.virtual_device_ == cpu for p in f.params)
    # the CPU->CPU copy is gone; the let-bound value keeps its fixed annotation (TVM's form)
    x, y = relay.var("x", shape=(4,)), relay.var("y", shape=(4,))
    x.virtual_device_ = y.virtual_device_ = cpu
    lv = relay.Var("l")
    value = relay.annotation.on_device(relay.multiply(relay.negative(relay.add(x, y)), y), cpu,
                                       constrain_result=True)
    expected = relay.Function([x, y], relay.Let(lv, value, relay.subtract(lv, x)))
    expected.virtual_device_ = cpu
    tvm.ir.assert_structural_equal(out["main"], transform.InferType()(
        tvm.IRModule.from_expr(expected))["main"], map_free_vars=True)


@pytest.mark.parametrize("kind", ["graph", "vm", "debug"])
def test_cpu_annotations_build_and_run(kind):
    x, y = (RNG.standard_normal(4).astype("float32") for _ in range(2))
    with tvm.transform.PassContext(opt_level=3):
        f = relay.create_executor(kind, mod=_annotated_program(), target="llvm").evaluate()
    np.testing.assert_allclose(f(x, y).numpy(), _reference(x, y), rtol=1e-6)


def test_relay_build_with_annotations():
    x, y = (RNG.standard_normal(4).astype("float32") for _ in range(2))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(_annotated_program(), "llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.set_input("y", y)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _reference(x, y), rtol=1e-6)


def test_a_device_without_a_target_fails_in_plan_devices():
    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(relay.Function(
        [x], relay.annotation.on_device(relay.negative(x), tvm.cuda())))
    with pytest.raises(ValueError, match=r"No target is specified for device cuda"):
        relay.build(mod, "llvm")


@pytest.mark.parametrize("build", ["relay.build", "relay.vm.compile"])
def test_a_planned_gpu_value_is_named_at_build_time(build):
    gpu = VirtualDevice(tvm.cuda(), Target("cuda"))
    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(relay.Function(
        [x], relay.annotation.on_device(relay.negative(x), gpu)))
    planned = transform.PlanDevices()(transform.InferType()(mod))  # accepted, as in TVM
    assert planned["main"].virtual_device_ == gpu
    with pytest.raises(ValueError, match=rf"{build}: .*cuda \(device type 2\).*CPU only"):
        if build == "relay.build":
            relay.build(mod, "llvm")
        else:
            relay.vm.compile(mod, "llvm")


def test_fallback_device_type_sets_the_default():
    x = relay.var("x", shape=(4,))
    mod = transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.negative(x))))
    ctx = tvm.transform.PassContext(config={"relay.fallback_device_type": 2})
    config = tvm.target.make_compilation_config(ctx, [Target("llvm"), Target("cuda")])
    out = transform.PlanDevices(config)(mod)
    assert out["main"].virtual_device_.device_type == 2
    with ctx, Target("llvm"):
        with pytest.raises(ValueError, match="No target is specified for device cuda"):
            transform.PlanDevices()(mod)


def test_host_program_drops_on_device_and_leaves_an_unannotated_module_as_it_is():
    """host_program rebuilds functions only where the host check met an on_device call; the
    check (and the skip) hold on a 100,000-call chain at the default recursion limit."""
    from minitvm.relay.analysis.properties import walk
    from minitvm.relay.transform.plan_devices import host_program

    def on_device_calls(mod):
        return [e for e in walk(mod["main"]) if isinstance(e, relay.Call)
                and getattr(e.op, "name", None) == "on_device"]

    annotated = transform.InferType()(_annotated_program())
    assert on_device_calls(annotated)
    dropped = host_program(annotated)
    assert not on_device_calls(dropped) and dropped["main"] is not annotated["main"]
    x = relay.var("x", shape=(2,))
    y = x
    for _ in range(100_000):
        y = relay.negative(y)
    plain = tvm.IRModule.from_expr(relay.Function([x], y))
    assert host_program(plain) is plain
