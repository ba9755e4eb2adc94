"""ONNX ops whose output sizes an input gives, that input computed at run time (from ``Shape`` of
a dynamic-batch input, or from data in an import with run-time sizes): OneHot's depth, Pad's
pads, Split's sizes, Trilu's k, ConstantOfShape's shape, Resize's sizes / scales. Each model is
imported with its batch a ``relay.Any()``, compiled once with ``relay.vm.compile``
(strict-native) and run at several batches against onnxruntime; what still has no run-time form
fails at import naming the op and the input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend.common import ImportError_  # noqa: E402
from minitvm.relay.frontend.onnx import NeedsConstantInput  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
node = helper.make_node


def _model(nodes, inputs, outputs=("y",), inits=None, opset=18):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(o, F, None) for o in outputs],
        initializer=[numpy_helper.from_array(v, n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _import(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return relay.frontend.from_onnx(model)


def _run(model, make_feed, batches=(1, 2, 5)):
    """Import, compile once strict-native for the VM, run at each batch against onnxruntime
    (every output); returns the module's text."""
    mod, params = _import(model)
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for b in batches:
        feed = make_feed(b)
        want = sess.run(None, feed)
        got = vm.invoke("main", *[tvm.nd.array(feed[p.name_hint]) for p in mod["main"].params])
        got = [got] if len(want) == 1 else list(got)
        for g, w in zip(got, want, strict=True):
            assert g.numpy().shape == w.shape, (b, g.numpy().shape, w.shape)
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)
    return mod.astext()


def _half_batch(axis: int = 0):
    """Nodes computing ``k`` = [batch // 2] (a size computed from axis ``axis`` of x, its
    run-time batch), and ``b1`` = [batch]."""
    return [node("Shape", ["x"], ["s"]), node("Gather", ["s", "at"], ["b"], axis=0),
            node("Div", ["b", "two"], ["half"]), node("Unsqueeze", ["half", "ax0"], ["k"]),
            node("Unsqueeze", ["b", "ax0"], ["b1"])], {
        "at": np.array(axis, "int64"), "two": np.array(2, "int64"),
        "ax0": np.array([0], "int64")}


def _x(cols=3):
    return lambda b: {"x": np.random.default_rng(b).standard_normal((b, cols)).astype("float32")}


@pytest.mark.parametrize("axis", [-1, 0])
def test_one_hot_of_a_depth_computed_from_the_batch(axis):
    """depth = batch // 2 + 1 (negative ids count from it): dyn.one_hot."""
    nodes, inits = _half_batch()
    nodes += [node("Add", ["k", "one"], ["depth"]),
              node("OneHot", ["ids", "depth", "vals"], ["y"], axis=axis)]
    inits.update(one=np.array([1], "int64"), vals=np.array([-1.0, 2.0], "float32"))
    model = _model(nodes, [("x", F, ["N", 3]), ("ids", I64, [4])], inits=inits)
    text = _run(model, lambda b: {"x": np.zeros((b, 3), "float32"),
                                  "ids": np.array([0, 1, -1, 5], "int64")}, batches=(1, 9))
    assert "dyn.one_hot" in text


def test_one_hot_of_a_data_dependent_depth_has_a_run_time_size():
    """depth = max(ids) + 1 reads ids' values; in an import with a run-time batch it is taken
    at run time too (the new axis' size is Any)."""
    nodes = [node("ReduceMax", ["ids"], ["m"], keepdims=1),
             node("Add", ["m", "one"], ["depth"]), node("OneHot", ["ids", "depth", "vals"], ["y"])]
    inits = {"one": np.array([1], "int64"), "vals": np.array([0.0, 1.0], "float32")}
    model = _model(nodes, [("ids", I64, ["N"])], inits=inits)
    text = _run(model, lambda b: {"ids": np.arange(b, dtype="int64") * 2})
    assert "dyn.one_hot" in text


