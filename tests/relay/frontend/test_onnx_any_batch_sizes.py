"""ONNX operators whose size arguments a PyTorch export computes from the (dynamic) batch, imported
with ``shape={"x": [relay.Any(), ...]}``: Resize to ``Concat(Shape(x)[:2], sizes)`` or by scales,
ConstantOfShape of a shape holding the batch, Pad of a dynamic-batch tensor. Each model is
compiled once with ``relay.vm.compile`` and run at two batch sizes against onnxruntime."""

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
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F = TensorProto.FLOAT
node = helper.make_node


def _model(nodes, x_shape, y_shape, inits, opset=17):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, x_shape)],
        [helper.make_tensor_value_info("y", F, y_shape)],
        initializer=[numpy_helper.from_array(v, n) for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _batch_of_shape(nodes, src="x"):
    """Nodes computing ``b1`` = [batch of ``src``] as PyTorch exports it."""
    return nodes + [node("Shape", [src], ["s"]), node("Gather", ["s", "zero"], ["b"], axis=0),
                    node("Unsqueeze", ["b", "ax0"], ["b1"])]


SHAPE_INITS = {"zero": np.array(0, "int64"), "ax0": np.array([0], "int64")}


def _check_two_batches(model, rest, batches=(1, 3)):
    """Import with an Any batch, one compile, run at each batch size against onnxruntime."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, params = relay.frontend.from_onnx(model, shape={"x": [relay.Any(), *rest]})
        exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for b in batches:
        x = np.random.default_rng(b).standard_normal((b, *rest)).astype("float32")
        want = sess.run(None, {"x": x})[0]
        got = vm.invoke("main", tvm.nd.array(x)).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return mod


def test_resize_to_sizes_concatenated_with_the_run_time_batch_and_channels():
    """F.interpolate(x, size=(7, 5)): sizes = Concat(Shape(x)[:2], [7, 5])."""
    nodes = [node("Shape", ["x"], ["s"]), node("Slice", ["s", "st", "en"], ["nc"]),
             node("Concat", ["nc", "hw"], ["sizes"], axis=0),
             node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                  coordinate_transformation_mode="half_pixel")]
    inits = {"st": np.array([0], "int64"), "en": np.array([2], "int64"),
             "hw": np.array([7, 5], "int64")}
    mod = _check_two_batches(_model(nodes, ["N", 2, 4, 3], ["N", 2, 7, 5], inits), [2, 4, 3])
    out = mod["main"].ret_type.shape
    assert [int(d) for d in out[1:]] == [2, 7, 5]  # only the batch is unknown in the type


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_by_scales_of_a_dynamic_batch_input(mode):
    """Scales of 1 on the batch and channels; cubic asymmetric takes the per-axis taps path."""
    ctm = "asymmetric" if mode == "cubic" else "half_pixel"
    nodes = [node("Resize", ["x", "", "sc"], ["y"], mode=mode,
                  coordinate_transformation_mode=ctm)]
    inits = {"sc": np.array([1.0, 1.0, 2.0, 1.5], "float32")}
    _check_two_batches(_model(nodes, ["N", 2, 3, 4], ["N", 2, 6, 6], inits), [2, 3, 4])


def test_upsample_of_a_dynamic_batch_input():
    nodes = [node("Upsample", ["x", "sc"], ["y"], mode="nearest")]
    inits = {"sc": np.array([1.0, 1.0, 2.0, 3.0], "float32")}
    _check_two_batches(_model(nodes, ["N", 2, 3, 4], ["N", 2, 6, 12], inits, opset=9),
                       [2, 3, 4])


def test_resizing_the_dynamic_batch_is_a_clear_error():
    nodes = [node("Resize", ["x", "", "sc"], ["y"], mode="nearest")]
    model = _model(nodes, ["N", 2, 3, 4], ["M", 2, 3, 4],
                   {"sc": np.array([2.0, 1.0, 1.0, 1.0], "float32")})
    with pytest.raises(ImportError_, match="dynamic axis 0"):
        relay.frontend.from_onnx(model, shape={"x": [relay.Any(), 2, 3, 4]})


def test_constant_of_shape_holding_the_batch():
    """An RNN-style initial state: zeros of (2, batch, 4) added to x's rows."""
    nodes = _batch_of_shape([]) + [
        node("Concat", ["two", "b1", "four"], ["hs"], axis=0),
        node("ConstantOfShape", ["hs"], ["h"],
             value=numpy_helper.from_array(np.array([0.5], "float32"))),
        node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]), node("Add", ["xt", "h"], ["y"])]
    inits = {**SHAPE_INITS, "two": np.array([2], "int64"), "four": np.array([4], "int64")}
    mod = _check_two_batches(_model(nodes, ["N", 2, 4], [2, "N", 4], inits), [2, 4])
    text = mod.astext()
    assert "arange" not in text  # the batch is read from x's axis, kept in the type


