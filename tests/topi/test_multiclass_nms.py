"""vision.multiclass_nms (the best detections of a greedy NMS per class; native kernel
``schedule/multiclass_nms.py``) against a brute-force per-class NMS and merge written here:
random boxes, ties (8-bit scores), clusters of overlapping boxes (many suppressed: several
rounds), per-class limits, thresholds that keep nothing, NaN scores, empty boxes, a skipped
background column; the numpy reference and the interpreter agree; type errors."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.schedule import multiclass_nms as sched
from minitvm.topi.multiclass_nms import iou_np, multiclass_nms_np


def brute(boxes, scores, m, per, iou_thr, thr, off):
    """Full NMS of every class (no early stop), then a stable sort of all kept by score."""
    bx, sc = boxes[0], scores[0, :, off:]
    n = bx.shape[0]
    found = []
    for c in range(sc.shape[1]):
        cand = sorted((i for i in range(n) if sc[i, c] >= np.float32(thr)),
                      key=lambda i: (-sc[i, c], i))
        kept = []
        for i in cand:
            if len(kept) < per and all(iou_np(bx[i], bx[j]) <= np.float32(iou_thr)
                                       for j in kept):
                kept.append(i)
        found += [(sc[i, c], c * n + i) for i in kept]
    found.sort(key=lambda t: -t[0])
    out = np.full((1, m), -1, "int32")
    for r, (_, f) in enumerate(found[:m]):
        out[0, r] = f
    return out


def build(n, k, m, per, iou_thr, thr, off):
    b = relay.var("b", shape=(1, n, 4))
    s = relay.var("s", shape=(1, n, k))
    y = relay.vision.multiclass_nms(b, s, m, per, iou_thr, thr, off)
    mod = tvm.IRModule.from_expr(relay.Function([b, s], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    return mod, graph_executor.GraphModule(lib["default"](tvm.cpu()))


def data(n, k, seed, cluster=False, levels=None):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0.3, 0.7, (n, 2)) if cluster else rng.uniform(0.1, 0.9, (n, 2))
    sizes = rng.uniform(0.2, 0.4, (n, 2)) if cluster else rng.uniform(0.05, 0.3, (n, 2))
    boxes = np.concatenate([centers - sizes / 2, centers + sizes / 2], 1)[None]
    scores = rng.uniform(0, 1, (1, n, k))
    if levels:  # (quantized scores: many ties)
        scores = np.round(scores * levels) / levels
    return boxes.astype("float32"), scores.astype("float32")


CASES = [  # n, classes (with offset), m, per class, iou, score threshold, offset, data kw
    (40, 4, 8, 3, 0.5, 0.3, 1, {}),
    (60, 3, 20, 100, 0.4, 0.0, 0, {"levels": 8}),
    (50, 2, 30, 30, 0.3, 0.1, 0, {"cluster": True}),
    (30, 5, 4, 1, 0.6, 0.5, 1, {"levels": 4}),
    (200, 6, 10, 100, 0.5, 0.05, 1, {"cluster": True, "levels": 16}),
    (12, 3, 40, 100, 1.0, 0.0, 1, {}),
]


@pytest.mark.parametrize("n,k,m,per,iou_thr,thr,off,kw", CASES)
def test_native_against_brute_force(n, k, m, per, iou_thr, thr, off, kw):
    boxes, scores = data(n, k, seed=n + k, **kw)
    _, g = build(n, k, m, per, iou_thr, thr, off)
    g.set_input("b", boxes)
    g.set_input("s", scores)
    g.run()
    ref = brute(boxes, scores, m, per, iou_thr, thr, off)
    np.testing.assert_array_equal(g.get_output(0).numpy(), ref)
    np.testing.assert_array_equal(multiclass_nms_np(boxes, scores, m, per, iou_thr, thr, off),
                                  ref)


def test_several_rounds(monkeypatch):
    """Identical boxes: one kept a class, every other candidate suppressed; a batch of 2 makes
    the kernel scan again and again."""
    monkeypatch.setattr(sched, "MIN_BATCH", 2)
    monkeypatch.setattr(sched, "BATCH_PER_DETECTION", 0)
    from minitvm.backend import kernel_cache

    kernel_cache.clear_cache()
    n, k = 20, 3
    boxes = np.tile(np.array([[0.1, 0.1, 0.5, 0.5]], "float32"), (n, 1))[None]
    scores = np.random.default_rng(1).uniform(0, 1, (1, n, k)).astype("float32")
    _, g = build(n, k, 5, 100, 0.5, 0.0, 0)
    g.set_input("b", boxes)
    g.set_input("s", scores)
    g.run()
    got = g.get_output(0).numpy()
    np.testing.assert_array_equal(got, brute(boxes, scores, 5, 100, 0.5, 0.0, 0))
    assert (got >= 0).sum() == k


def test_nothing_passes_nan_and_empty_boxes():
    n, k = 10, 2
    boxes, scores = data(n, k, seed=3)
    boxes[0, 3] = [0.5, 0.5, 0.5, 0.9]  # (zero area: overlaps nothing)
    boxes[0, 4] = boxes[0, 3]
    scores[0, 2, 1] = np.nan
    _, g = build(n, k, 6, 100, 0.3, 0.2, 0)
    for s in (scores, np.zeros_like(scores)):
        g.set_input("b", boxes)
        g.set_input("s", s)
        g.run()
        np.testing.assert_array_equal(g.get_output(0).numpy(),
                                      brute(boxes, s, 6, 100, 0.3, 0.2, 0))
    assert (g.get_output(0).numpy() == -1).all()


def test_interpreter_uses_the_reference():
    boxes, scores = data(15, 3, seed=4)
    mod, g = build(15, 3, 5, 2, 0.5, 0.2, 1)
    out = relay.create_executor("debug", mod=mod).evaluate()(boxes, scores).numpy()
    np.testing.assert_array_equal(out, brute(boxes, scores, 5, 2, 0.5, 0.2, 1))


def test_type_errors():
    b, s = relay.var("b", shape=(1, 5, 4)), relay.var("s", shape=(1, 6, 3))
    mod = tvm.IRModule.from_expr(relay.Function([b, s], relay.vision.multiclass_nms(
        b, s, 3, 2, 0.5, 0.1)))
    with pytest.raises(TypeError, match="do not describe one batch"):
        relay.transform.InferType()(mod)
    s = relay.var("s", shape=(1, 5, 3))
    mod = tvm.IRModule.from_expr(relay.Function([b, s], relay.vision.multiclass_nms(
        b, s, 0, 2, 0.5, 0.1)))
    with pytest.raises(TypeError, match="must be positive"):
        relay.transform.InferType()(mod)


def test_text_round_trip():
    b, s = relay.var("b", shape=(1, 5, 4)), relay.var("s", shape=(1, 5, 3))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [b, s], relay.vision.multiclass_nms(b, s, 3, 2, 0.6, 1e-8, 1))))
    text = mod.astext()
    assert "vision.multiclass_nms(" in text and "class_offset=1" in text
    back = relay.transform.InferType()(relay.parse(text))
    assert tvm.ir.structural_equal(mod, back)
