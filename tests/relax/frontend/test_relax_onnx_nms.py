"""relax.frontend.onnx.from_onnx on NonMaxSuppression: one call_tir of the native kernel and a
dynamic_strided_slice to the data-dependent count, with static and symbolic batch and box
counts, exact against ONNX Runtime for every case of ``onnx_nms_cases`` (centre boxes,
optional inputs left out, ties and IoU at the threshold); a run-time limit input."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from onnx_nms_cases import EDGE, NMS, nms_edge_inputs, nms_edge_model, nms_inputs, nms_model  # noqa: E402,E501

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _vm(mod):
    text = mod.script()
    assert "R.call_tir(cls.onnx_non_max_suppression" in text
    assert "R.dynamic_strided_slice" in text
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("name", list(NMS))
def test_nms_matches_onnxruntime(name, symbolic):
    case = NMS[name]
    vm = _vm(from_onnx(nms_model(case, *(("batch", "boxes") if symbolic else (2, 12)))))
    for dims in ((2, 12), (1, 30)) if symbolic else ((2, 12),):
        feeds = nms_inputs(case, *dims)
        got = vm["main"](tvm.nd.array(feeds["boxes"]), tvm.nd.array(feeds["scores"])).numpy()
        want = _ort(nms_model(case, *dims), feeds)
        assert got.dtype == np.int64 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_nms_limit_and_thresholds_as_graph_inputs():
    """Inputs known only at run time: a negative limit selects nothing, as ONNX Runtime."""
    vi = helper.make_tensor_value_info
    inputs = [vi("boxes", TensorProto.FLOAT, [2, 12, 4]),
              vi("scores", TensorProto.FLOAT, [2, 3, 12]), vi("max_out", TensorProto.INT64, []),
              vi("iou", TensorProto.FLOAT, [1]), vi("score", TensorProto.FLOAT, [1])]
    node = helper.make_node("NonMaxSuppression", [i.name for i in inputs], ["y"])
    model = helper.make_model(
        helper.make_graph([node], "nms", inputs, [vi("y", TensorProto.INT64, None)]),
        opset_imports=[helper.make_opsetid("", 11)])
    vm = _vm(from_onnx(model))
    feeds = nms_inputs(NMS["corners"])
    for limit, iou, score in ((2, 0.5, 0.2), (-3, 0.5, 0.0), (50, 0.0, 0.5)):
        feeds.update(max_out=np.asarray(limit, "int64"), iou=np.asarray([iou], "float32"),
                     score=np.asarray([score], "float32"))
        got = vm["main"](*[tvm.nd.array(feeds[i.name]) for i in inputs]).numpy()
        np.testing.assert_array_equal(got, _ort(model, feeds))


def test_nms_needs_static_classes():
    with pytest.raises(ONNXImportError, match="number of classes must be static"):
        from_onnx(nms_model(NMS["corners"], classes="c"))


@pytest.mark.parametrize("name", list(EDGE))
def test_nms_edge_values_match_onnxruntime(name):
    """NaN / +-inf / +-0 scores with and without a threshold (ORT's heap order for NaN), NaN
    and infinite corners, zero and negative sizes, centre boxes, limits 0 and 1, IoU 0 and 1;
    a symbolic box count."""
    vm = _vm(from_onnx(nms_edge_model(EDGE[name], boxes="boxes")))
    for seed, n in ((0, 40), (1, 40), (2, 17), (3, 64)):
        feeds = nms_edge_inputs(boxes=n, seed=seed)
        want = _ort(nms_edge_model(EDGE[name], boxes=n), feeds)
        got = vm["main"](tvm.nd.array(feeds["boxes"]), tvm.nd.array(feeds["scores"])).numpy()
        assert got.shape == want.shape, (seed, got.shape, want.shape)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dims", [(1, 0, 3), (1, 5, 0), (0, 5, 3)])
def test_nms_of_no_boxes_classes_or_batches(dims):
    b, n, c = dims
    model = nms_model(NMS["limit_only"], b, n, c)
    feeds = {"boxes": np.zeros((b, n, 4), "float32"), "scores": np.zeros((b, c, n), "float32")}
    # a 0 in an ONNX shape reads as unknown: the dims are given
    vm = _vm(from_onnx(model, {k: v.shape for k, v in feeds.items()}))
    got = vm["main"](tvm.nd.array(feeds["boxes"]), tvm.nd.array(feeds["scores"])).numpy()
    assert got.shape == (0, 3) and got.dtype == np.int64
    np.testing.assert_array_equal(got, _ort(model, feeds))


def test_nms_iou_threshold_out_of_range_is_refused():
    with pytest.raises(ONNXImportError, match=r"iou_threshold must be in \[0, 1\].*got -0.5"):
        from_onnx(nms_edge_model((0, 10, -0.5, None)))
