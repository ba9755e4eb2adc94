"""relay.frontend.from_onnx on RoiAlign (opsets 10 and 16): interpolation matrices and dense
products built strict-native, against onnx's reference implementation and ONNX Runtime; and
the error for an adaptive sampling grid."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from frontend_models import build_and_run  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_roi_cases import (  # noqa: E402
    ROI_ALIGN,
    ROI_ALIGN_10,
    roi_align_inputs,
    roi_align_model,
)

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


def _run(model, feeds):
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()},
                                           {k: str(v.dtype) for k, v in feeds.items()})
    assert "vision.roi_align" not in mod.astext()
    return build_and_run(mod, params, feeds)[0]


@pytest.mark.parametrize("name", list(ROI_ALIGN))
def test_roi_align(name):
    case = ROI_ALIGN[name]
    model, feeds = roi_align_model(case), roi_align_inputs(case)
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_allclose(_run(model, feeds), want, rtol=1e-4, atol=1e-5)


ALL = {**ROI_ALIGN, **{f"opset10_{k}": v for k, v in ROI_ALIGN_10.items()}}


@pytest.mark.parametrize("name", list(ALL))
def test_roi_align_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    case = ALL[name]
    model, feeds = roi_align_model(case), roi_align_inputs(case, seed=1)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(_run(model, feeds), sess.run(None, feeds)[0], rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("name", list(ROI_ALIGN_10))
def test_opset10_boxes_are_output_half_pixel(name):
    """Opset 10 (no coordinate_transformation_mode) samples as opset 16's
    output_half_pixel."""
    shape, attrs, _ = ROI_ALIGN_10[name]
    feeds = roi_align_inputs(ROI_ALIGN_10[name])
    new = (shape, {**attrs, "coordinate_transformation_mode": "output_half_pixel"}, 16)
    np.testing.assert_allclose(_run(roi_align_model(ROI_ALIGN_10[name]), feeds),
                               _run(roi_align_model(new), feeds), rtol=1e-6, atol=1e-7)


def test_adaptive_sampling_is_a_clear_error():
    case = ((1, 1, 4, 4), {"output_height": 2, "output_width": 2}, 16)
    shapes = {k: v.shape for k, v in roi_align_inputs(case).items()}
    with pytest.raises(ImportError_, match="sampling_ratio 0 .adaptive."):
        relay.frontend.from_onnx(roi_align_model(case), shapes, {"idx": "int64"})
