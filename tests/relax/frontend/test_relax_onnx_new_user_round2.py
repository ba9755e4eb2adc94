"""ONNX graphs of the second round of new-user architectures (exported with a dynamic batch
axis) through the Relax importer: DepthToSpace / SpaceToDepth with symbolic batch and spatial
dims (ESPCN's PixelShuffle), ReduceProd / ReduceSum of a known shape folded so a Range built on
``numel`` keeps a symbolic length (EmbeddingBag's export), and a Loop whose trip count is the
symbolic batch size. Checked against ONNX Runtime at several sizes of one build."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, tir  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, inits=None):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _check(model, shapes, dtype="float32"):
    """Build once, run at every shape in ``shapes`` against ONNX Runtime."""
    mod = from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    for k, shape in enumerate(shapes):
        x = np.random.default_rng(k).standard_normal(shape).astype(dtype)
        got = vm["main"](tvm.nd.array(x))
        got = got.numpy() if hasattr(got, "numpy") else got[0].numpy()
        np.testing.assert_allclose(got, sess.run(None, {name: x})[0], rtol=1e-6, atol=1e-6)
    return mod


@pytest.mark.parametrize("op, mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"),
                                      ("SpaceToDepth", "DCR")])
def test_depth_space_with_symbolic_batch_and_spatial_dims(op, mode):
    attrs = {"blocksize": 2} if op == "SpaceToDepth" else {"blocksize": 2, "mode": mode}
    cout = ["c2", 2, "h2", "w2"] if op == "DepthToSpace" else ["n", 32, "h2", "w2"]
    model = _model([helper.make_node(op, ["x"], ["y"], **attrs)],
                   [helper.make_tensor_value_info("x", F, ["n", 8, "h", "w"])],
                   [helper.make_tensor_value_info("y", F, cout)])
    _check(model, [(1, 8, 4, 6), (3, 8, 6, 2)])


def test_depth_to_space_needs_a_static_channel_count():
    model = _model([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)],
                   [helper.make_tensor_value_info("x", F, ["n", "c", 4, 4])],
                   [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(ValueError, match="static channel count"):
        from_onnx(model)


def test_espcn_pixel_shuffle_with_a_dynamic_batch():
    torch = pytest.importorskip("torch")
    from torch import nn

    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.Tanh(), nn.Conv2d(16, 9, 3, padding=1),
                        nn.PixelShuffle(3)).eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.randn(1, 1, 12, 10),), buf, dynamo=False,
                          opset_version=17, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    _check(onnx.load_from_string(buf.getvalue()), [(1, 1, 12, 10), (3, 1, 12, 10)])


@pytest.mark.parametrize("reduce, step", [("ReduceProd", 3), ("ReduceSum", 1)])
def test_reduce_of_a_shape_is_folded_and_keeps_range_symbolic(reduce, step):
    """Range(0, reduce(Shape(x)), step) for x of shape (n, 6): ``numel`` (n * 6, the offsets of
    an exported EmbeddingBag) or n + 6; the range's length stays symbolic."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node(reduce, ["s", "axis0"], ["total"], keepdims=0)
             if reduce == "ReduceSum" else  # opset 17: only ReduceSum takes axes as an input
             helper.make_node(reduce, ["s"], ["total"], keepdims=0, axes=[0]),
             helper.make_node("Range", ["zero", "total", "step"], ["r"]),
             helper.make_node("Cast", ["r"], ["y"], to=F)]
    inits = {"axis0": np.array([0], "int64"), "zero": np.array(0, "int64"),
             "step": np.array(step, "int64")}
    model = _model(nodes, [helper.make_tensor_value_info("x", F, ["n", 6])],
                   [helper.make_tensor_value_info("y", F, None)], inits)
    mod = _check(model, [(1, 6), (4, 6), (3, 6)])
    length = mod["main"].ret_struct_info.shape.values[0]
    assert isinstance(length, tir.PrimExpr) and not isinstance(length, tir.IntImm)


