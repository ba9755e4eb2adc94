"""relay.frontend.from_onnx on RoiAlign (opsets 10 and 16, fixed and adaptive sampling grids)
and MaxRoiPool: one native kernel each (``vision.onnx_roi_align``, ``vision.roi_pool``), built
strict-native, against onnx's reference implementation and ONNX Runtime; the numpy reference
(Relay's interpreter) against the kernel; and the errors for what stays unsupported."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from frontend_models import build_and_run  # noqa: E402
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
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402

ALIGN = {**ROI_ALIGN, **{f"adaptive_{k}": v for k, v in ROI_ALIGN_ADAPTIVE.items()}}


def _import(model, feeds):
    return relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()},
                                    {k: str(v.dtype) for k, v in feeds.items()})


def _run(model, feeds, op="vision.onnx_roi_align"):
    mod, params = _import(model, feeds)
    text = mod.astext()
    assert op in text and "matmul" not in text and "dense" not in text
    return build_and_run(mod, params, feeds)[0]


def _ort(model, feeds):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("name", list(ALIGN))
def test_roi_align(name):
    case = ALIGN[name]
    model, feeds = roi_align_model(case), roi_align_inputs(case)
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_allclose(_run(model, feeds), want, rtol=1e-5, atol=1e-6)


ALL = {**ALIGN, **{f"opset10_{k}": v for k, v in ROI_ALIGN_10.items()}}


@pytest.mark.parametrize("name", list(ALL))
def test_roi_align_matches_onnxruntime(name):
    case = ALL[name]
    model, feeds = roi_align_model(case), roi_align_inputs(case, seed=1)
    np.testing.assert_allclose(_run(model, feeds), _ort(model, feeds), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(ROI_ALIGN_10))
def test_opset10_boxes_are_output_half_pixel(name):
    """Opset 10 (no coordinate_transformation_mode) samples as opset 16's
    output_half_pixel."""
    shape, attrs, _ = ROI_ALIGN_10[name]
    feeds = roi_align_inputs(ROI_ALIGN_10[name])
    new = (shape, {**attrs, "coordinate_transformation_mode": "output_half_pixel"}, 16)
    np.testing.assert_allclose(_run(roi_align_model(ROI_ALIGN_10[name]), feeds),
                               _run(roi_align_model(new), feeds), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["avg_half_pixel", "adaptive_max_half_pixel"])
def test_interpreter_reference_matches_the_kernel(name):
    """The op's numpy reference (the debug interpreter, constant folding) computes what the
    native kernel does."""
    case = ALIGN[name]
    model, feeds = roi_align_model(case), roi_align_inputs(case)
    mod, params = _import(model, feeds)
    ex = relay.create_executor("debug", mod=mod, device=tvm.cpu(), target="llvm")
    got = ex.evaluate()(*[feeds[k] for k in ("x", "rois", "idx")]).numpy()
    np.testing.assert_allclose(got, _run(model, feeds), rtol=1e-6, atol=1e-6)


def test_bad_sampling_ratio_is_a_clear_error():
    case = ((1, 1, 4, 4), {"output_height": 2, "output_width": 2, "sampling_ratio": -1}, 16)
    with pytest.raises(ImportError_, match="sampling_ratio must be >= 0"):
        _import(roi_align_model(case), roi_align_inputs(case))


@pytest.mark.parametrize("name", list(MAX_ROI_POOL))
def test_max_roi_pool_matches_onnxruntime(name):
    """ONNX Runtime rounds the scaled corners halves away from zero (a box at 2.5 starts at
    3), vision.roi_pool half to even: the importer rounds them first."""
    case = MAX_ROI_POOL[name]
    model, feeds = max_roi_pool_model(case), max_roi_pool_inputs(case)
    np.testing.assert_array_equal(_run(model, feeds, "vision.roi_pool"), _ort(model, feeds))


def test_max_roi_pool_needs_five_box_columns():
    shape, attrs = MAX_ROI_POOL["unit_scale"]
    feeds = max_roi_pool_inputs(MAX_ROI_POOL["unit_scale"])
    model = max_roi_pool_model((shape, attrs))
    feeds["rois"] = feeds["rois"][:, 1:]
    with pytest.raises(ImportError_, match=r"rois must be \[num_rois, 5\]"):
        _import(model, feeds)
