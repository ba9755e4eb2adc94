"""The graph JSON's text: one node and one attribute per line, read back to the same graph."""

import json

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend.graph_executor_codegen import format_graph_json


def test_graph_json_has_a_line_per_node_and_attribute_and_loads_back():
    x = relay.var("x", shape=(1, 4))
    f = relay.Function([x], relay.nn.relu(relay.add(x, relay.const(np.ones((1, 4), "float32")))))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    text = lib.get_graph_json()
    graph = json.loads(text)
    lines = text.splitlines()
    assert lines[0] == "{" and lines[1] == '  "nodes": [' and lines[-1] == "}"
    node_lines = lines[2:2 + len(graph["nodes"])]
    assert [json.loads(ln.strip().rstrip(",")) for ln in node_lines] == graph["nodes"]
    assert '  "node_row_ptr": [0, 1, 2, 3]' in lines
    assert '    "dltype": ["list_str", ["float32", "float32", "float32"]],' in lines
    m = graph_executor.create(text, lib.get_lib(), tvm.cpu(0))
    m.set_input(**lib.get_params())
    m.run(x=np.full((1, 4), -3.0, "float32"))
    np.testing.assert_array_equal(m.get_output(0).numpy(), np.zeros((1, 4), "float32"))


def test_format_round_trips_empty_and_nested_values():
    for graph in ({}, {"nodes": []}, {"nodes": [], "attrs": {}},
                  {"nodes": [{"op": "null", "name": "a\"b", "inputs": []}], "arg_nodes": [0],
                   "attrs": {"shape": ["list_shape", [[1, 2]]]}, "node_row_ptr": [0, 1]}):
        assert json.loads(format_graph_json(graph)) == graph


def test_a_100k_node_graph_formats_without_recursion():
    nodes = [{"op": "null", "name": "x", "inputs": []}] + [
        {"op": "tvm_op", "name": f"f{i}", "inputs": [[i - 1, 0, 0]]} for i in range(1, 100_000)]
    graph = {"nodes": nodes, "node_row_ptr": list(range(100_001))}
    assert json.loads(format_graph_json(graph)) == graph
