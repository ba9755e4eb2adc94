"""Node attributes and build configuration TVM code reads: virtual_device_, VirtualDevice in
on_device round trips, relay.backend.Executor/Runtime, Target kinds and attributes."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import Executor, Runtime


def test_virtual_device_defaults_and_round_trip():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], x)
    assert x.virtual_device_.is_fully_unconstrained()
    assert f.virtual_device_ == tvm.target.VirtualDevice()
    vd = tvm.target.VirtualDevice(tvm.cpu(0), tvm.target.Target("llvm"))
    assert (vd.device_type_int, vd.virtual_device_id) == (1, 0)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.annotation.on_device(relay.add(x, x), vd))))
    text = mod.astext()
    assert "meta[VirtualDevice][0]" in text
    tvm.ir.assert_structural_equal(relay.parse(text), mod)


def test_executor_and_runtime_configs():
    e = Executor("graph", {"link-params": True})
    assert e.name == "graph" and e["link-params"] is True and "link-params" in e
    assert Executor.list_registered() == ["aot", "graph"]
    assert "interface-api" in Executor.list_registered_options("aot")
    assert Runtime("cpp", {"system-lib": 1})["system-lib"] is True
    with pytest.raises(ValueError, match="no option 'bogus'"):
        Executor("graph", {"bogus": 1})
    with pytest.raises(TypeError, match="takes a int"):
        Executor("aot", {"workspace-byte-alignment": "16"})
    with pytest.raises(ValueError, match="not registered"):
        Runtime("java")
    x = relay.var("x", shape=(3,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    lib = relay.build(mod, "llvm", executor=Executor("graph"), runtime=Runtime("cpp"))
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", np.array([-1.0, 0.0, 2.0], "float32"))
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), [0.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="only the graph executor"):
        relay.build(mod, "llvm", executor=Executor("aot"))


def test_target_kinds_and_attributes():
    t = tvm.target.Target("llvm -mcpu=skylake-avx512 -mattr=+avx2,+fma -num-cores=4",
                          host="llvm")
    assert t.kind.name == "llvm" and t.keys == ["cpu"]
    assert t.attrs["num-cores"] == 4 and t.mattr == ["+avx2", "+fma"] and t.mcpu == \
        "skylake-avx512"
    assert t.host.kind.name == "llvm"
    assert tvm.target.Target(t.export()) == t
    assert "cuda" in tvm.target.Target.list_kinds()
    assert tvm.target.Target("cuda").keys == ["cuda", "gpu"]
    assert tvm.target.Target("vulkan").kind.device_type == 7
    assert "mcpu" in tvm.target.TargetKind.options_from_name("llvm")
    with pytest.raises(ValueError, match="integer"):
        tvm.target.Target("llvm -num-cores=four")
    with pytest.raises(ValueError, match="not defined"):
        tvm.target.Target("tpu")
    with pytest.raises(ValueError, match="only the 'llvm'"):
        relay.build(tvm.IRModule.from_expr(relay.Function([], relay.const(1.0))), "cuda")
