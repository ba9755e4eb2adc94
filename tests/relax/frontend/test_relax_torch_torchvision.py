"""relax.frontend.torch.from_exported_program on torchvision's roi_align and roi_pool (one node
each in an exported program; torchvision's own ops or stand-ins with its schemas): a call of
ONNX RoiAlign's / MaxRoiPool's native kernel, against the op's own output."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs torch")
from torchvision_cases import ALIGN, ROIS, RoiAlign, RoiPool, X  # noqa: E402
from torchvision_stand_in import ensure_ops  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402

ensure_ops()


def _check(module, kernel: str, exact: bool):
    args = (torch.from_numpy(X), torch.from_numpy(ROIS))
    want = module(*args).numpy()
    mod = from_exported_program(torch.export.export(module, args))
    assert f"R.call_tir(cls.{kernel}" in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(X), tvm.nd.array(ROIS))[0].numpy()  # (a one-tuple)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(ALIGN))
def test_roi_align(name):
    _check(RoiAlign(ALIGN[name]), "torchvision_roi_align", exact=False)


def test_roi_pool():
    _check(RoiPool(), "torchvision_roi_pool", exact=True)
