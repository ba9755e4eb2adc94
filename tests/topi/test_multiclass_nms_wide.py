"""vision.multiclass_nms with a vector or more of classes: the kernel's per-box filter (a box's
class scores reduced to their maximum in vectors, the box skipped when that is below the
threshold or the full batch's last) and its vectorized insertion keep what the brute-force
per-class NMS keeps: SSD-like widths (90 classes and a background column), widths one past a
vector, ties at the batch's last score, NaN scores, batches small enough to take several
rounds; the filter is in the kernel."""

import functools

import numpy as np
import pytest
from test_multiclass_nms import brute, build, data

from minitvm.backend import kernel_cache
from minitvm.schedule import multiclass_nms as sched

CASES = [  # n, classes (with offset), m, per class, iou, score threshold, offset, data kw
    (300, 91, 10, 100, 0.6, 1e-8, 1, {}),
    (120, 17, 20, 5, 0.5, 0.0, 0, {"cluster": True}),
    (150, 33, 12, 100, 0.4, 0.2, 1, {"levels": 4}),  # ties everywhere, at the bar too
    (64, 16, 40, 3, 0.5, 0.5, 0, {"levels": 16}),
    (80, 48, 10, 100, 0.5, 0.999, 0, {}),  # few boxes reach the threshold
]


@functools.cache
def _case(n, k, m, per, iou_thr, thr, off, kw):
    """A case's inputs and the brute-force answer, made once for both batch sizes (the
    brute force is most of the test's time: 1.7 s for 300 boxes of 90 classes)."""
    boxes, scores = data(n, k, seed=n + k, **dict(kw))
    scores[0, 5, :] = np.nan  # (a box of NaN scores: its maximum is below everything)
    scores[0, 7, k // 2] = np.nan
    return boxes, scores, brute(boxes, scores, m, per, iou_thr, thr, off)


@pytest.mark.parametrize("n,k,m,per,iou_thr,thr,off,kw", CASES)
@pytest.mark.parametrize("small_batch", [False, True])
def test_wide_against_brute_force(n, k, m, per, iou_thr, thr, off, kw, small_batch,
                                  monkeypatch):
    if small_batch:  # (batches of 4: many rounds, each scan filtering against its bar)
        monkeypatch.setattr(sched, "MIN_BATCH", 4)
        monkeypatch.setattr(sched, "BATCH_PER_DETECTION", 0)
        kernel_cache.clear_cache()
    boxes, scores, want = _case(n, k, m, per, iou_thr, thr, off, tuple(sorted(kw.items())))
    _, g = build(n, k, m, per, iou_thr, thr, off)
    g.set_input("b", boxes)
    g.set_input("s", scores)
    g.run()
    np.testing.assert_array_equal(g.get_output(0).numpy(), want)
    if small_batch:
        kernel_cache.clear_cache()


def test_filter_in_the_kernel(monkeypatch):
    """The box filter's buffer is in the optimized function where a vector of classes is
    scored, not with fewer classes; switched off, neither has it."""
    assert "nms_box_max" in _kernel_text(40, 21)
    assert "nms_box_max" not in _kernel_text(40, 9)
    monkeypatch.setattr(sched, "BOX_FILTER", False)
    assert "nms_box_max" not in _kernel_text(40, 21)


def _kernel_text(n, k) -> str:
    """The LLVM IR of the built NMS kernel for (1, n, k) scores."""
    kernel_cache.clear_cache()
    _, g = build(n, k, 5, 100, 0.5, 0.0, 1)
    (ir,) = [kern.ir for name, kern, *_ in g._plan["steps"] if "multiclass_nms" in name]
    kernel_cache.clear_cache()
    return ir
