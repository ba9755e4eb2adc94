"""Running and inspecting built models the ways TVM's how-tos show, with
``import minitvm as tvm``: the debug graph executor (``tvm.contrib.debugger.debug_executor``:
per-node times, dumps, node outputs, ``profile``), the Relay VM (``relay.vm.compile`` +
``runtime.vm.VirtualMachine``, save/load of the executable, ``benchmark``) and the VM profiler."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, runtime
from minitvm.contrib.debugger import debug_executor
from minitvm.relay import testing


@pytest.fixture(scope="module")
def mlp():
    mod, params = testing.mlp.get_workload(batch_size=1, num_classes=10, image_shape=(1, 8, 8))
    data = np.random.default_rng(0).standard_normal((1, 1, 8, 8)).astype("float32")
    ref = relay.create_executor("debug", mod=mod, device=tvm.cpu(), target="llvm") \
        .evaluate()(data, **params).numpy()
    return mod, params, data, ref


def test_debug_executor_run_dump_and_node_outputs(mlp, tmp_path, capsys):
    mod, params, data, ref = mlp
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    dev = tvm.cpu()
    m = debug_executor.GraphModuleDebug(lib["debug_create"]("default", dev), [dev],
                                        lib.get_graph_json(), dump_root=str(tmp_path))
    m.set_input("data", tvm.nd.array(data))
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-6)
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:4] == ["Node", "Name", "Ops", "Time(us)"]
    nodes = [n for n in json.loads(lib.get_graph_json())["nodes"]
             if n["op"] == "tvm_op" and n["attrs"]["func_name"] != "__nop"]  # (not reshapes)
    assert all(n["name"] in table for n in nodes)
    dump = tmp_path / "_tvmdbg_device_CPU_0"
    graph = json.loads((dump / "_tvmdbg_graph_dump.json").read_text())
    timed = [n for n in graph["nodes"] if "time_us" in n]
    assert len(timed) == len(nodes) and all(n["time_us"] >= 0 for n in timed)
    tensors = relay.load_param_dict((dump / "output_tensors.params").read_bytes())
    last = nodes[-1]["name"]
    np.testing.assert_allclose(tensors[last].numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.debug_get_output(last).numpy(), ref, rtol=1e-5, atol=1e-6)
    assert m.debug_get_output(0).shape == tensors[nodes[0]["name"]].shape
    with pytest.raises(ValueError, match="no node named 'nope'"):
        m.debug_get_output("nope")


def test_debug_executor_profile_and_individual_times(mlp):
    mod, params, data, ref = mlp
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = debug_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cpu())
    m.set_input(**lib.get_params())
    report = m.profile(data=data)
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-6)
    assert len(report.calls) == len(m._plan["steps"])
    text = str(report)
    assert "Duration (us)" in text and "Total" in text
    times = m.run_individual(number=2, repeat=2)
    assert len(times) == len(report.calls) and all(t > 0 for t in times)
    res = m.run_individual_node(0, number=2, repeat=3)
    assert len(res.results) == 3
    with pytest.raises(ValueError, match="out of range"):
        m.run_individual_node(len(times))


def test_relay_vm_compile_run_save_load(mlp, tmp_path):
    mod, params, data, ref = mlp
    with tvm.transform.PassContext(opt_level=3):
        vm_exec = relay.vm.compile(mod, target="llvm", params=params)
    dev = tvm.cpu()
    vm = runtime.vm.VirtualMachine(vm_exec, dev)
    out = vm.run(tvm.nd.array(data, dev))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    vm.set_input("main", data)
    np.testing.assert_allclose(vm.invoke("main").numpy(), ref, rtol=1e-5, atol=1e-6)
    res = vm.benchmark(dev, data, func_name="main", number=2, repeat=2)
    assert len(res.results) == 2 and str(res).startswith("Execution time summary:")
    code, lib = vm_exec.save()
    path = os.path.join(tmp_path, "lib.so")
    lib.export_library(path)
    loaded_lib = tvm.runtime.load_module(path)  # the kernels alone: no graph in the archive
    assert isinstance(loaded_lib, tvm.runtime.module.GraphLib)
    assert sorted(loaded_lib.kernels) == sorted(lib.kernels)
    loaded = runtime.vm.Executable.load_exec(code, loaded_lib)
    vm2 = runtime.vm.VirtualMachine(loaded, dev)
    np.testing.assert_allclose(vm2.run(data).numpy(), ref, rtol=1e-5, atol=1e-6)


def test_vm_profiler(mlp):
    from minitvm.runtime import profiler_vm

    mod, params, data, ref = mlp
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = profiler_vm.VirtualMachineProfiler(exe, tvm.cpu())
    report = vm.profile(data, func_name="main")
    assert any("dense" in c["Name"] for c in report.calls)
    assert "Duration (us)" in str(report)
