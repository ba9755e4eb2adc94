"""The SSD detection head of TFLite's object detection models (ssd_mobilenet_v1/v2 and their
quantized variants): the custom operator ``TFLite_Detection_PostProcess``.

Inputs: box encodings (1, N, >=4) as (y, x, h, w) offsets, class scores (1, N, C or C + 1 with
a background column first), anchors (N, 4) as (y_center, x_center, h, w). Boxes decode as
``center = offset / scale * anchor_size + anchor_center``, ``half = exp(size / scale) *
anchor_size / 2``; then non-maximum suppression (score >= nms_score_threshold, suppressing
IoU > nms_iou_threshold), in one of two forms the options choose:

- fast (default): each anchor is ranked by its best class, one NMS over anchors keeps up to
  max_detections, each reporting its max_classes_per_detection best classes;
- regular (``use_regular_nms``): NMS per class (detections_per_class each), the best
  max_detections of all classes by score.

Outputs (all float32): boxes (1, D, 4) as (ymin, xmin, ymax, xmax), classes (1, D) without
the background, scores (1, D), and the detection count (1,); D = max_detections *
max_classes_per_detection, rows past the count are zero. Both NMS forms are
``vision.multiclass_nms`` (native: candidates best first across classes, each checked against
the kept boxes of its class, until max_detections are kept; the fast form is its one-class
case on each anchor's best score); the decoding and the selection around it are plain Relay
ops.
"""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from .importer import register
from .tensor_data import infer_shape

_NAME = "CUSTOM:TFLite_Detection_PostProcess"
_REQUIRED = ("max_detections", "nms_score_threshold", "nms_iou_threshold", "num_classes",
             "y_scale", "x_scale", "h_scale", "w_scale")


def custom_options(ctx) -> dict:
    """The operator's flexbuffer options as a dict."""
    from flatbuffers import flexbuffers

    if ctx.op.CustomOptionsLength() == 0:
        raise ctx.fail("the custom operator has no options")
    opts = flexbuffers.Loads(ctx.op.CustomOptionsAsNumpy().tobytes())
    if not isinstance(opts, dict):
        raise ctx.fail("the custom options are not a flexbuffer map")
    missing = [k for k in _REQUIRED if k not in opts]
    if missing:
        raise ctx.fail(f"the custom options lack {', '.join(missing)}")
    return opts


def _c(v, dtype="float32"):
    return _expr.const(np.array(v, dtype), dtype)


def _column(x, k: int):
    """x[..., k:k+1] of a rank-3 (1, N, L) or rank-2 (N, L) tensor."""
    shape = infer_shape(x)
    begin = [0] * (len(shape) - 1) + [k]
    end = list(shape[:-1]) + [k + 1]
    return _op.strided_slice(x, begin, end)


def decode_boxes(enc, anchors, scales):
    """(1, N, 4) (ymin, xmin, ymax, xmax) from the encodings and the (N, 4) anchors."""
    ey, ex, eh, ew = (_column(enc, k) for k in range(4))
    ay, ax, ah, aw = (_op.expand_dims(_column(anchors, k), 0) for k in range(4))
    ys, xs, hs, ws = scales
    yc = _op.add(_op.multiply(_op.divide(ey, _c(ys)), ah), ay)
    xc = _op.add(_op.multiply(_op.divide(ex, _c(xs)), aw), ax)
    hh = _op.multiply(_op.multiply(_c(0.5), _op.exp(_op.divide(eh, _c(hs)))), ah)
    hw = _op.multiply(_op.multiply(_c(0.5), _op.exp(_op.divide(ew, _c(ws)))), aw)
    return _op.concatenate([_op.subtract(yc, hh), _op.subtract(xc, hw), _op.add(yc, hh),
                            _op.add(xc, hw)], 2)


def _first_rows(x, rows: int, have: int):
    """The first ``rows`` rows of axis 1 of ``x`` (which has ``have``), zero padded."""
    shape = infer_shape(x)
    if have >= rows:
        return _op.strided_slice(x, [0] * len(shape), [shape[0], rows] + list(shape[2:]))
    pads = [(0, 0), (0, rows - have)] + [(0, 0)] * (len(shape) - 2)
    return _op.nn.pad(x, pads, pad_value=0)


