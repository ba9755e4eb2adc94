"""relay.frontend.pytorch.from_exported_program on torchvision's roi_align and roi_pool (one node each;
torchvision's own ops or stand-ins with its schemas): vision.onnx_roi_align and vision.roi_pool
(corners rounded as torchvision does), built strict-native, against the op's own output."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs torch")
from frontend_models import build_and_run  # noqa: E402
from torchvision_cases import ALIGN, ROIS, RoiAlign, RoiPool, X  # noqa: E402
from torchvision_stand_in import ensure_ops  # noqa: E402

from minitvm.relay.frontend.pytorch import from_exported_program  # noqa: E402

ensure_ops()


def _check(module, op: str, exact: bool):
    args = (torch.from_numpy(X), torch.from_numpy(ROIS))
    want = module(*args).numpy()
    mod, params = from_exported_program(torch.export.export(module, args))
    assert op in mod.astext()
    names = [p.name_hint for p in mod["main"].params]
    got = build_and_run(mod, params, dict(zip(names, (X, ROIS), strict=True)))[0]
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(ALIGN))
def test_roi_align(name):
    _check(RoiAlign(ALIGN[name]), "vision.onnx_roi_align", exact=False)


def test_roi_pool():
    _check(RoiPool(), "vision.roi_pool", exact=True)


@pytest.mark.parametrize("module,op", [(RoiAlign(ALIGN["aligned_fixed"]), "vision.onnx_roi_align"),
                                       (RoiPool(), "vision.roi_pool")])
def test_torchscript_reaches_the_torchvision_converters(module, op):
    # relay.frontend.from_pytorch looks other namespaces' ops up by their full name
    from minitvm.relay.frontend import from_pytorch

    args = (torch.from_numpy(X), torch.from_numpy(ROIS))
    want = module(*args).numpy()
    traced = torch.jit.trace(module, args)
    mod, params = from_pytorch(traced, [("x", X.shape), ("rois", ROIS.shape)])
    assert op in mod.astext()
    got = build_and_run(mod, params, {"x": X, "rois": ROIS})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
