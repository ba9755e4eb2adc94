"""relax.frontend.onnx.from_onnx on a Resize whose scales or sizes are graph inputs: each
spatial axis sampled by its run-time scale (fractional output sizes, antialiased downscales),
compiled once and run at several input sizes and scales against onnxruntime; values that are
not positive or would resize the batch fail at run time naming the node; attributes with no
run-time form are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
from onnx_run_time_resize_cases import CASES, given, run_time_resize_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


def _vm(model):
    return relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())


def _check(model, by, cases):
    vm = _vm(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape, values in cases:
        x = np.random.default_rng(len(shape)).standard_normal(shape).astype("float32")
        want = sess.run(None, {"x": x, "s": given(by, values)})[0]
        got = vm["main"](tvm.nd.array(x), tvm.nd.array(given(by, values))).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs, by, cases", CASES)
def test_run_time_scales_and_sizes_match_onnxruntime(attrs, by, cases):
    _check(run_time_resize_model(4, attrs, by), by, cases)


@pytest.mark.parametrize("rank, shape, scales", [(3, (2, 2, 9), [0.45]),
                                                 (5, (1, 2, 3, 4, 5), [1.5, 0.6, 1.0])])
def test_1d_and_3d_resize_by_run_time_scales(rank, shape, scales):
    _check(run_time_resize_model(rank, {"mode": "linear"}, "scales"), "scales",
           [(shape, scales)])


def test_static_input_and_scales_of_every_axis():
    # (a static input: the scales alone are read from data; the batch and channels' scales
    # are checked to be 1 at run time)
    model = run_time_resize_model(4, {"mode": "linear", "name": "rs"}, "scales", batch=1,
                                  every_axis=True)
    _check(model, "scales", [((1, 2, 4, 5), [1.0, 1.0, 1.5, 0.7])])
    x = tvm.nd.array(np.zeros((1, 2, 4, 5), "float32"))
    with pytest.raises(AssertionError, match=r"Resize node 'rs': the scales .* must keep axes "
                                             r"0 and 1"):
        _vm(model)["main"](x, tvm.nd.array(given("scales", [1.0, 2.0, 1.5, 0.7])))


def test_tf_crop_and_resize_by_run_time_scales():
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": -2.0}
    _check(run_time_resize_model(4, attrs, "scales", roi=[0.1, -0.2, 0.8, 1.2]), "scales",
           [((1, 2, 4, 5), [1.5, 0.7])])


def test_non_positive_scales_fail_at_run_time():
    vm = _vm(run_time_resize_model(4, {"mode": "linear", "name": "rs"}, "scales"))
    with pytest.raises(AssertionError, match=r"Resize node 'rs': the spatial scales .* must be "
                                             r"positive"):
        vm["main"](tvm.nd.array(np.zeros((1, 2, 4, 5), "float32")),
                   tvm.nd.array(given("scales", [2.0, 0.0])))


def test_refusals_name_the_attribute():
    with pytest.raises(ONNXImportError, match=r"Resize's sizes are known only at run time, "
                                              r"and its antialias=1 has no run-time form"):
        from_onnx(run_time_resize_model(4, {"mode": "nearest", "antialias": 1}, "sizes"))
    # (its one scale would resize the batch and channels too)
    with pytest.raises(ONNXImportError, match=r"keep_aspect_ratio_policy='not_smaller' over "
                                              r"axes \[0, 1, 2, 3\] would resize the batch"):
        from_onnx(run_time_resize_model(4, {"mode": "linear",
                                            "keep_aspect_ratio_policy": "not_smaller"},
                                        "sizes", every_axis=True))


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_keep_aspect_ratio_policy_to_run_time_sizes(policy):
    # (the not_larger scale 1.6 of the last case makes a height of 6.4, sampled by 1.6)
    _check(run_time_resize_model(4, {"mode": "linear", "keep_aspect_ratio_policy": policy},
                                 "sizes"),
           "sizes", [((1, 2, 4, 6), [8, 15]), ((1, 2, 4, 5), [8, 8])])


@pytest.mark.parametrize("elem, mode", [
    (onnx.TensorProto.UINT8, "nearest"), (onnx.TensorProto.UINT8, "linear"),
    (onnx.TensorProto.INT8, "linear"),
    (onnx.TensorProto.INT32, "linear")])
def test_integer_inputs_resize_by_run_time_sizes(elem, mode):
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode=mode, axes=[2, 3])],
        "g", [onnx.helper.make_tensor_value_info("x", elem, ["N", 2, None, None]),
              onnx.helper.make_tensor_value_info("s", onnx.TensorProto.INT64, [2])],
        [onnx.helper.make_tensor_value_info("y", elem, None)])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])
    vm = _vm(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(elem)
    for shape, size in (((1, 2, 4, 5), [7, 8]), ((3, 2, 5, 3), [2, 9])):
        x = rng.integers(max(info.min, -10**6), min(info.max, 10**6), shape, endpoint=True)
        x = x.astype(dtype)
        want = sess.run(None, {"x": x, "s": np.array(size)})[0]
        got = vm["main"](tvm.nd.array(x), tvm.nd.array(np.array(size))).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        # (nearest is exact; an interpolation truncates the exact value, onnxruntime its
        # float32 arithmetic's, which may land 1 off next to an integer)
        np.testing.assert_allclose(got.astype("int64"), want.astype("int64"), rtol=0,
                                   atol=0 if mode == "nearest" else 1)