def test_constant_of_shape_of_a_computed_size():
    """A size computed from the batch (batch * 2) is no axis of a tensor: an arange of it
    gives the axis its length."""
    nodes = _batch_of_shape([]) + [
        node("Mul", ["b1", "two"], ["b2"]), node("Concat", ["b2", "four"], ["hs"], axis=0),
        node("ConstantOfShape", ["hs"], ["h"],
             value=numpy_helper.from_array(np.array([1.5], "float32"))),
        node("Reshape", ["x", "rows"], ["xr"]), node("Add", ["xr", "h"], ["y"])]
    inits = {**SHAPE_INITS, "two": np.array([2], "int64"), "four": np.array([4], "int64"),
             "rows": np.array([-1, 4], "int64")}
    mod = _check_two_batches(_model(nodes, ["N", 2, 4], ["M", 4], inits), [2, 4])
    assert "arange" in mod.astext()


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_of_a_dynamic_batch_tensor_with_a_crop(mode):
    """Pads on the spatial axes (one negative: a crop), none on the batch."""
    nodes = [node("Pad", ["x", "pads", "cv"], ["y"], mode=mode)]
    inits = {"pads": np.array([0, 0, 1, -1, 0, 0, 2, 1], "int64"),
             "cv": np.array(0.25, "float32")}
    _check_two_batches(_model(nodes, ["N", 2, 5, 6], ["N", 2, 8, 6], inits), [2, 5, 6])


@pytest.mark.parametrize("op,mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"),
                                     ("SpaceToDepth", "DCR")])
def test_depth_space_rearrangements_of_a_dynamic_batch(op, mode):
    """The batch is copied (reshape code 0) through the reshape-transpose-reshape."""
    attrs = {"mode": mode} if op == "DepthToSpace" else {}
    nodes = [node(op, ["x"], ["y"], blocksize=2, **attrs)]
    out = ["N", 2, 8, 8] if op == "DepthToSpace" else ["N", 32, 2, 2]
    _check_two_batches(_model(nodes, ["N", 8, 4, 4], out, {}), [8, 4, 4])


def _shape_initializer_model():
    """A PyTorch-style head whose shape arguments are all initializers (as exporters that fold
    Constant nodes write them): Gather index and Unsqueeze axes of a Shape chain, a Reshape's
    shape, a Slice's starts / ends, and a float weight."""
    rng = np.random.default_rng(0)
    inits = {**SHAPE_INITS, "rows": np.array([-1, 12], "int64"),
             "st": np.array([1], "int64"), "en": np.array([4], "int64"),
             "ax": np.array([1], "int64"), "tail": np.array([3, 5], "int64"),
             "w": rng.standard_normal((12, 15)).astype("float32")}
    nodes = _batch_of_shape([]) + [
        node("Reshape", ["x", "rows"], ["r"]), node("MatMul", ["r", "w"], ["m"]),
        node("Concat", ["b1", "tail"], ["to"], axis=0), node("Reshape", ["m", "to"], ["m3"]),
        node("Slice", ["m3", "st", "en", "ax"], ["y"])]
    return _model(nodes, ["N", 3, 4], ["N", 2, 5], inits)


@pytest.mark.parametrize("batch", ["any", "static"])
def test_freeze_params_false_reads_shape_initializers_as_constants(batch):
    """As TVM reads a Reshape's shape from its params: the integer initializers a shape is
    computed from fold to constants and leave the function; the weight stays a parameter."""
    model = _shape_initializer_model()
    if batch == "any":
        mod = _check_two_batches_params(model, [3, 4])
    else:
        mod, params = relay.frontend.from_onnx(model, shape={"x": [2, 3, 4]},
                                               freeze_params=False)
        assert set(params) == {"w"}
        x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype("float32")
        exe = relay.vm.compile(mod, target="llvm", params=params)
        got = runtime_vm.VirtualMachine(exe, tvm.cpu()).invoke("main", tvm.nd.array(x))
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(got.numpy(), sess.run(None, {"x": x})[0], rtol=1e-5,
                                   atol=1e-5)
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"]


