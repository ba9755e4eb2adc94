"""relay.frontend.pytorch.from_pytorch (a traced module) on torchvision's ``nms`` /
``batched_nms``: vision.all_class_non_max_suppression under torchvision's rules and a slice to
the data-dependent count, on the Relay VM; exact against torchvision (NaN scores first, ties the
lower box, zero-size boxes, the float64 threshold)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs torch")
torchvision = pytest.importorskip("torchvision", reason="the comparison needs torchvision")
try:
    torch.ops.torchvision.nms  # noqa: B018 - raises when its kernels did not load
except Exception:  # noqa: BLE001 - built for another torch
    pytest.skip("torchvision's kernels do not load beside this torch", allow_module_level=True)

from torchvision_nms_cases import Nms, OffsetNms, nms_data  # noqa: E402,I001

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend.pytorch import from_pytorch  # noqa: E402


def _vm(module, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on batched_nms's branches
        traced = torch.jit.trace(module, tuple(map(torch.from_numpy, args)))
    specs = [(f"x{k}", (a.shape, str(a.dtype))) for k, a in enumerate(args)]
    mod, params = from_pytorch(traced, specs)
    text = mod.astext()
    assert 'rules="torchvision"' in text and "dyn.strided_slice" in text
    with tvm.transform.PassContext(opt_level=3):
        return relay.create_executor("vm", mod=mod, target="llvm", params=params).evaluate()


@pytest.mark.parametrize("iou", [0.3, 0.5, 0.7, 0.0])
def test_nms_matches_torchvision(iou):
    run = _vm(Nms(iou), nms_data(40, 0)[:2])
    for seed in range(4):
        boxes, scores, _ = nms_data(40, seed)
        want = torchvision.ops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), iou)
        got = run(boxes, scores).numpy()
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want.numpy())


def test_batched_nms_matches_torchvision():
    """batched_nms's coordinate trick written out: torch.jit.trace keeps batched_nms itself as a
    scripted function with a prim::If, which from_pytorch does not take."""
    run = _vm(OffsetNms(0.4), nms_data(60, 1, nan=0.9))
    for seed in range(3):
        args = nms_data(60, seed + 5, nan=0.25)
        want = torchvision.ops.batched_nms(*map(torch.from_numpy, args), 0.4).numpy()
        np.testing.assert_array_equal(run(*args).numpy(), want)
