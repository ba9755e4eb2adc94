"""TFLite_Detection_PostProcess (the SSD head of ssd_mobilenet .tflite models) through
relay.frontend.from_tflite, compared with a numpy reference written from TFLite's kernel
semantics: fast and regular NMS, several classes per detection, a background column or none,
float and uint8-quantized inputs; errors."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")

from flatbuffers import flexbuffers  # noqa: E402
from frontend_models import build_and_run  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402

SCALES = (10.0, 10.0, 5.0, 5.0)


# ------------------------------------------------------------------ numpy reference
def _decode(enc, anchors):
    ys, xs, hs, ws = SCALES
    e, a = enc[0].astype("float64"), anchors.astype("float64")
    yc = e[:, 0] / ys * a[:, 2] + a[:, 0]
    xc = e[:, 1] / xs * a[:, 3] + a[:, 1]
    hh = 0.5 * np.exp(e[:, 2] / hs) * a[:, 2]
    hw = 0.5 * np.exp(e[:, 3] / ws) * a[:, 3]
    return np.stack([yc - hh, xc - hw, yc + hh, xc + hw], 1)


def _iou(a, b):
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    if area_a <= 0 or area_b <= 0:
        return 0.0
    ih = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    iw = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    return ih * iw / (area_a + area_b - ih * iw)


def _nms(boxes, scores, limit, score_thr, iou_thr):
    """Anchors kept: score >= threshold, best first (stable), IoU > threshold suppressed."""
    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] >= score_thr]
    kept = []
    for i in order:
        if len(kept) >= limit:
            break
        if all(_iou(boxes[i], boxes[j]) <= iou_thr for j in kept):
            kept.append(int(i))
    return kept


def reference(enc, cls, anchors, opts):
    boxes = _decode(enc, anchors)
    nc = opts["num_classes"]
    scores = cls[0, :, cls.shape[2] - nc:].astype("float64")
    max_det, k = opts["max_detections"], opts.get("max_classes_per_detection", 1)
    out_b, out_c = np.zeros((max_det * k, 4)), np.zeros(max_det * k)
    out_s = np.zeros(max_det * k)
    thr, iou = opts["nms_score_threshold"], opts["nms_iou_threshold"]
    if opts.get("use_regular_nms", False):
        found = []
        for c in range(nc):
            found += [(scores[i, c], c, i) for i in _nms(boxes, scores[:, c],
                                                         opts["detections_per_class"], thr, iou)]
        found.sort(key=lambda t: -t[0])
        found = found[:max_det]
        for r, (s, c, i) in enumerate(found):
            out_b[r], out_c[r], out_s[r] = boxes[i], c, s
        count = len(found)
    else:
        kept = _nms(boxes, scores.max(1), max_det, thr, iou)
        for r, i in enumerate(kept):
            best = np.argsort(-scores[i], kind="stable")[:k]
            for j, c in enumerate(best):
                out_b[r * k + j], out_c[r * k + j], out_s[r * k + j] = boxes[i], c, scores[i, c]
        count = len(kept)
    return [out_b[None], out_c[None], out_s[None], np.array([count], "float64")]


# ------------------------------------------------------------------ models
def _data(n, classes, background, seed):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0.1, 0.9, (n, 2))
    sizes = rng.uniform(0.1, 0.4, (n, 2))
    anchors = np.concatenate([centers, sizes], 1).astype("float32")
    enc = rng.normal(0.0, 1.0, (1, n, 4)).astype("float32")
    cls = rng.uniform(0.0, 1.0, (1, n, classes + background)).astype("float32")
    return enc, cls, anchors


def _options(**kw):
    opts = {"max_detections": 10, "max_classes_per_detection": 1, "nms_score_threshold": 0.3,
            "nms_iou_threshold": 0.4, "num_classes": 5, "y_scale": SCALES[0],
            "x_scale": SCALES[1], "h_scale": SCALES[2], "w_scale": SCALES[3]}
    opts.update(kw)
    return opts


def _model(enc, cls, anchors, opts, quant=None):
    """The custom op on two graph inputs and constant anchors; ``quant``: uint8 inputs and
    anchors, {name: (scale, zero point)}."""
    b = ModelBuilder()
    if quant:
        e = b.input("enc", enc.shape, "uint8", quant=quant["enc"])
        c = b.input("cls", cls.shape, "uint8", quant=quant["cls"])
        a = b.constant("anchors", anchors, quant=quant["anchors"])
    else:
        e, c = b.input("enc", enc.shape), b.input("cls", cls.shape)
        a = b.constant("anchors", anchors)
    rows = opts["max_detections"] * opts.get("max_classes_per_detection", 1)
    outs = [b.tensor("boxes", (1, rows, 4)), b.tensor("classes", (1, rows)),
            b.tensor("scores", (1, rows)), b.tensor("count", (1,))]
    b.operator("CUSTOM:TFLite_Detection_PostProcess", [e, c, a], outs,
               custom_options=bytes(flexbuffers.Dumps(opts)))
    for o in outs:
        b.output(o)
    return b.finish()


def _check(enc, cls, anchors, opts, quant=None, feeds=None):
    mod, params = relay.frontend.from_tflite(_model(enc, cls, anchors, opts, quant))
    feeds = feeds or {"enc": enc, "cls": cls}
    outs = build_and_run(mod, params, feeds)
    refs = reference(enc, cls, anchors, opts)
    count = int(refs[3][0])
    assert count > 1 and int(outs[3][0]) == count
    for out, ref in zip(outs, refs, strict=True):
        assert out.dtype == np.float32 and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    return outs


@pytest.mark.parametrize("per_det", [1, 3])
@pytest.mark.parametrize("background", [1, 0])
def test_fast_nms(per_det, background):
    enc, cls, anchors = _data(60, 5, background, seed=1)
    _check(enc, cls, anchors, _options(max_classes_per_detection=per_det))


@pytest.mark.parametrize("per_class,max_det", [(3, 10), (20, 6)])
def test_regular_nms(per_class, max_det):
    enc, cls, anchors = _data(60, 5, 1, seed=2)
    _check(enc, cls, anchors, _options(use_regular_nms=True, detections_per_class=per_class,
                                       max_detections=max_det))


def test_fewer_detections_than_rows_are_zero_padded():
    """A high score threshold keeps a few boxes; the rows past the count are zero."""
    enc, cls, anchors = _data(40, 5, 1, seed=3)
    outs = _check(enc, cls, anchors, _options(nms_score_threshold=0.97, max_detections=12))
    count = int(outs[3][0])
    assert count < 12 and not outs[0][0, count:].any() and not outs[2][0, count:].any()


def test_more_rows_than_anchors():
    """max_detections above the number of anchors."""
    enc, cls, anchors = _data(8, 3, 1, seed=4)
    _check(enc, cls, anchors, _options(num_classes=3, max_detections=12,
                                       nms_score_threshold=0.1, nms_iou_threshold=0.9))


def test_uint8_quantized_inputs():
    """The quantized ssd_mobilenet form: uint8 box encodings, scores and anchors, dequantized
    (the reference sees the dequantized values)."""
    enc, cls, anchors = _data(60, 5, 1, seed=5)
    quant = {"enc": (0.05, 128), "cls": (1 / 255, 0), "anchors": (1 / 200, 0)}

    def q(v, s, z):
        return np.clip(np.round(v / s) + z, 0, 255).astype("uint8")

    def dq(v, s, z):
        return ((v.astype("float32") - z) * np.float32(s)).astype("float32")

    qe, qc, qa = (q(v, *quant[k]) for v, k in ((enc, "enc"), (cls, "cls"),
                                                (anchors, "anchors")))
    mod, params = relay.frontend.from_tflite(_model(qe, qc, qa, _options(), quant))
    outs = build_and_run(mod, params, {"enc": qe, "cls": qc})
    refs = reference(dq(qe, *quant["enc"]), dq(qc, *quant["cls"]), dq(qa, *quant["anchors"]),
                     _options())
    assert int(outs[3][0]) == int(refs[3][0]) > 1
    for out, ref in zip(outs, refs, strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_errors():
    enc, cls, anchors = _data(10, 5, 1, seed=6)
    with pytest.raises(ImportError_, match="do not describe 10 boxes of 7 classes"):
        relay.frontend.from_tflite(_model(enc, cls, anchors, _options(num_classes=7)))
    opts = _options()
    del opts["y_scale"]
    with pytest.raises(ImportError_, match="custom options lack y_scale"):
        relay.frontend.from_tflite(_model(enc, cls, anchors, opts))
    with pytest.raises(ImportError_, match="nms_iou_threshold must be in"):
        relay.frontend.from_tflite(_model(enc, cls, anchors, _options(nms_iou_threshold=0.0)))


def test_regular_nms_with_tied_scores_across_classes():
    """8-bit scores (as a quantized model's, dequantized): many equal scores across classes,
    ordered by class then box as TFLite's stable merge has them."""
    enc, cls, anchors = _data(200, 10, 1, seed=8)
    cls = (np.round(cls * 16) / 16).astype("float32")
    _check(enc, cls, anchors, _options(num_classes=10, use_regular_nms=True,
                                       detections_per_class=6, max_detections=25,
                                       nms_score_threshold=0.05, nms_iou_threshold=0.5))


@pytest.mark.parametrize("regular", [True, False])
def test_head_is_native_multiclass_nms(regular):
    """Both forms take vision.multiclass_nms (native), none the numpy-only NMS operators."""
    from minitvm.relay.analysis.properties import walk

    enc, cls, anchors = _data(20, 5, 1, seed=9)
    mod, _ = relay.frontend.from_tflite(_model(enc, cls, anchors,
                                               _options(use_regular_nms=regular,
                                                        detections_per_class=4)))
    ops = {e.op.name for e in walk(mod["main"]) if isinstance(e, relay.Call)
           and hasattr(e.op, "name")}
    assert "vision.multiclass_nms" in ops
    assert not any(o.startswith("vision.") and "non_max" in o for o in ops)
