"""relax.frontend.onnx.from_onnx on RoiAlign (opsets 10 and 16), with a static and a symbolic
number of boxes, on the Relax VM against onnx's reference implementation; and the error for an
adaptive sampling grid."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_roi_cases import ROI_ALIGN, roi_align_inputs, roi_align_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("name", list(ROI_ALIGN))
def test_roi_align(name, symbolic):
    case = ROI_ALIGN[name]
    mod = from_onnx(roi_align_model(case, "boxes" if symbolic else 5))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for count in ((2, 7) if symbolic else (5,)):
        feeds = roi_align_inputs(case, count)
        want = ReferenceEvaluator(roi_align_model(case, count)).run(None, feeds)[0]
        got = vm["main"](*[tvm.nd.array(feeds[k]) for k in ("x", "rois", "idx")]).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_adaptive_sampling_is_a_clear_error():
    case = ((1, 1, 4, 4), {"output_height": 2, "output_width": 2}, 16)
    with pytest.raises(ONNXImportError, match="sampling_ratio 0 .adaptive."):
        from_onnx(roi_align_model(case))
