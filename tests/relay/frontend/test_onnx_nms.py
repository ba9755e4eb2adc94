"""relay.frontend.from_onnx on NonMaxSuppression: vision.all_class_non_max_suppression (a
native kernel, strict build) and a slice to the data-dependent count, on the Relay VM; exact
against ONNX Runtime (and onnx's reference where it runs) for every case of
``onnx_nms_cases``: centre boxes, optional inputs left out, ties and IoU at the threshold."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_nms_cases import EDGE, NMS, nms_edge_inputs, nms_edge_model, nms_inputs, nms_model  # noqa: E402,E501

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


def _vm(model, feeds):
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()})
    text = mod.astext()
    assert "vision.all_class_non_max_suppression" in text and "dyn.strided_slice" in text
    with tvm.transform.PassContext(opt_level=3):
        run = relay.create_executor("vm", mod=mod, target="llvm").evaluate()
    return run(feeds["boxes"], feeds["scores"]).numpy()


@pytest.mark.parametrize("name", list(NMS))
def test_nms_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    case = NMS[name]
    model, feeds = nms_model(case), nms_inputs(case)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)[0]
    got = _vm(model, feeds)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["corners", "centre", "iou_one_third"])
def test_nms_matches_the_onnx_reference(name):
    case = NMS[name]
    model, feeds = nms_model(case, 1, 30, 2), nms_inputs(case, 1, 30, 2, seed=4)
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_array_equal(_vm(model, feeds), want)


def test_nms_needs_boxes_of_four():
    model = nms_model(NMS["corners"])
    feeds = nms_inputs(NMS["corners"])
    feeds["boxes"] = feeds["boxes"][..., :3]
    with pytest.raises(ImportError_, match=r"boxes \[B, N, 4\] and scores \[B, C, N\]"):
        relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()})


def _ort(model, feeds):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("name", list(EDGE))
def test_nms_edge_values_match_onnxruntime(name):
    """NaN / +-inf / +-0 scores with and without a threshold (ORT's heap order for NaN), NaN
    and infinite corners, zero and negative sizes, centre boxes, limits 0 and 1, IoU 0 and 1."""
    model = nms_edge_model(EDGE[name])
    for seed in range(4):
        feeds = nms_edge_inputs(seed=seed)
        want = _ort(model, feeds)
        got = _vm(model, feeds)
        assert got.shape == want.shape, (seed, got.shape, want.shape)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dims", [(1, 0, 3), (1, 5, 0), (0, 5, 3)])
def test_nms_of_no_boxes_classes_or_batches(dims):
    b, n, c = dims
    model = nms_model(NMS["limit_only"], b, n, c)
    feeds = {"boxes": np.zeros((b, n, 4), "float32"), "scores": np.zeros((b, c, n), "float32")}
    got = _vm(model, feeds)
    assert got.shape == (0, 3) and got.dtype == np.int64
    np.testing.assert_array_equal(got, _ort(model, feeds))


def test_nms_iou_threshold_out_of_range_is_refused():
    model = nms_edge_model((0, 10, 1.5, None))
    with pytest.raises(ImportError_, match=r"iou_threshold must be in \[0, 1\].*got 1.5"):
        relay.frontend.from_onnx(model, {"boxes": (2, 40, 4), "scores": (2, 3, 40)})