@register(_NAME)
def _detection_postprocess(ctx):
    opts = custom_options(ctx)
    enc, cls, anchors = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    _, n, length = infer_shape(enc)
    _, n_cls, c_all = infer_shape(cls)
    num_classes = int(opts["num_classes"])
    offset = c_all - num_classes
    if n_cls != n or infer_shape(anchors) != (n, 4) or length < 4 or offset not in (0, 1):
        raise ctx.fail(f"box encodings {infer_shape(enc)}, class scores {infer_shape(cls)} and "
                       f"anchors {infer_shape(anchors)} do not describe {n} boxes of "
                       f"{num_classes} classes")
    iou = float(opts["nms_iou_threshold"])
    if not 0.0 < iou <= 1.0:
        raise ctx.fail(f"nms_iou_threshold must be in (0, 1], got {iou}")
    max_det = int(opts["max_detections"])
    per_det = int(opts.get("max_classes_per_detection", 1))
    if not 1 <= per_det <= num_classes or max_det < 1:
        raise ctx.fail(f"max_detections {max_det} and max_classes_per_detection {per_det} "
                       f"must be positive, the latter at most num_classes {num_classes}")
    rows = max_det * per_det
    boxes = decode_boxes(enc, anchors, [float(opts[k]) for k in ("y_scale", "x_scale",
                                                                "h_scale", "w_scale")])
    thr = float(opts["nms_score_threshold"])
    if opts.get("use_regular_nms", False):
        per_class = int(opts.get("detections_per_class", 100))
        sel = _op.vision.multiclass_nms(boxes, cls, max_det, per_class, iou, thr, offset)
        sel = _op.squeeze(sel, [0])  # (max_det,): class * N + box, -1 past the count
        flat = _op.maximum(sel, _c(0, "int32"))
        cls_idx = _op.floor_divide(flat, _c(n, "int32"))
        box_idx = _op.subtract(flat, _op.multiply(cls_idx, _c(n, "int32")))
        at = _op.add(_op.multiply(box_idx, _c(c_all, "int32")), _op.add(cls_idx, _c(offset,
                                                                                   "int32")))
        out_scores = _op.expand_dims(_op.take(_op.reshape(cls, (-1,)), at, axis=0), 0)
        classes = _op.expand_dims(_op.cast(cls_idx, "float32"), 0)
        out_boxes = _op.expand_dims(_op.take(_op.squeeze(boxes, [0]), box_idx, axis=0), 0)
        count = _op.sum(_op.cast(_op.greater_equal(sel, _c(0, "int32")), "int64"), axis=[0],
                        keepdims=True)
        width = max_det
    else:
        scores = _op.strided_slice(cls, [0, 0, offset], [1, n, c_all])  # (1, N, C)
        best = _op.max(scores, axis=[2], keepdims=True)  # (1, N, 1)
        sel = _op.squeeze(_op.vision.multiclass_nms(boxes, best, max_det, max_det, iou, thr),
                          [0])  # (max_det,) kept anchors, -1 past the count
        box_idx = _op.maximum(sel, _c(0, "int32"))
        count = _op.sum(_op.cast(_op.greater_equal(sel, _c(0, "int32")), "int64"), axis=[0],
                        keepdims=True)
        k = per_det  # (the best classes of the kept anchors only: a (max_det, C) topk)
        rows_kept = _op.take(_op.squeeze(scores, [0]), box_idx, axis=0)
        top = _op.topk(rows_kept, k=k, axis=1, ret_type="both", is_ascend=False,
                       dtype="int32")
        top_scores, top_classes = top[0], top[1]  # (max_det, k)
        out_boxes = _op.take(_op.squeeze(boxes, [0]), box_idx, axis=0)  # (max_det, 4)
        out_boxes = _op.reshape(_op.repeat(out_boxes, k, axis=0), (1, max_det * k, 4))
        out_scores = _op.reshape(top_scores, (1, max_det * k))
        classes = _op.reshape(_op.cast(top_classes, "float32"), (1, max_det * k))
        width = max_det * k
    # rows past the count: zero (as the regular form writes them); the count counts
    # detections (fast form: anchors, each holding k classes)
    reps = 1 if opts.get("use_regular_nms", False) else width // max_det
    valid = _op.less(_expr.const(np.arange(width, dtype="int64"), "int64"),
                     _op.multiply(count, _c(reps, "int64")))
    valid = _op.expand_dims(valid, 0)  # (1, width)
    zero = _c(0.0)
    out_boxes = _op.where(_op.expand_dims(valid, 2), out_boxes, zero)
    classes = _op.where(valid, classes, zero)
    out_scores = _op.where(valid, out_scores, zero)
    if width < rows:  # (regular NMS fills max_detections of max_detections * classes rows)
        out_boxes, classes, out_scores = (_first_rows(e, rows, width) for e in
                                          (out_boxes, classes, out_scores))
    return [out_boxes, classes, out_scores, _op.cast(count, "float32")]
