"""Native computes of layout_transform, axis-less take and shape_of match their numpy
references (the test session is strict, so a numpy fallback would fail these builds)."""

import numpy as np
import pytest

import minitvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.op.layout import transform_array


def _run(expr, inputs):
    func = relay.Function(relay.analysis.free_vars(expr), expr)
    lib = relay.build(minitvm.IRModule.from_expr(func), target="llvm")
    assert all(k.kind == "native" for k in lib.get_lib().kernels.values())
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    return m.get_output(0).numpy()


@pytest.mark.parametrize("shape,src,dst", [
    ((2, 32, 5, 6), "NCHW", "NCHW16c"),
    ((2, 2, 5, 6, 16), "NCHW16c", "NCHW"),
    ((2, 8, 5, 6), "NCHW", "NHWC"),
    ((1, 2, 3, 3, 4), "NCHW4c", "NCHW8c"),
    ((1, 3, 5, 8), "NHWC", "NCHW4c"),
])
def test_layout_transform(shape, src, dst):
    x = np.random.default_rng(0).random(shape, dtype="float32")
    got = _run(relay.layout_transform(relay.var("x", shape=shape), src, dst), {"x": x})
    np.testing.assert_array_equal(got, transform_array(x, src, dst))


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_without_axis(mode):
    x = np.random.default_rng(1).random((3, 4, 5), dtype="float32")
    i = np.array([[0, 59, -1], [70, 7, 3]], "int32")
    expr = relay.take(relay.var("x", shape=(3, 4, 5)), relay.var("i", shape=(2, 3), dtype="int32"),
                      mode=mode)
    np.testing.assert_array_equal(_run(expr, {"x": x, "i": i}), np.take(x, i, mode=mode))


def test_shape_of():
    x = relay.var("x", shape=(2, 3, 7))
    expr = relay.add(relay.shape_of(x, "int64"), relay.const(1, "int64"))
    with minitvm.transform.PassContext(opt_level=0):  # keep shape_of from being folded
        got = _run(expr, {"x": np.zeros((2, 3, 7), "float32")})
    np.testing.assert_array_equal(got, [3, 4, 8])
