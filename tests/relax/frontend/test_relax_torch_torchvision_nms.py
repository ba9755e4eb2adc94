"""relax.frontend.torch.from_exported_program on torchvision's ``nms`` / ``batched_nms``: one
call of the native NMS kernel under torchvision's rules and a slice to the data-dependent count;
exact against torchvision (NaN scores first, ties the lower box, zero-size boxes, the float64
threshold)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs torch")
torchvision = pytest.importorskip("torchvision", reason="the comparison needs torchvision")
try:
    torch.ops.torchvision.nms  # noqa: B018 - raises when its kernels did not load
except Exception:  # noqa: BLE001 - built for another torch
    pytest.skip("torchvision's kernels do not load beside this torch", allow_module_level=True)

from torchvision_nms_cases import BatchedNms, Nms, nms_data  # noqa: E402,I001

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


def _vm(model, args):
    mod = from_exported_program(torch.export.export(model, tuple(map(torch.from_numpy, args))))
    assert "R.call_tir(cls.torchvision_nms" in mod.script()
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def _out(r):
    return (r[0] if isinstance(r, list | tuple) else r).numpy()


@pytest.mark.parametrize("iou", [0.3, 0.5, 0.7, 0.0])
def test_nms_matches_torchvision(iou):
    boxes, scores, _ = nms_data(40, 0)
    vm = _vm(Nms(iou), (boxes, scores))
    for seed in range(4):
        boxes, scores, _ = nms_data(40, seed)
        want = torchvision.ops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), iou)
        got = _out(vm["main"](tvm.nd.array(boxes), tvm.nd.array(scores)))
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want.numpy())


def test_batched_nms_matches_torchvision():
    args = nms_data(60, 1, nan=0.9)
    vm = _vm(BatchedNms(0.4), args)
    for seed in range(3):
        b, s, i = nms_data(60, seed + 5, nan=0.25)
        want = torchvision.ops.batched_nms(*map(torch.from_numpy, (b, s, i)), 0.4).numpy()
        got = _out(vm["main"](tvm.nd.array(b), tvm.nd.array(s), tvm.nd.array(i)))
        np.testing.assert_array_equal(got, want)
