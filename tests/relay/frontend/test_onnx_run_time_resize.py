"""ONNX Resize to sizes read at run time beyond 2-D: 1-D (N, C, W) and 3-D (N, C, D, H, W)
inputs, sizes or scales from a graph input, compiled once (strict-native) and run at several
sizes against onnxruntime; attributes with no run-time form are refused by name."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend.common import ImportError_  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(rank: int, attrs: dict, by: str = "sizes", roi=None):
    k = rank - 2
    r = "roi" if roi is not None else ""
    ins = ["x", r, "", "s"] if by == "sizes" else ["x", r, "s"]
    graph = helper.make_graph(
        [helper.make_node("Resize", ins, ["y"], axes=list(range(2, rank)), **attrs)], "g",
        [helper.make_tensor_value_info("x", F, ["N", 2] + [None] * k),
         helper.make_tensor_value_info("s", I64 if by == "sizes" else F, [k])],
        [helper.make_tensor_value_info("y", F, None)],
        initializer=[] if roi is None else [helper.make_tensor("roi", F, [2 * k], roi)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _import(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return relay.frontend.from_onnx(model)


def _check(model, cases):
    """Each (input shape, sizes or scales) of ``cases`` against onnxruntime."""
    mod, params = _import(model)
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm", params=params),
                                       tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape, s in cases:
        x = np.random.default_rng(len(shape)).standard_normal(shape).astype("float32")
        want = sess.run(None, {"x": x, "s": s})[0]
        got = vm.run(x, s).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", [
    {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
    {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn",
     "nearest_mode": "round_prefer_floor"},
    {"mode": "linear"},
    {"mode": "nearest", "coordinate_transformation_mode": "pytorch_half_pixel"}])
def test_1d_resize_to_run_time_sizes(attrs):
    _check(_model(3, attrs), [((1, 2, 5), np.array([9])), ((3, 2, 4), np.array([2]))])


@pytest.mark.parametrize("attrs", [
    {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn",
     "nearest_mode": "round_prefer_floor"},
    {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, {"mode": "linear"}])
def test_3d_resize_to_run_time_sizes(attrs):
    _check(_model(5, attrs), [((1, 2, 3, 4, 5), np.array([5, 2, 7])),
                              ((2, 2, 2, 3, 3), np.array([1, 6, 3]))])


def test_3d_resize_by_run_time_scales():
    _check(_model(5, {"mode": "nearest"}, by="scales"),
           [((1, 2, 2, 3, 4), np.array([2.0, 1.0, 0.5], "float32"))])


@pytest.mark.parametrize("rank, roi, sizes", [
    (3, [0.2, 0.9], [[7], [3]]), (4, [0.1, 0.0, 0.8, 1.2], [[4, 6], [3, 4]]),
    (5, [0.0, 0.25, -0.1, 1.0, 0.75, 0.9], [[3, 4, 6], [2, 3, 5]])])
def test_tf_crop_and_resize_to_run_time_sizes(rank, roi, sizes):
    """The roi's region of each spatial axis, outside the input the extrapolation value."""
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": -2.0}
    shape = (1, 2, 3, 4, 5)[:rank]
    _check(_model(rank, attrs, roi=roi), [(shape, np.array(s)) for s in sizes])


@pytest.mark.parametrize("attrs, named", [
    ({"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn",
      "nearest_mode": "ceil"},
     "coordinate_transformation_mode='tf_half_pixel_for_nn' with nearest_mode='ceil'"),
    ({"mode": "nearest", "antialias": 1}, "antialias=1")])  # (onnxruntime: linear, cubic)
def test_refusals_name_the_attribute(attrs, named):
    # (antialias and keep_aspect_ratio_policy over the spatial axes, refused here before, have
    # run-time forms now: see the tests below)
    with pytest.raises(ImportError_, match=rf"Resize: Resize's sizes give output sizes known "
                                           rf"only at run time, and its {named} has no run-time"):
        _import(_model(4, attrs))


def test_a_keep_aspect_ratio_policy_over_every_axis_is_refused_by_name():
    # (its one scale would resize the batch and channels too)
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="linear",
                          keep_aspect_ratio_policy="not_smaller")], "g",
        [helper.make_tensor_value_info("x", F, ["N", 2, None, None]),
         helper.make_tensor_value_info("s", I64, [4])],
        [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(ImportError_, match=r"Resize: Resize's sizes give output sizes known only "
                       r"at run time, and its keep_aspect_ratio_policy='not_smaller' has no "
                       r"run-time form"):
        _import(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))


