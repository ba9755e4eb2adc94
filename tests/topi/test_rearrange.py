"""``nn.depth_to_space`` / ``nn.space_to_depth`` lowered natively through their TE computes
(``topi.rearrange``): Relay builds with no numpy kernel, fused with an elementwise neighbour,
against PyTorch's pixel_shuffle / pixel_unshuffle and numpy's ONNX definitions (DCR, CRD), in
NCHW and NHWC, batch > 1, odd sizes; bad modes and layouts are clear errors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the reference results come from `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relay, te  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.topi import rearrange  # noqa: E402


def _depth_to_space_np(x, b, mode):  # NCHW, as ONNX's DepthToSpace defines it
    n, c, h, w = x.shape
    if mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def _space_to_depth_np(x, b):  # NCHW, ONNX's SpaceToDepth
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


def _build_run(y, x_var, data):
    mod = tvm.IRModule.from_expr(relay.Function([x_var], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", data)
    g.run()
    return g.get_output(0).numpy()


def _to(layout, a):
    return a if layout == "NCHW" else a.transpose(0, 2, 3, 1)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("shape, b", [((2, 18, 5, 7), 3), ((3, 8, 1, 9), 2), ((1, 4, 6, 6), 2)])
def test_depth_to_space_matches_numpy(layout, mode, shape, b):
    data = np.random.default_rng(0).standard_normal(shape).astype("float32")
    x = relay.var("x", shape=_to(layout, data).shape)
    y = relay.nn.depth_to_space(relay.nn.relu(x), b, layout=layout, mode=mode) * \
        relay.const(2.0)
    out = _build_run(y, x, _to(layout, data))
    ref = _depth_to_space_np(np.maximum(data, 0), b, mode) * 2
    np.testing.assert_array_equal(out, _to(layout, ref))


@pytest.mark.parametrize("shape, b", [((2, 8, 6, 10), 2), ((1, 3, 9, 6), 3)])
def test_crd_is_torch_pixel_shuffle(shape, b):
    data = np.random.default_rng(1).standard_normal(shape).astype("float32")
    x = relay.var("x", shape=shape)
    y = relay.nn.space_to_depth(relay.nn.depth_to_space(x, 1, mode="CRD"), 1)  # identity
    np.testing.assert_array_equal(_build_run(y, x, data), data)
    big = np.random.default_rng(2).standard_normal(
        (shape[0], shape[1] * b * b, *shape[2:])).astype("float32")
    x = relay.var("x", shape=big.shape)
    out = _build_run(relay.nn.depth_to_space(x, b, mode="CRD"), x, big)
    np.testing.assert_array_equal(out, torch.nn.functional.pixel_shuffle(
        torch.from_numpy(big), b).numpy())


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("shape, b", [((2, 3, 6, 10), 2), ((3, 5, 9, 3), 3), ((1, 1, 4, 4), 4)])
def test_space_to_depth_matches_numpy(layout, shape, b):
    data = np.random.default_rng(3).standard_normal(shape).astype("float32")
    x = relay.var("x", shape=_to(layout, data).shape)
    y = relay.nn.space_to_depth(relay.sigmoid(x), b, layout=layout)
    out = _build_run(y, x, _to(layout, data))
    ref = _space_to_depth_np(1 / (1 + np.exp(-data)), b)
    np.testing.assert_allclose(out, _to(layout, ref), rtol=1e-6, atol=1e-7)


def test_round_trip_and_one_kernel():
    data = np.random.default_rng(4).standard_normal((2, 12, 4, 6)).astype("float32")
    x = relay.var("x", shape=data.shape)
    y = relay.nn.depth_to_space(relay.nn.space_to_depth(relay.exp(x), 2), 2, mode="DCR")
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    assert len(lib.get_lib().kernels) == 1  # the three ops fuse into one injective kernel
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", data)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), np.exp(data), rtol=1e-6)


def test_errors():
    x = te.placeholder((1, 8, 2, 2), name="x")
    with pytest.raises(ValueError, match="mode must be DCR or CRD"):
        rearrange.depth_to_space(x, 2, mode="XYZ")
    with pytest.raises(ValueError, match="layout must be NCHW or NHWC"):
        rearrange.space_to_depth(x, 2, layout="CHWN")
    v = relay.var("x", shape=(1, 8, 2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([v], relay.nn.depth_to_space(v, 2, mode="XYZ")))
    with pytest.raises(TypeError, match="mode must be DCR or CRD"):
        relay.transform.InferType()(mod)


@pytest.mark.parametrize("op, mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"),
                                      ("SpaceToDepth", None)])
def test_onnx_import_matches_onnxruntime(op, mode):
    """The ONNX importer maps static DepthToSpace / SpaceToDepth onto the ops (one kernel)."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    shape = (2, 18, 6, 9) if op == "DepthToSpace" else (2, 5, 9, 6)
    attrs = {"blocksize": 3, **({"mode": mode} if mode else {})}
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    data = np.random.default_rng(5).standard_normal(shape).astype("float32")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": data})[0]
    mod, params = relay.frontend.from_onnx(onnx.load_from_string(model.SerializeToString()),
                                           {"x": shape})
    name = "nn.depth_to_space" if op == "DepthToSpace" else "nn.space_to_depth"
    assert name in mod.astext()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", data)
    g.run()
    np.testing.assert_array_equal(g.get_output(0).numpy(), want)