def test_loop_with_the_batch_as_its_trip_count():
    """Loop M = batch: y = x + sum of the iteration numbers, a run-time loop (not unrolled)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Add", ["acc_in", "fi"], ["acc_out"])],
        "body",
        [helper.make_tensor_value_info("i", I64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", F, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", F, [])])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["m"], axis=0),
             helper.make_node("Loop", ["m", "true", "acc0"], ["acc"], body=body),
             helper.make_node("Add", ["x", "acc"], ["y"])]
    inits = {"zero": np.array(0, "int64"), "true": np.array(True),
             "acc0": np.array(0.0, "float32")}
    model = _model(nodes, [helper.make_tensor_value_info("x", F, ["batch", 3])],
                   [helper.make_tensor_value_info("y", F, ["batch", 3])], inits)
    _check(model, [(1, 3), (4, 3), (2, 3)])


def _run_all(model, feeds):
    """Build once; every feed dict against ONNX Runtime."""
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    for feed in feeds:
        got = vm["main"](*[tvm.nd.array(feed[n]) for n in names])
        got = got.numpy() if hasattr(got, "numpy") else got[0].numpy()
        np.testing.assert_allclose(got, sess.run(None, feed)[0], rtol=1e-6, atol=1e-6)


def test_slice_with_run_time_bounds():
    """x[bounds[0]:bounds[1]] summed over the sliced axis: the slice's length is only known at
    run time, the untouched axis keeps its length (5), so the sum has a static shape."""
    nodes = [helper.make_node("Slice", ["bounds", "zero", "one"], ["start"]),
             helper.make_node("Slice", ["bounds", "one", "two"], ["end"]),
             helper.make_node("Slice", ["x", "start", "end", "zero"], ["part"]),
             helper.make_node("ReduceSum", ["part", "zero"], ["y"], keepdims=0)]
    inits = {"zero": np.array([0], "int64"), "one": np.array([1], "int64"),
             "two": np.array([2], "int64")}
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [7, 5]),
                           helper.make_tensor_value_info("bounds", I64, [2])],
                   [helper.make_tensor_value_info("y", F, [5])], inits)
    x = np.random.default_rng(0).standard_normal((7, 5)).astype("float32")
    _run_all(model, [{"x": x, "bounds": np.array(b, "int64")}
                     for b in ([0, 7], [2, 5], [3, 3], [-3, 100])])


def test_slice_with_run_time_bounds_needs_constant_steps():
    nodes = [helper.make_node("Slice", ["x", "b", "e", "axes", "steps"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [7]),
                           helper.make_tensor_value_info("b", I64, [1]),
                           helper.make_tensor_value_info("e", I64, [1]),
                           helper.make_tensor_value_info("steps", I64, [1])],
                   [helper.make_tensor_value_info("y", F, None)],
                   {"axes": np.array([0], "int64")})
    with pytest.raises(ValueError, match="Slice's steps must be a constant.*const_inputs"):
        from_onnx(model)


def test_loop_scan_output_has_the_batch_length():
    """A Loop over the batch (condition passed through) whose scan output is then added to a
    (batch, 2) tensor: the scan output's length is the batch, not a fresh unknown."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
         helper.make_node("ReduceSum", ["row", "ax0"], ["s"], keepdims=0)],
        "body",
        [helper.make_tensor_value_info("i", I64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s", F, [2])])
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["m"], axis=0),
             helper.make_node("Loop", ["m", "true"], ["sums"], body=body),
             helper.make_node("ReduceSum", ["x", "ax1"], ["xs"], keepdims=0),
             helper.make_node("Add", ["sums", "xs"], ["y"])]
    inits = {"zero": np.array(0, "int64"), "true": np.array(True),
             "ax0": np.array([0], "int64"), "ax1": np.array([1], "int64")}
    model = _model(nodes, [helper.make_tensor_value_info("x", F, ["batch", 3, 2])],
                   [helper.make_tensor_value_info("y", F, ["batch", 2])], inits)
    mod = from_onnx(model)
    assert isinstance(mod["main"].ret_struct_info.shape.values[0], tir.Var)
    rng = np.random.default_rng(1)
    _run_all(model, [{"x": rng.standard_normal((b, 3, 2)).astype("float32")} for b in (1, 4)])


def test_embedding_bag_with_a_dynamic_batch():
    """The exporter's EmbeddingBag: a Loop over the bags slicing the ids at run-time offsets."""
    torch = pytest.importorskip("torch")
    from torch import nn

    torch.manual_seed(0)

    class Rec(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = nn.EmbeddingBag(30, 4, mode="mean")
            self.lin = nn.Linear(3, 4)

        def forward(self, dense, ids):
            return self.lin(dense) + self.bag(ids)

    model = Rec().eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 3), torch.randint(0, 30, (2, 5))), buf,
                          dynamo=False, opset_version=17, input_names=["dense", "ids"],
                          output_names=["y"], dynamic_axes={"dense": {0: "b"}, "ids": {0: "b"},
                                                            "y": {0: "b"}})
    vm = relax.VirtualMachine(relax.build(from_onnx(onnx.load_from_string(buf.getvalue())),
                                          "llvm"), tvm.cpu())
    for batch in (2, 5, 1):
        dense, ids = torch.randn(batch, 3), torch.randint(0, 30, (batch, 5))
        with torch.no_grad():
            want = model(dense, ids).numpy()
        got = vm["main"](tvm.nd.array(dense.numpy()), tvm.nd.array(ids.numpy()))
        got = got.numpy() if hasattr(got, "numpy") else got[0].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