def _vm(model):
    mod, params = _import(model)
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        return runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm", params=params),
                                         tvm.cpu())


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_keep_aspect_ratio_policy_to_run_time_sizes(policy):
    # (one scale for both axes: the least or greatest of sizes / input; each output
    # round(scale * input), which onnxruntime samples by that scale: the last case's
    # not_larger scale 1.6 makes a height of 6.4, sampled by 1.6, not 6 / 4)
    model = _model(4, {"mode": "linear", "keep_aspect_ratio_policy": policy, "name": "rs"})
    _check(model, [((1, 2, 4, 6), np.array([8, 15])), ((2, 2, 3, 5), np.array([9, 10])),
                   ((1, 2, 6, 4), np.array([3, 2])), ((1, 2, 4, 5), np.array([8, 8]))])


@pytest.mark.parametrize("attrs", [{"mode": "linear"}, {"mode": "cubic", "exclude_outside": 1,
                                                      "cubic_coeff_a": -0.5}])
def test_antialias_downscales_and_upscales_at_run_time(attrs):
    # (a downscale stretches the kernel by 1 / scale: its taps, and their count, follow the
    # run-time sizes)
    model = _model(4, dict(attrs, antialias=1))
    _check(model, [((2, 2, 3, 3), np.array([3, 8])), ((1, 2, 12, 12), np.array([5, 7])),
                   ((1, 2, 9, 11), np.array([2, 17]))])


@pytest.mark.parametrize("attrs", [{"mode": "linear"}, {"mode": "cubic", "exclude_outside": 1}])
def test_antialias_by_run_time_scales(attrs):
    _check(_model(4, dict(attrs, antialias=1), by="scales"),
           [((1, 2, 9, 11), np.array([0.6, 0.45], "float32")),
            ((1, 2, 6, 5), np.array([1.5, 0.5], "float32"))])


@pytest.mark.parametrize("elem, mode", [
    (TensorProto.UINT8, "nearest"), (TensorProto.UINT8, "linear"), (TensorProto.INT8, "linear"),
    (TensorProto.INT32, "nearest"), (TensorProto.INT32, "linear")])
def test_integer_inputs_resize_to_run_time_sizes(elem, mode):
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode=mode, axes=[2, 3])], "g",
        [helper.make_tensor_value_info("x", elem, ["N", 2, None, None]),
         helper.make_tensor_value_info("s", I64, [2])],
        [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    vm = _vm(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(elem)
    for shape, size in (((1, 2, 4, 5), [7, 8]), ((3, 2, 5, 3), [2, 9]), ((1, 2, 6, 6), [6, 4])):
        x = rng.integers(max(info.min, -10**6), min(info.max, 10**6), shape, endpoint=True)
        x = x.astype(dtype)
        want = sess.run(None, {"x": x, "s": np.array(size)})[0]
        got = vm.run(x, np.array(size)).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        # (nearest is exact; linear truncates the exact interpolation, onnxruntime its float32
        # arithmetic's, which may land 1 off next to an integer)
        np.testing.assert_allclose(got.astype("int64"), want.astype("int64"), rtol=0,
                                   atol=0 if mode == "nearest" else 1)
        if mode == "linear":  # (and only there: most elements agree)
            assert np.mean(got == want) > 0.9


@pytest.mark.parametrize("attrs", [
    {"mode": "linear"}, {"mode": "cubic"}, {"mode": "nearest"},
    {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
    {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
    {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
    {"mode": "cubic", "coordinate_transformation_mode": "tf_half_pixel_for_nn"}])
def test_run_time_scales_with_a_fractional_output_size_sample_by_the_scale(attrs):
    # (onnxruntime samples a width of 5 by 0.5 at (o + 0.5) / 0.5 - 0.5, not by the ratio
    # 5 / 2 of the sizes; a height of 7 by 0.7 gives 4 outputs sampled by 0.7; 0.2 one output)
    _check(_model(4, attrs, by="scales"),
           [((1, 2, 4, 5), np.array([2.0, 0.5], "float32")),
            ((3, 2, 7, 5), np.array([0.7, 1.3], "float32")),
            ((1, 2, 7, 5), np.array([0.2, 2.3], "float32"))])


@pytest.mark.parametrize("rank, scales", [(3, [0.45]), (5, [1.5, 0.6, 1.0])])
def test_1d_and_3d_resize_by_fractional_run_time_scales(rank, scales):
    shape = (2, 2, 9) if rank == 3 else (1, 2, 3, 4, 5)
    _check(_model(rank, {"mode": "linear"}, by="scales"),
           [(shape, np.array(scales, "float32"))])


def test_tf_crop_and_resize_by_run_time_scales():
    # (outside the roi's region: the extrapolation value)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": -2.0}
    _check(_model(4, attrs, by="scales", roi=[0.1, -0.2, 0.8, 1.2]),
           [((1, 2, 4, 5), np.array([1.5, 0.7], "float32"))])


def test_run_time_scales_must_be_positive():
    vm = _vm(_model(4, {"mode": "linear", "name": "rs"}, by="scales"))
    with pytest.raises(RuntimeError, match=r"Resize node 'rs': the spatial scales .* must be "
                                           r"positive"):
        vm.run(np.zeros((1, 2, 4, 5), "float32"), np.array([2.0, 0.0], "float32"))