def _check_two_batches_params(model, rest):
    """``_check_two_batches`` with freeze_params=False (the weights passed as params)."""
    mod, params = relay.frontend.from_onnx(model, shape={"x": [relay.Any(), *rest]},
                                           freeze_params=False)
    assert set(params) == {"w"}
    exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for b in (1, 3):
        x = np.random.default_rng(b).standard_normal((b, *rest)).astype("float32")
        np.testing.assert_allclose(vm.invoke("main", tvm.nd.array(x)).numpy(),
                                   sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
    return mod


def test_expand_by_a_constant_shape_of_a_dynamic_batch_tensor():
    """Expand (batch, 5, 1) by [1, 1, 4] and by a longer [2, 1, 1, 3]: the batch kept."""
    nodes = [node("Expand", ["x", "t1"], ["e1"]), node("Expand", ["e1", "t2"], ["y"])]
    inits = {"t1": np.array([1, 1, 4], "int64"), "t2": np.array([2, 1, 1, 4], "int64")}
    mod = _check_two_batches(_model(nodes, ["N", 5, 1], [2, "N", 5, 4], inits), [5, 1])
    assert [str(d) for d in mod["main"].ret_type.shape] == ["2", "?", "5", "4"]


def test_max_pool_3d_of_a_dynamic_batch():
    """3-D pooling as two 2-D passes: the batch copied through the reshapes between them."""
    nodes = [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3, 3], strides=[1, 2, 2],
                  pads=[0, 1, 1, 0, 1, 1])]
    _check_two_batches(_model(nodes, ["N", 2, 3, 6, 6], ["N", 2, 2, 3, 3], {}), [2, 3, 6, 6])


@pytest.mark.parametrize("equation,w_shape", [("bqc,bchw->bqhw", None),
                                              ("bnd,shde->sbhne", (3, 2, 8, 5)),
                                              ("bij,jk->bik", (8, 6))])
def test_einsum_with_a_dynamic_batch_letter(equation, w_shape):
    """The batch letter as a batch_matmul batch (both operands: the second's batch is computed
    from x), as a free letter of one operand, and beside a static weight."""
    rng = np.random.default_rng(0)
    if w_shape is None:  # the second operand: x's own rows, transposed and reshaped
        nodes = [node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
                 node("Reshape", ["xt", "to4"], ["w"]), node("Einsum", ["x", "w"], ["y"],
                                                            equation=equation)]
        inits = {"to4": np.array([0, 8, 2, 2], "int64")}
        out = ["N", 4, 2, 2]
    else:
        nodes = [node("Einsum", ["x", "w"], ["y"], equation=equation)]
        inits = {"w": rng.standard_normal(w_shape).astype("float32")}
        out = ["N", 4, 6] if equation.startswith("bij") else [3, "N", 2, 4, 5]
    _check_two_batches(_model(nodes, ["N", 4, 8], out, inits), [4, 8])


def test_tile_a_learned_query_to_the_run_time_batch():
    """DETR's ``query.repeat(B, 2, 1)``: repeats = Concat([batch], [2, 1]), added to x."""
    rng = np.random.default_rng(0)
    nodes = _batch_of_shape([]) + [
        node("Concat", ["b1", "two_one"], ["reps"], axis=0),
        node("Tile", ["query", "reps"], ["q"]), node("Add", ["q", "x"], ["y"])]
    inits = {**SHAPE_INITS, "two_one": np.array([2, 1], "int64"),
             "query": rng.standard_normal((1, 3, 5)).astype("float32")}
    mod = _check_two_batches(_model(nodes, ["N", 6, 5], ["N", 6, 5], inits), [6, 5])
    assert "dyn.tile" not in mod.astext()


@pytest.mark.parametrize("kind,extra", [
    ("LSTM", {}), ("GRU", {"linear_before_reset": 1}), ("GRU", {}),
    ("RNN", {"direction": "bidirectional"})])
