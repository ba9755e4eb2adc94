"""ONNX values Relay computes at run time from a dynamic batch: a Range to ``batch * 3`` (the
offsets PyTorch exports for ``embedding_bag`` over a 2-D input) and the Loop that slices the ids
by them, Slice with static bounds over the batch axis (``x[1:]``, ``x[::-1]``), Expand / Tile to
a size computed from the batch; and the errors that say what is really unsupported (a value
read from a graph input's data, a converter with no run-time form). Each model is compiled once
with ``relay.vm.compile`` (strict-native) and run at several batch sizes against onnxruntime."""

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
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
node = helper.make_node


def _model(nodes, inputs, y_type=F, inits=None, opset=17):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info("y", y_type, None)],
        initializer=[numpy_helper.from_array(v, n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run_batches(model, make_feed, batches=(1, 2, 5), executor="vm"):
    """Import (the batch a dim_param: relay.Any()), compile once strict-native (``vm``; or
    the ``debug`` interpreter), run at each batch against onnxruntime; returns the module."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, params = relay.frontend.from_onnx(model)
    if executor == "vm":
        with tvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
            exe = relay.vm.compile(mod, target="llvm", params=params)
        vm = runtime_vm.VirtualMachine(exe, tvm.cpu())

        def run(*args):
            return vm.invoke("main", *[tvm.nd.array(a) for a in args])
    else:
        run = relay.create_executor("debug", mod=mod).evaluate()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for b in batches:
        feed = make_feed(b)
        want = sess.run(None, feed)[0]
        got = run(*[feed[p.name_hint] for p in mod["main"].params]).numpy()
        assert got.shape == want.shape, b
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return mod


def _bag_sum_nodes():
    """``F.embedding_bag(ids, w, mode="sum")`` over (N, 3) ids as torch.onnx exports it:
    offsets ``Range(0, numel, 3)``, and a Loop over them summing each bag's rows."""
    body = helper.make_graph(
        [node("Gather", ["bounds", "i"], ["lo"], axis=0),
         node("Gather", ["ends", "i"], ["hi"], axis=0),
         node("Unsqueeze", ["lo", "ax0"], ["lo1"]), node("Unsqueeze", ["hi", "ax0"], ["hi1"]),
         node("Slice", ["flat", "lo1", "hi1", "ax0"], ["bag"]),
         node("Gather", ["w", "bag"], ["rows"], axis=0),
         node("ReduceSum", ["rows", "ax0"], ["summed"], keepdims=0),
         node("Identity", ["c"], ["c_out"])],
        "body", [helper.make_tensor_value_info("i", I64, []),
                 helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("summed", F, [2])])
    return [
        node("Shape", ["ids"], ["s"]), node("ReduceProd", ["s"], ["numel"], keepdims=0),
        node("Gather", ["s", "one"], ["width"], axis=0),
        node("Range", ["zero", "numel", "width"], ["offsets"]),
        node("Reshape", ["ids", "flat_shape"], ["flat"]),
        node("Shape", ["flat"], ["sf"]), node("Gather", ["sf", "zero"], ["total"], axis=0),
        node("Unsqueeze", ["total", "ax0"], ["total1"]),
        node("Concat", ["offsets", "total1"], ["bounds"], axis=0),
        node("Slice", ["bounds", "one1", "max1", "ax0"], ["ends"]),
        node("Shape", ["ends"], ["se"]), node("Gather", ["se", "zero"], ["trips"], axis=0),
        node("Loop", ["trips", "", ], ["y"], body=body)]


BAG_INITS = {"zero": np.array(0, "int64"), "one": np.array(1, "int64"),
             "one1": np.array([1], "int64"), "max1": np.array([INT64_MAX], "int64"),
             "ax0": np.array([0], "int64"), "flat_shape": np.array([-1], "int64"),
             "w": np.random.default_rng(0).standard_normal((10, 2)).astype("float32")}


def test_embedding_bag_offsets_range_over_the_run_time_numel_and_its_loop():
    # (the interpreter: a VM build of the loop takes seconds; the onnx-dyn-relay sweep
    # compiles wide_deep_ctr's, the same graph, strict-native)
    model = _model(_bag_sum_nodes(), [("ids", I64, ["N", 3])], inits=BAG_INITS)
    mod = _run_batches(model, lambda b: {
        "ids": np.random.default_rng(b).integers(0, 10, (b, 3)).astype("int64")},
        executor="debug")
    text = mod.astext()
    assert "arange(0i64" in text and "%while_loop" in text  # (computed at run time)


def test_a_range_limit_read_from_a_graph_input_still_asks_for_it_bound():
    """A Range limit read from an input's values is data, not a size: bind it (the message
    says values, not sizes)."""
    model = _model([node("Add", ["n", "one"], ["limit"]),
                    node("Range", ["zero", "limit", "one"], ["y"])], [("n", I64, [])],
                   y_type=I64, inits={"zero": np.array(0, "int64"), "one": np.array(1, "int64")})
    with pytest.raises(NeedsConstantInput, match="values of graph input\\(s\\) 'n'"):
        relay.frontend.from_onnx(model)


@pytest.mark.parametrize("start, end, step", [
    (1, INT64_MAX, 1), (-2, INT64_MAX, 1), (0, -1, 2),
    (-1, INT64_MIN, -1), (INT64_MAX, INT64_MIN, -2), (3, 0, -1)])
def test_static_slice_bounds_over_the_run_time_batch(start, end, step):
    """x[start:end:step] on the batch axis: strided_slice clamps the bounds at run time
    (INT64_MIN: before the start, as x[::-1] exports)."""
    model = _model([node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
                   [("x", F, ["N", 3])], inits={
                       "st": np.array([start], "int64"), "en": np.array([end], "int64"),
                       "ax": np.array([0], "int64"), "sp": np.array([step], "int64")})
    mod = _run_batches(model, lambda b: {
        "x": np.random.default_rng(b).standard_normal((b, 3)).astype("float32")},
        batches=(1, 4, 7))
    assert "strided_slice" in mod.astext() and "take" not in mod.astext()


def _numel_times(k: int):
    """Nodes computing ``size`` = [numel(x) * k] (a size computed from the batch)."""
    return [node("Shape", ["x"], ["s"]), node("ReduceProd", ["s"], ["numel"], keepdims=1),
            node("Mul", ["numel", "k"], ["size"])], {"k": np.array([k], "int64")}


def test_expand_to_a_size_computed_from_the_batch():
    nodes, inits = _numel_times(2)
    nodes += [node("Concat", ["size", "two"], ["target"], axis=0),
              node("Expand", ["w", "target"], ["y"])]
    inits.update(two=np.array([2], "int64"), w=np.array([[1.5, -2.0]], "float32"))
    _run_batches(_model(nodes, [("x", F, ["N", 3])], inits=inits), lambda b: {
        "x": np.zeros((b, 3), "float32")})


def test_tile_a_size_one_axis_a_computed_number_of_times():
    nodes, inits = _numel_times(1)
    nodes += [node("Concat", ["size", "three"], ["reps"], axis=0),
              node("Tile", ["w", "reps"], ["y"])]
    inits.update(three=np.array([3], "int64"), w=np.array([[1.0, 2.0]], "float32"))
    _run_batches(_model(nodes, [("x", F, ["N", 3])], inits=inits), lambda b: {
        "x": np.zeros((b, 3), "float32")})


def _half_batch():
    """Nodes computing ``k`` = [batch // 2] (a size computed from the batch)."""
    return [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["b"], axis=0),
            node("Div", ["b", "two"], ["half"]), node("Unsqueeze", ["half", "ax0"], ["k"])], {
        "zero": np.array(0, "int64"), "two": np.array(2, "int64"),
        "ax0": np.array([0], "int64")}


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_of_a_k_computed_from_the_batch(largest):
    """K = batch // 2: dyn.topk, its first K rows (K = 0 at batch 1: none, not all)."""
    nodes, inits = _half_batch()
    nodes.append(node("TopK", ["x", "k"], ["y", "idx"], axis=0, largest=largest))
    mod = _run_batches(_model(nodes, [("x", F, ["N", 3])], inits=inits), lambda b: {
        "x": np.random.default_rng(b).standard_normal((b, 3)).astype("float32")},
        batches=(1, 4, 5))
    assert "dyn.topk" in mod.astext()


def test_topk_of_k_zero_selects_nothing():
    """ONNX's K = 0 is an empty selection (Relay's topk would read k < 1 as "all")."""
    model = _model([node("TopK", ["x", "k"], ["y", "idx"], axis=0)], [("x", F, [4, 3])],
                   inits={"k": np.array([0], "int64")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, _ = relay.frontend.from_onnx(model)
    x = np.ones((4, 3), "float32")
    got = relay.create_executor("debug", mod=mod).evaluate()(x).numpy()
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.shape == want.shape == (0, 3)


def test_a_converter_without_a_run_time_form_names_the_sizes():
    """CumSum's axis from batch // 2: computed from a run-time size, not from data: the error
    names the op, the input and the sizes (it used to call it a data-dependent shape and ask to
    bind x). (OneHot's depth, which this test used, now has a run-time form:
    test_onnx_run_time_sized.py.)"""
    nodes, inits = _half_batch()
    nodes += [node("Squeeze", ["k", "ax0"], ["axis"]), node("CumSum", ["x", "axis"], ["y"])]
    model = _model(nodes, [("x", F, ["N", 3])], inits=inits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ImportError_, match="CumSum's axis .*run-time size\\(s\\) of 'x'") \
                as info:
            relay.frontend.from_onnx(model)
    assert not isinstance(info.value, NeedsConstantInput)
