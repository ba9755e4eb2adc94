"""Concatenations the memory plan runs in place: the parts' producers write into the output's
storage at their byte offsets and the concatenation node becomes ``__concat`` (no kernel)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from relay_build import run_against_interpreter

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime.graph_check import GraphError, check_graph

rng = np.random.default_rng(0)


def _w(*shape):
    """A weight of ``shape``, the same on every call (the programs are built twice: compiled
    and interpreted)."""
    w = np.random.default_rng(list(shape)).standard_normal(shape).astype("float32")
    return relay.const(w * 0.3)


def _fire(x, c, squeeze=4):
    """SqueezeNet's fire module: a 1x1 squeeze, then 1x1 and 3x3 expands concatenated."""
    s = relay.nn.relu(relay.nn.conv2d(x, _w(squeeze, c, 1, 1)))
    e1 = relay.nn.relu(relay.nn.conv2d(s, _w(8, squeeze, 1, 1)))
    e3 = relay.nn.relu(relay.nn.conv2d(s, _w(8, squeeze, 3, 3), padding=(1, 1)))
    return relay.concatenate([e1, e3], 1)


def _graph(fn, *arrays):
    """The built graph JSON of ``fn(*vars)`` (as ``relay_build.build_run`` builds it)."""
    vs = [relay.var(f"x{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = tvm.IRModule.from_expr(relay.Function(vs, fn(*vs)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    return lib, json.loads(lib.get_graph_json())


def _concat_nodes(graph):
    """(func_name, input entries, output entry) of each concatenation node."""
    row_ptr = graph["node_row_ptr"]
    out = []
    for nid, n in enumerate(graph["nodes"]):
        if n["op"] != "null" and "concatenate" in n["name"]:
            ins = [row_ptr[i] + k for i, k, *_ in n["inputs"]]
            out.append((n["attrs"]["func_name"], ins, row_ptr[nid]))
    return out


def _check(fn, *arrays):
    got, ref = run_against_interpreter(fn, *arrays)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_fire_module_concatenates_in_place():
    def fn(x):  # the concatenation is read by a conv: an intermediate
        return relay.nn.conv2d(_fire(x, 6), _w(5, 16, 1, 1))

    x = rng.standard_normal((1, 6, 8, 8)).astype("float32")
    _check(fn, x)
    _, g = _graph(fn, x)
    ((fname, ins, out),) = _concat_nodes(g)
    assert fname == "__concat"
    sids = g["attrs"]["storage_id"][1]
    offsets = g["attrs"]["minitvm_storage_offset"][1]
    assert [sids[e] for e in ins] == [sids[out]] * 2
    assert [offsets[e] for e in ins] == [0, 8 * 8 * 8 * 4] and offsets[out] == 0


def test_chained_fire_modules_and_export(tmp_path):
    def fn(x):
        return relay.nn.conv2d(_fire(_fire(x, 6), 16), _w(3, 16, 1, 1))

    x = rng.standard_normal((1, 6, 8, 8)).astype("float32")
    _check(fn, x)
    lib, g = _graph(fn, x)
    assert [f for f, _, _ in _concat_nodes(g)] == ["__concat", "__concat"]
    path = str(tmp_path / "fire.tar")
    lib.export_library(path)
    loaded = tvm.runtime.load_module(path)
    want = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    got = graph_executor.GraphModule(loaded["default"](tvm.cpu()))
    for m in (want, got):
        m.set_input("x0", x)
        m.run()
    np.testing.assert_array_equal(got.get_output(0).numpy(), want.get_output(0).numpy())


def _shared_part(x):  # a part also read by the add
    a = relay.nn.relu(relay.nn.conv2d(x, _w(8, 6, 1, 1)))
    b = relay.nn.relu(relay.nn.conv2d(x, _w(8, 6, 3, 3), padding=(1, 1)))
    return relay.nn.conv2d(relay.concatenate([a, b], 1), _w(4, 16, 1, 1)) + \
        relay.sum(a, axis=1, keepdims=True)


def _unaligned(x):  # the second part starts 3 * 5 * 5 * 4 = 300 bytes in
    a = relay.nn.relu(relay.nn.conv2d(x, _w(3, 6, 1, 1)))
    b = relay.nn.relu(relay.nn.conv2d(x, _w(4, 6, 1, 1)))
    return relay.nn.conv2d(relay.concatenate([a, b], 1), _w(2, 7, 1, 1))


def _not_leading_axis(x):  # axis 2 with 6 channels before it: the parts interleave
    a = relay.nn.relu(relay.nn.conv2d(x, _w(6, 6, 1, 1)))
    b = relay.nn.relu(relay.nn.conv2d(x, _w(6, 6, 3, 3), padding=(1, 1)))
    return relay.nn.conv2d(relay.concatenate([a, b], 2), _w(2, 6, 1, 1))


def _graph_inputs(x):  # parts that are not kernel outputs
    return relay.nn.conv2d(relay.concatenate([x, x * relay.const(2.0)], 1), _w(2, 12, 1, 1))


def _graph_output(x):
    return _fire(x, 6)


@pytest.mark.parametrize("fn", [_shared_part, _unaligned, _not_leading_axis, _graph_inputs,
                                _graph_output], ids=lambda f: f.__name__.strip("_"))
def test_concatenation_kept_as_a_kernel(fn):
    shape = (1, 6, 5, 5) if fn is _unaligned else (1, 6, 8, 8)
    x = rng.standard_normal(shape).astype("float32")
    _check(fn, x)
    _, g = _graph(fn, x)
    names = [f for f, _, _ in _concat_nodes(g)]
    assert names and "__concat" not in names
    assert "minitvm_storage_offset" not in g["attrs"]


def _two_fires(x):
    return relay.nn.conv2d(_fire(x, 6), _w(5, 16, 1, 1))


def _first_concat_graph():
    """(lib, graph, the first in-place concatenation's input entries) of ``_two_fires``."""
    lib, g = _graph(_two_fires, rng.standard_normal((1, 6, 8, 8)).astype("float32"))
    _, ins, _ = _concat_nodes(g)[0]
    return lib, g, ins


def test_offset_past_the_storage_is_refused():
    lib, g, ins = _first_concat_graph()
    g["attrs"]["minitvm_storage_offset"][1][ins[1]] += 64
    with pytest.raises(GraphError, match="at offset"):
        check_graph(g, lib.get_lib().kernels)


def test_concat_whose_parts_are_not_in_its_storage_is_refused():
    lib, g, ins = _first_concat_graph()
    offsets = g["attrs"]["minitvm_storage_offset"][1]
    offsets[ins[0]], offsets[ins[1]] = offsets[ins[1]], offsets[ins[0]]
    with pytest.raises(GraphError, match="consecutive pieces"):
        check_graph(g, lib.get_lib().kernels)