def test_a_data_dependent_depth_in_a_static_import_asks_for_its_input():
    """With only static sizes, a depth read from an input's values still asks for the input
    bound (the program stays static), naming the op and the input."""
    model = _model([node("OneHot", ["ids", "depth", "vals"], ["y"])],
                   [("ids", I64, [3]), ("depth", I64, [1])],
                   inits={"vals": np.array([0.0, 1.0], "float32")})
    with pytest.raises(NeedsConstantInput, match="OneHot.*'depth'"):
        _import(model)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_by_pads_computed_from_the_batch(mode):
    """pads [0, 1, batch // 2, 1] on (N, 4): dyn.nn.pad (wrap: gathers modulo the size)."""
    nodes, inits = _half_batch()
    nodes += [node("Concat", ["z", "one", "k", "one"], ["pads"], axis=0),
              node("Pad", ["x", "pads", "v"], ["y"], mode=mode)]
    inits.update(z=np.array([0], "int64"), one=np.array([1], "int64"),
                 v=np.array(0.5, "float32"))
    text = _run(_model(nodes, [("x", F, ["N", 4])], inits=inits), _x(4), batches=(2, 5))
    assert ("dyn.nn.pad" in text) == (mode != "wrap")


def test_negative_pads_computed_at_run_time_crop():
    """pads [0, -(batch // 2), 0, 1] over axes [0, 1] given by an axes input: the negative
    part crops (a strided_slice to shape_of), the rest pads."""
    nodes, inits = _half_batch()
    nodes += [node("Neg", ["k"], ["negk"]),
              node("Concat", ["z", "negk", "z", "one"], ["pads"], axis=0),
              node("Pad", ["x", "pads", "", "axes"], ["y"])]
    inits.update(z=np.array([0], "int64"), one=np.array([1], "int64"),
                 axes=np.array([0, -1], "int64"))
    _run(_model(nodes, [("x", F, ["N", 6])], inits=inits), _x(6), batches=(2, 5))


@pytest.mark.parametrize("axis", [0, 1])
def test_split_by_sizes_computed_from_the_batch(axis):
    """sizes [batch // 2, rest] (of the batch axis, or of an axis of size batch): each part a
    take of arange(begin, end), the other axes' sizes kept in the type."""
    nodes, inits = _half_batch(axis)
    nodes += [node("Sub", ["b1", "k"], ["rest"]), node("Concat", ["k", "rest"], ["sizes"], axis=0),
              node("Split", ["x", "sizes"], ["y0", "y1"], axis=axis)]
    shape = ["N", 3] if axis == 0 else [2, "N"]
    model = _model(nodes, [("x", F, shape)], outputs=("y0", "y1"), inits=inits)
    text = _run(model, lambda b: {"x": np.random.default_rng(b).standard_normal(
        (b, 3) if axis == 0 else (2, b)).astype("float32")}, batches=(1, 4, 5))
    assert "arange" in text


def test_split_of_a_run_time_axis_by_constant_sizes():
    """sizes [1, 2] of the batch axis (ONNX requires the batch be 3): static parts."""
    model = _model([node("Split", ["x", "sizes"], ["y0", "y1"], axis=0)], [("x", F, ["N", 2])],
                   outputs=("y0", "y1"), inits={"sizes": np.array([1, 2], "int64")})
    text = _run(model, _x(2), batches=(3,))
    assert "Tensor[(1, 2), float32]" in text and "Tensor[(2, 2), float32]" in text


def test_split_of_a_run_time_axis_into_equal_parts():
    """num_outputs=3 over the batch: parts of ceil(batch / 3), the last one smaller."""
    model = _model([node("Split", ["x"], ["y0", "y1", "y2"], axis=0, num_outputs=3)],
                   [("x", F, ["N", 2])], outputs=("y0", "y1", "y2"))
    _run(model, _x(2), batches=(3, 7, 8))


@pytest.mark.parametrize("upper", [1, 0])
def test_trilu_of_a_k_computed_from_the_batch(upper):
    nodes, inits = _half_batch()
    nodes += [node("Squeeze", ["k", "ax0"], ["kk"]), node("Trilu", ["x", "kk"], ["y"],
                                                       upper=upper)]
    _run(_model(nodes, [("x", F, ["N", 5])], inits=inits), _x(5), batches=(1, 4, 7))


def test_trilu_of_run_time_sizes_and_a_constant_k():
    model = _model([node("Trilu", ["x", "k"], ["y"], upper=0)], [("x", F, [2, "H", "W"])],
                   inits={"k": np.array(-1, "int64")})
    _run(model, lambda b: {"x": np.random.default_rng(b).standard_normal(
        (2, b, b + 2)).astype("float32")}, batches=(1, 3))


