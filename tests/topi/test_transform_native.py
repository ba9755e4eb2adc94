"""Native computes of layout_transform, axis-less take, shape_of and mirrored padding match
their numpy references (the test session is strict, so a numpy fallback would fail these
builds)."""

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


@pytest.mark.parametrize("op,mode,np_mode", [
    ("mirror_pad", "SYMMETRIC", "symmetric"),
    ("mirror_pad", "REFLECT", "reflect"),
    ("pad", "reflect", "reflect"),
    ("pad", "edge", "edge"),
])
def test_mirrored_padding(op, mode, np_mode):
    """ReflectionPad / ReplicationPad (style transfer, CycleGAN) run natively, fused with what
    follows; the widest pads each mode allows, on a size-1 axis too."""
    shape = (2, 3, 5, 1)
    widest = 5 if np_mode == "symmetric" else 4
    pw = ((0, 0), (1, 2), (widest, 2), (0, 0) if np_mode != "edge" else (3, 1))
    x = np.random.default_rng(2).standard_normal(shape).astype("float32")
    v = relay.var("x", shape=shape)
    y = relay.nn.mirror_pad(v, pw, mode) if op == "mirror_pad" else \
        relay.nn.pad(v, pw, pad_mode=mode)
    got = _run(relay.nn.relu(y), {"x": x})
    np.testing.assert_array_equal(got, np.maximum(np.pad(x, pw, np_mode), 0))


def test_unknown_pad_mode_is_a_clear_error():
    from minitvm.topi.transform import _mirrored

    x = minitvm.te.placeholder((3,), name="x")
    with pytest.raises(ValueError, match="pad mode 'wrap'"):
        _mirrored(x, ((1, 1),), "wrap", (5,))


def test_one_hot_fused_with_an_elementwise_consumer():
    """one_hot's int32-dim shape made int64 stays constant (a consumer reads it with
    ``ishape``): a fused one_hot -> cast -> multiply lowers natively, on every axis
    (the ONNX OneHot of an Evoformer's sequence features)."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    x = relay.var("x", shape=(2, 5), dtype="int64")
    xv = np.array([[0, 3, 6, 7, -1], [2, 2, 1, 5, 4]])
    for dt, axis in [("int64", -1), ("float32", 0), ("float32", 1)]:
        h = relay.one_hot(x, relay.const(np.array(3, dt)), relay.const(np.array(-1, dt)), 7,
                          axis, dt)
        mod = tvm.IRModule.from_expr(relay.Function(
            [x], relay.cast(h, "float32") * relay.const(2.0)))
        with tvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
            lib = relay.build(mod, target="llvm")
        g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        g.set_input("x", xv)
        g.run()
        classes = np.arange(7).reshape([-1 if d == axis % 3 else 1 for d in range(3)])
        ref = np.where(np.expand_dims(xv, axis) == classes, 3.0, -1.0) * 2.0
        np.testing.assert_array_equal(g.get_output(0).numpy(), ref)