def test_recurrent_layers_over_a_dynamic_batch(kind, extra):
    """Unrolled over a static sequence of 3 steps with the batch (x's axis 1) a run-time size:
    reshapes infer it, gate slices run to its end; PyTorch's zero initial state is a
    ConstantOfShape of (directions, batch, hidden)."""
    rng = np.random.default_rng(0)
    gates, hid = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind], 5
    dirs = 2 if extra.get("direction") == "bidirectional" else 1
    inits = {**SHAPE_INITS, "w": rng.standard_normal((dirs, gates * hid, 4)).astype("float32"),
             "r": rng.standard_normal((dirs, gates * hid, hid)).astype("float32"),
             "bias": rng.standard_normal((dirs, 2 * gates * hid)).astype("float32"),
             "dirs": np.array([dirs], "int64"), "hid": np.array([hid], "int64"),
             "zero": np.array(1, "int64")}  # (the batch: axis 1 of x)
    nodes = _batch_of_shape([]) + [
        node("Concat", ["dirs", "b1", "hid"], ["hs"], axis=0),
        node("ConstantOfShape", ["hs"], ["h0"]),
        node(kind, ["x", "w", "r", "bias", "", "h0"], ["seq_out", "y"], hidden_size=hid,
             **extra)]
    model = _model(nodes, [3, "N", 4], [dirs, "N", hid], inits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, params = relay.frontend.from_onnx(model, shape={"x": [3, relay.Any(), 4]})
        exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for b in (1, 3):
        x = np.random.default_rng(b).standard_normal((3, b, 4)).astype("float32")
        np.testing.assert_allclose(vm.invoke("main", tvm.nd.array(x)).numpy(),
                                   sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_a_recurrent_layer_over_a_run_time_sequence_length_runs_as_a_loop():
    """(An import error before: the layer is now a recursive function the VM runs, one step a
    call; ``test_onnx_rnn_run_time_length`` covers the kinds and options.)"""
    rng = np.random.default_rng(0)
    inits = {"w": rng.standard_normal((1, 5, 4)).astype("float32"),
             "r": rng.standard_normal((1, 5, 5)).astype("float32")}
    model = _model([node("RNN", ["x", "w", "r"], ["seq_out", "y"], hidden_size=5)],
                   ["T", 2, 4], [1, 2, 5], inits)
    mod, params = relay.frontend.from_onnx(model, shape={"x": [relay.Any(), 2, 4]})
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm", params=params),
                                   tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for steps in (2, 5):
        x = rng.standard_normal((steps, 2, 4)).astype("float32")
        np.testing.assert_allclose(vm.invoke("main", tvm.nd.array(x)).numpy(),
                                   sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_matmul_broadcasting_batch_axes_against_the_dynamic_batch():
    """CapsNet's routing product: W (1, 6, 3, 4, 2) @ u (batch, 6, 1, 2, 1): W's 1 grows to
    the batch (a take keeping its relay.Any()), u's 1 repeats to 3."""
    rng = np.random.default_rng(0)
    nodes = [node("Unsqueeze", ["x", "axes"], ["u"]), node("MatMul", ["w", "u"], ["y"])]
    inits = {"axes": np.array([2, 4], "int64"),
             "w": rng.standard_normal((1, 6, 3, 4, 2)).astype("float32")}
    _check_two_batches(_model(nodes, ["N", 6, 2], ["N", 6, 3, 4, 1], inits), [6, 2])


def test_reshape_back_from_merged_batch_rows_keeps_the_static_sizes():
    """LeViT's Flatten (batch*4, 6) -> reshape (batch, 4, -1): the -1 is 6 because the merged
    rows are batch * 4 (``size_factors``), so the type keeps (?, 4, 6) and the Split after it
    (which needs the axis's static size) imports; no dyn.reshape."""
    nodes = _batch_of_shape([]) + [
        node("Flatten", ["x"], ["f"], axis=2), node("Relu", ["f"], ["r"]),
        node("Concat", ["b1", "four", "minus1"], ["to"], axis=0),
        node("Reshape", ["r", "to"], ["back"]),
        node("Split", ["back", "parts"], ["p0", "p1"], axis=2),
        node("Mul", ["p0", "p1"], ["y"])]
    inits = {**SHAPE_INITS, "four": np.array([4], "int64"), "minus1": np.array([-1], "int64"),
             "parts": np.array([3, 3], "int64")}
    mod = _check_two_batches(_model(nodes, ["N", 4, 6], ["N", 4, 3], inits), [4, 6])
    assert "dyn.reshape" not in mod.astext()
    assert [str(d) for d in mod["main"].ret_type.shape] == ["?", "4", "3"]


def test_slice_to_the_run_time_batch_and_scatter_elements_over_it():
    """A GCN's ``x[:batch]`` (ends = Shape(x)) is no slice at all; then a ScatterElements with
    a computed index over the dynamic batch (the comparison of every position with every
    update, per batch element)."""
    nodes = [node("Shape", ["x"], ["s"]), node("Slice", ["x", "zeros3", "s"], ["xs"]),
             node("ArgMax", ["xs"], ["idx"], axis=1, keepdims=1),
             node("ReduceMax", ["xs"], ["upd"], axes=[1], keepdims=1),
             node("ScatterElements", ["x", "idx", "upd"], ["y"], axis=1, reduction="add")]
    inits = {"zeros3": np.array([0, 0, 0], "int64")}
    mod = _check_two_batches(_model(nodes, ["N", 3, 5], ["N", 3, 5], inits), [3, 5])
    text = mod.astext()
    assert "strided_slice" not in text and "arange" not in text
    assert "scatter" not in text


def test_sum_of_two_batch_sized_tensors_reshaped_by_the_batch():
    """Perceiver's latents tiled to the batch plus an attention output: the add's batch is a
    fresh relay.Any() of the type relation, noted as the batch (``size_factors``), so a reshape
    to (batch, 4, 1, -1) infers -1 = 6 and the MatMul after it sees the same batch."""
    rng = np.random.default_rng(0)
    nodes = _batch_of_shape([]) + [
        node("Concat", ["b1", "one_one"], ["reps"], axis=0),
        node("Tile", ["lat", "reps"], ["lt"]),                      # (batch, 4, 6)
        node("Flatten", ["x"], ["xf"], axis=2), node("Reshape", ["xf", "back"], ["xb"]),
        node("Add", ["lt", "xb"], ["sm"]),
        node("Concat", ["b1", "four_one_m1"], ["to"], axis=0),
        node("Reshape", ["sm", "to"], ["s4"]),                      # (batch, 4, 1, 6)
        node("Transpose", ["s4"], ["s4t"], perm=[0, 2, 3, 1]),      # (batch, 1, 6, 4)
        node("MatMul", ["s4", "s4t"], ["y"])]                       # (batch, 4, 1, 4)
    inits = {**SHAPE_INITS, "one_one": np.array([1, 1], "int64"),
             "lat": rng.standard_normal((1, 4, 6)).astype("float32"),
             "back": np.array([-1, 4, 6], "int64"), "four_one_m1": np.array([4, 1, -1], "int64")}
    mod = _check_two_batches(_model(nodes, ["N", 4, 6], ["N", 4, 1, 4], inits), [4, 6])
    assert "dyn.reshape" not in mod.astext()


def test_grid_sample_of_a_dynamic_batch():
    """The gather-based bilinear sampling needs a static batch: a run-time one takes
    image.grid_sample."""
    rng = np.random.default_rng(0)
    inits = {"g": rng.uniform(-1.1, 1.1, (1, 3, 4, 2)).astype("float32")}
    # the grid's batch (1) is expanded to x's by an Expand to Shape(x)[0]
    nodes = _batch_of_shape([]) + [
        node("Concat", ["b1", "grid_rest"], ["gs"], axis=0), node("Expand", ["g", "gs"], ["gb"]),
        node("GridSample", ["x", "gb"], ["y"], mode="bilinear", padding_mode="zeros",
             align_corners=0)]
    inits.update(SHAPE_INITS, grid_rest=np.array([3, 4, 2], "int64"))
    _check_two_batches(_model(nodes, ["N", 2, 5, 6], ["N", 2, 3, 4], inits, opset=17),
                       [2, 5, 6])


def test_freeze_params_false_run_time_slice_reads_initializer_starts():
    """``x[:batch]`` whose starts are an initializer kept as a parameter: read as shape
    arithmetic (no slice), as with freeze_params=True."""
    nodes = [node("Shape", ["x"], ["s"]), node("Slice", ["x", "zeros3", "s"], ["xs"]),
             node("Mul", ["xs", "w"], ["y"])]
    inits = {"zeros3": np.array([0, 0, 0], "int64"),
             "w": np.random.default_rng(0).standard_normal((3, 5)).astype("float32")}
    mod = _check_two_batches_params(_model(nodes, ["N", 3, 5], ["N", 3, 5], inits), [3, 5])
    assert "arange" not in mod.astext()


def test_gather_of_rows_offset_by_arange_of_the_batch_then_einsum():
    """KPConv's neighbour gather: rows ``idx + arange(b)[:, None, None] * n`` of ``x`` flattened
    to ``(b * n, C)``, reshaped back to ``(b, n, k, -1)`` and contracted by an einsum. The
    arange's length is the batch (``size_factors``), so the -1 is C statically and the einsum
    imports (it failed: a broadcast to a run-time size)."""
    n, k, c = 6, 3, 4
    idx = np.random.default_rng(1).integers(0, n, (1, n, k)).astype("int64")
    nodes = _batch_of_shape([]) + [
        node("Cast", ["b"], ["bl"], to=TensorProto.INT64),
        node("Range", ["zero", "bl", "one"], ["r"]),
        node("Unsqueeze", ["r", "ax12"], ["r3"]),
        node("Mul", ["r3", "n"], ["off"]),
        node("Shape", ["x"], ["s2"]), node("Slice", ["s2", "ax0", "ax1"], ["bs"]),
        node("Concat", ["bs", "nk"], ["idx_shape"], axis=0),
        node("Expand", ["idx0", "idx_shape"], ["idx"]),
        node("Add", ["idx", "off"], ["rows"]),
        node("Reshape", ["rows", "minus1"], ["flat"]),
        node("Mul", ["b1", "n1"], ["bn"]),
        node("Concat", ["bn", "minus1"], ["to2"], axis=0),
        node("Reshape", ["x", "to2"], ["x2"]),
        node("Gather", ["x2", "flat"], ["g"], axis=0),
        node("Concat", ["b1", "nk", "minus1"], ["to4"], axis=0),
        node("Reshape", ["g", "to4"], ["nf"]),
        node("Einsum", ["nf", "w"], ["y"], equation="bnkc,kco->bno")]
    inits = {**SHAPE_INITS, "one": np.array(1, "int64"), "ax12": np.array([1, 2], "int64"),
             "ax1": np.array([1], "int64"), "n": np.array(n, "int64"),
             "n1": np.array([n], "int64"), "nk": np.array([n, k], "int64"),
             "minus1": np.array([-1], "int64"), "idx0": idx,
             "w": np.random.default_rng(2).standard_normal((k, c, 5)).astype("float32")}
    _check_two_batches(_model(nodes, ["N", n, c], ["N", n, 5], inits), [n, c])


def test_affine_grid_of_a_size_holding_the_run_time_batch():
    """A spatial transformer's ``F.affine_grid(theta, x.size())``: AffineGrid's size is
    Concat(Shape(x)[:1], [C, H, W]), so N is the batch (theta's); H and W are constants (it
    failed: 'AffineGrid's size must be a constant')."""
    nodes = _batch_of_shape([]) + [node("Concat", ["b1", "chw"], ["size"], axis=0),
                                   node("AffineGrid", ["x", "size"], ["y"], align_corners=0)]
    inits = {**SHAPE_INITS, "chw": np.array([1, 4, 5], "int64")}
    _check_two_batches(_model(nodes, ["N", 2, 3], ["N", 4, 5, 2], inits, opset=20), [2, 3])


def test_affine_grid_of_a_run_time_height_is_a_clear_error():
    nodes = [node("Shape", ["x"], ["s"]), node("Concat", ["one4", "s"], ["size"], axis=0),
             node("AffineGrid", ["t", "size"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, ["H", 5]),
                     helper.make_tensor_value_info("t", F, [1, 2, 3])],
        [helper.make_tensor_value_info("y", F, [1, "H", 5, 2])],
        initializer=[numpy_helper.from_array(np.array([1, 1], "int64"), "one4")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    with pytest.raises(ImportError_, match="AffineGrid's size .* dynamic size"):
        relay.frontend.from_onnx(model, shape={"x": [relay.Any(), 5], "t": [1, 2, 3]})
