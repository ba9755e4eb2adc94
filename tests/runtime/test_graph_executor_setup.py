"""Setting up a graph executor: the graph JSON is parsed and checked once per factory (not per
executor), per-kernel Python calls are made only when a run needs them, and a 100,000-step graph
sets up and runs through the native step loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import build_cache
from minitvm.runtime.graph_check import GraphError
from minitvm.runtime.graph_executor import GraphExecutorFactoryModule, GraphModule
from minitvm.runtime.module import GraphLib


def _add_relu():
    """x [2, 3] -> relu(x + 0.5): two kernels (opt_level 0), the constant a graph input."""
    x = relay.var("x", shape=(2, 3))
    y = relay.nn.relu(relay.add(x, relay.const(np.float32(0.5))))
    cfg = {build_cache.CONFIG_KEY: False}
    with tvm.transform.PassContext(opt_level=0, config=cfg):
        return relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")


def test_executors_of_one_factory_share_one_checked_plan(tmp_path):
    lib = _add_relu()
    a = GraphModule(lib["default"](tvm.cpu(0)))
    b = GraphModule(lib["default"](tvm.cpu(0)))
    assert a._plan is b._plan and a.graph is b.graph
    path = str(tmp_path / "lib.so")
    lib.export_library(path)
    loaded = tvm.runtime.load_module(path)
    graph, plan = loaded.checked_graph()  # what load_module checked, not checked again
    assert GraphModule(loaded["default"](tvm.cpu(0)))._plan is plan
    xv = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    for m in (a, b, GraphModule(loaded["default"](tvm.cpu(0)))):
        m.set_input("x", xv)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), np.maximum(xv + 0.5, 0), rtol=1e-6)


def test_a_graph_replaced_after_the_first_check_is_checked_again():
    lib = _add_relu()
    GraphModule(lib["default"](tvm.cpu(0)))
    g = json.loads(lib.get_graph_json())
    g["nodes"][3]["attrs"]["func_name"] = "no_such_kernel"
    lib.graph_json = json.dumps(g)
    with pytest.raises(GraphError, match="no_such_kernel"):
        GraphModule(lib["default"](tvm.cpu(0)))


def test_per_kernel_calls_are_made_only_for_a_python_loop_run():
    lib = _add_relu()
    m = GraphModule(lib["default"](tvm.cpu(0)))
    st = m._state()
    assert st.entry is not None and st._steps is None  # the whole-graph entry needs none
    xv = np.full((2, 3), -1.0, "float32")
    m.set_input("x", xv)
    m.run()
    assert st._steps is None
    st.entry = None  # kernel by kernel: each step's argument pointers are a slice of the table
    steps = m._kernel_calls(st)
    assert [s[0] for s in steps] == ["native", "native"]
    m.set_input_zero_copy("x", np.full((2, 3), 2.0, "float32"))
    m.run()  # the rebound input reaches the step through the shared table
    np.testing.assert_allclose(m.get_output(0).numpy(), np.full((2, 3), 2.5))


def _chain_graph(small: dict, n: int) -> dict:
    """``small``'s add and relu kernels repeated: n steps alternating add(prev, p0) and
    relu(prev), two storages used in turn (what a memory plan gives a chain)."""
    add, relu = small["nodes"][2], small["nodes"][3]
    nodes = small["nodes"][:2]
    for i in range(n):
        node = dict(add if i % 2 == 0 else relu)
        node["inputs"] = [[i + 1 if i else 0, 0, 0]] + ([[1, 0, 0]] if i % 2 == 0 else [])
        nodes.append(node)
    attrs = small["attrs"]
    return {"nodes": nodes, "arg_nodes": [0, 1], "heads": [[n + 1, 0, 0]],
            "node_row_ptr": list(range(n + 3)),
            "attrs": {"storage_id": ["list_int", [0, 1] + [2 + i % 2 for i in range(n)]],
                      "shape": ["list_shape", [[2, 3], []] + [[2, 3]] * n],
                      "dltype": ["list_str", ["float32"] * (n + 2)],
                      "minitvm_storage_bytes": ["list_int", [64] * 4],
                      "minitvm_workspace_bytes": attrs["minitvm_workspace_bytes"]}}


def test_a_100k_step_graph_sets_up_and_runs():
    small = _add_relu()
    n = 100_000
    graph = json.dumps(_chain_graph(json.loads(small.get_graph_json()), n))
    lib = GraphLib(small.get_lib().kernels)  # no whole-graph entry: the native step loop
    factory = GraphExecutorFactoryModule(graph, lib, small.get_params())
    m = GraphModule(factory["default"](tvm.cpu(0)))
    assert m._step_loop is not None and len(m._step_loop) == n
    xv = np.random.default_rng(1).standard_normal((2, 3)).astype("float32")
    m.set_input("x", xv)
    m.run()
    expected = np.maximum(xv + 0.5, 0) + 0.5 * (n // 2 - 1)
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-6)
