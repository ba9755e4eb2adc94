"""vision.all_class_non_max_suppression with output_format="tensorflow" is native (a strict
build): each batch's selected (class, box) rows across classes, best score first (stable: the
class order for ties, NaN last), their scores and counts, equal to the numpy reference on NaN /
infinite scores and corners, ties, limits and an absent score threshold; and the IR is the
kernel's one stage."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.topi.reference.vision import all_class_nms_np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from onnx_nms_cases import nms_edge_inputs  # noqa: E402


def _build(shape_b, shape_s, limit, iou, thr, center=0):
    b = relay.var("boxes", shape=shape_b, dtype="float32")
    s = relay.var("scores", shape=shape_s, dtype="float32")
    thr_e = relay.const(np.zeros((0,), "float32")) if thr is None else thr
    out = relay.vision.all_class_non_max_suppression(
        b, s, limit, iou, thr_e, output_format="tensorflow", center_point_box=center)
    mod = tvm.IRModule.from_expr(relay.Function([b, s], out.astuple()))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    from minitvm.contrib import graph_executor

    return graph_executor.GraphModule(lib["default"](tvm.cpu()))


@pytest.mark.parametrize("limit, iou, thr, center", [
    (1000, 0.5, None, 0), (3, 0.3, 0.25, 1), (1, 0.0, float("-inf"), 0), (0, 0.5, None, 0),
    (7, 1.0, 0.0, 1)])
def test_tensorflow_format_matches_the_reference(limit, iou, thr, center):
    g = _build((2, 40, 4), (2, 3, 40), limit, iou, thr, center)
    for seed in range(3):
        feeds = nms_edge_inputs(seed=seed)
        g.set_input("boxes", feeds["boxes"])
        g.set_input("scores", feeds["scores"])
        g.run()
        sel, sc, cnt = (g.get_output(k).numpy() for k in range(3))
        want = all_class_nms_np(feeds["boxes"], feeds["scores"], limit, iou, thr, "tensorflow",
                                bool(center))
        assert sel.shape == (2, 120, 2) and sc.shape == (2, 120) and cnt.shape == (2,)
        np.testing.assert_array_equal(cnt, want[2])
        np.testing.assert_array_equal(sel, want[0])
        np.testing.assert_array_equal(sc, want[1])


def test_tensorflow_format_sorts_many_boxes_across_classes():
    """Disjoint boxes (nothing suppressed): every box of every class, a real merge sort."""
    n, c = 300, 4
    rng = np.random.default_rng(1)
    boxes = np.zeros((1, n, 4), "float32")
    boxes[0, :, 0] = np.arange(n) * 2
    boxes[0, :, 2] = boxes[0, :, 0] + 1
    boxes[0, :, 3] = 1
    scores = rng.integers(0, 50, (1, c, n)).astype("float32") / 50
    g = _build(boxes.shape, scores.shape, -1, 0.5, None)
    g.set_input("boxes", boxes)
    g.set_input("scores", scores)
    g.run()
    sel, sc, cnt = (g.get_output(k).numpy() for k in range(3))
    assert cnt.tolist() == [n * c]
    assert (np.diff(sc[0]) <= 0).all()
    want = all_class_nms_np(boxes, scores, -1, 0.5, None, "tensorflow")
    np.testing.assert_array_equal(sel, want[0])
