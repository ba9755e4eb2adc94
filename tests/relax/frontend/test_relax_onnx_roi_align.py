"""relax.frontend.onnx.from_onnx on RoiAlign (opsets 10 and 16, fixed and adaptive sampling
grids) and MaxRoiPool, with a static and a symbolic number of boxes: each one call_tir of its
native kernel, on the Relax VM against onnx's reference implementation and ONNX Runtime; and the
errors for what stays unsupported."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_roi_cases import (  # noqa: E402
    MAX_ROI_POOL,
    ROI_ALIGN,
    ROI_ALIGN_10,
    ROI_ALIGN_ADAPTIVE,
    max_roi_pool_inputs,
    max_roi_pool_model,
    roi_align_inputs,
    roi_align_model,
)

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402

ALIGN = {**ROI_ALIGN, **{f"adaptive_{k}": v for k, v in ROI_ALIGN_ADAPTIVE.items()}}


def _vm(mod, kernel: str):
    text = mod.script()
    assert f"R.call_tir(cls.{kernel}" in text and "matmul" not in text
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def _ort(model, feeds):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("name", list(ALIGN))
def test_roi_align(name, symbolic):
    case = ALIGN[name]
    vm = _vm(from_onnx(roi_align_model(case, "boxes" if symbolic else 6)), "onnx_roi_align")
    for count in ((2, 7) if symbolic else (6,)):
        feeds = roi_align_inputs(case, count)
        want = ReferenceEvaluator(roi_align_model(case, count)).run(None, feeds)[0]
        got = vm["main"](*[tvm.nd.array(feeds[k]) for k in ("x", "rois", "idx")]).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(ROI_ALIGN_10))
def test_roi_align_opset10_matches_onnxruntime(name):
    case = ROI_ALIGN_10[name]
    model, feeds = roi_align_model(case), roi_align_inputs(case, seed=1)
    got = _vm(from_onnx(model), "onnx_roi_align")["main"](
        *[tvm.nd.array(feeds[k]) for k in ("x", "rois", "idx")]).numpy()
    np.testing.assert_allclose(got, _ort(model, feeds), rtol=1e-5, atol=1e-6)


def test_bad_sampling_ratio_is_a_clear_error():
    case = ((1, 1, 4, 4), {"output_height": 2, "output_width": 2, "sampling_ratio": -1}, 16)
    with pytest.raises(ONNXImportError, match="sampling_ratio must be >= 0"):
        from_onnx(roi_align_model(case))


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("name", list(MAX_ROI_POOL))
def test_max_roi_pool_matches_onnxruntime(name, symbolic):
    case = MAX_ROI_POOL[name]
    vm = _vm(from_onnx(max_roi_pool_model(case, "boxes" if symbolic else 6)),
             "onnx_max_roi_pool")
    for count in ((3, 6) if symbolic else (6,)):
        feeds = max_roi_pool_inputs(case, count)
        got = vm["main"](tvm.nd.array(feeds["x"]), tvm.nd.array(feeds["rois"])).numpy()
        np.testing.assert_array_equal(got, _ort(max_roi_pool_model(case, count), feeds))


def test_max_roi_pool_needs_static_channels():
    shape, attrs = MAX_ROI_POOL["unit_scale"]
    with pytest.raises(ONNXImportError, match="C, H and W must be static"):
        from_onnx(max_roi_pool_model((("n", "c", shape[2], shape[3]), attrs)))


def test_roi_align_of_computed_inputs():
    """Inputs computed by other ops (which FuseOps may want to fuse with the kernel): the
    kernel's PrimFunc stays a call of its own."""
    case = ROI_ALIGN["avg_half_pixel"]
    shape, attrs, opset = case
    vi = onnx.helper.make_tensor_value_info
    f = onnx.TensorProto.FLOAT
    nodes = [onnx.helper.make_node("Relu", ["x"], ["xr"]),
             onnx.helper.make_node("Add", ["rois", "rois"], ["r2"]),
             onnx.helper.make_node("RoiAlign", ["xr", "r2", "idx"], ["y0"], **attrs),
             onnx.helper.make_node("Neg", ["y0"], ["y"])]
    inputs = [vi("x", f, shape), vi("rois", f, [6, 4]),
              vi("idx", onnx.TensorProto.INT64, [6])]
    model = onnx.helper.make_model(
        onnx.helper.make_graph(nodes, "g", inputs, [vi("y", f, None)]),
        opset_imports=[onnx.helper.make_opsetid("", opset)])
    feeds = roi_align_inputs(case)
    got = _vm(from_onnx(model), "onnx_roi_align")["main"](
        *[tvm.nd.array(feeds[k]) for k in ("x", "rois", "idx")]).numpy()
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, feeds)[0], rtol=1e-5,
                               atol=1e-6)