def test_constant_of_a_data_dependent_shape():
    """shape [max(ids) + 1, 2] reads ids' values: dyn.full, its sizes Any."""
    nodes = [node("ReduceMax", ["ids"], ["m"], keepdims=1), node("Add", ["m", "one"], ["n"]),
             node("Concat", ["n", "two"], ["shape"], axis=0),
             node("ConstantOfShape", ["shape"], ["y"],
                  value=helper.make_tensor("v", F, [1], [2.5]))]
    inits = {"one": np.array([1], "int64"), "two": np.array([2], "int64")}
    text = _run(_model(nodes, [("ids", I64, ["N"])], inits=inits),
                lambda b: {"ids": np.arange(b, dtype="int64") * 3})
    assert "dyn.full" in text


def _spatial():
    return [node("Shape", ["x"], ["s"]), node("Slice", ["s", "z", "two"], ["nc"]),
            node("Slice", ["s", "two", "four"], ["hw"])], {
        "z": np.array([0], "int64"), "two": np.array([2], "int64"),
        "four": np.array([4], "int64")}


def _image(c=2, h=4, w=3):
    return lambda b: {"x": np.random.default_rng(b).standard_normal(
        (b, c, h + b, w)).astype("float32")}


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_to_sizes_computed_from_the_input_sizes(mode):
    """sizes Concat(Shape(x)[:2], Shape(x)[2:] * 2) over a run-time batch and height:
    dyn.image.resize2d."""
    nodes, inits = _spatial()
    nodes += [node("Mul", ["hw", "two"], ["hw2"]), node("Concat", ["nc", "hw2"], ["sizes"],
                                                        axis=0),
              node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode)]
    text = _run(_model(nodes, [("x", F, ["N", 2, "H", 3])], inits=inits), _image(),
                batches=(1, 3))
    assert "dyn.image.resize2d" in text


def test_resize_by_scales_computed_from_the_batch():
    """scales [1, 1, batch, 2] (float, a Concat of constants and a Cast of the batch)."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["b"], axis=0),
             node("Cast", ["b"], ["bf"], to=F), node("Unsqueeze", ["bf", "ax0"], ["bf1"]),
             node("Concat", ["ones", "bf1", "two"], ["scales"], axis=0),
             node("Resize", ["x", "", "scales"], ["y"], mode="linear")]
    inits = {"zero": np.array(0, "int64"), "ax0": np.array([0], "int64"),
             "ones": np.array([1.0, 1.0], "float32"), "two": np.array([2.0], "float32")}
    _run(_model(nodes, [("x", F, ["N", 2, 4, 3])], inits=inits), lambda b: {
        "x": np.random.default_rng(b).standard_normal((b, 2, 4, 3)).astype("float32")},
        batches=(1, 3))


def test_resize_of_a_run_time_height_by_constant_scales():
    model = _model([node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
                   [("x", F, [1, 2, "H", "W"])],
                   inits={"scales": np.array([1.0, 1.0, 2.0, 3.0], "float32")})
    _run(model, lambda b: {"x": np.random.default_rng(b).standard_normal(
        (1, 2, b, b + 1)).astype("float32")}, batches=(1, 4))


def test_resize_sizes_at_run_time_antialias_and_a_batch_change():
    """An antialiased resize to run-time sizes (an upscale, refused at import before) and by
    constant scales of a run-time height (a downscale, which raised at run time before: the
    kernel stretched by 1 / scale now); run-time sizes that change the batch are refused at
    import."""
    nodes, inits = _spatial()
    nodes += [node("Mul", ["hw", "two"], ["hw2"]), node("Concat", ["nc", "hw2"], ["sizes"],
                                                        axis=0),
              node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", antialias=1)]
    _run(_model(nodes, [("x", F, ["N", 2, "H", 3])], inits=inits), _image(), batches=(1, 3))
    nodes, inits = _spatial()
    nodes += [node("Mul", ["s", "two"], ["sizes"]),
              node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear")]
    with pytest.raises(ImportError_, match="Resize's sizes .*must keep axes 0 and 1"):
        _import(_model(nodes, [("x", F, ["N", 2, "H", 3])], inits=inits))
    model = _model([node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1,
                         name="rs")], [("x", F, [1, 2, "H", 4])],
                   inits={"scales": np.array([1.0, 1.0, 0.5, 0.5], "float32")})
    _run(model, lambda b: {"x": np.random.default_rng(b).standard_normal(
        (1, 2, 3 * b, 4)).astype("float32")}, batches=(2, 3))
