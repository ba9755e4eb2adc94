"""Numpy references of the ``vision.*`` detection ops in TVM's semantics: SSD priors and box
decoding (multibox_prior, multibox_transform_loc), get_valid_counts, non_max_suppression,
all_class_non_max_suppression (ONNX / TensorFlow output formats), roi_align, roi_pool, the
Faster R-CNN proposal layer and YOLO's reorg."""

from __future__ import annotations

import math

import numpy as np

from ..utils import reference

__all__ = ["multibox_prior_np", "multibox_transform_loc_np", "get_valid_counts_np",
           "non_max_suppression_np", "all_class_nms_np", "roi_align_nchw", "roi_pool_nchw",
           "proposal_np", "reorg_np", "iou"]


# ------------------------------------------------------------------ SSD
def multibox_prior_np(data_shape, sizes, ratios, steps, offsets, clip):
    """(1, H * W * (len(sizes) + len(ratios) - 1), 4) prior boxes (x1, y1, x2, y2)."""
    h, w = int(data_shape[2]), int(data_shape[3])
    sizes, ratios = [float(s) for s in sizes], [float(r) for r in ratios]
    step_h = steps[0] if steps[0] > 0 else 1.0 / h
    step_w = steps[1] if steps[1] > 0 else 1.0 / w
    halves = [(s * h / w / 2.0, s / 2.0) for s in sizes]
    halves += [(sizes[0] * h / w * math.sqrt(r) / 2.0, sizes[0] / math.sqrt(r) / 2.0)
               for r in ratios[1:]]
    cy = (np.arange(h) + offsets[0]) * step_h
    cx = (np.arange(w) + offsets[1]) * step_w
    out = np.empty((h, w, len(halves), 4))
    for k, (hw, hh) in enumerate(halves):
        out[:, :, k, 0] = cx[None, :] - hw
        out[:, :, k, 1] = cy[:, None] - hh
        out[:, :, k, 2] = cx[None, :] + hw
        out[:, :, k, 3] = cy[:, None] + hh
    out = out.reshape(1, -1, 4)
    return np.clip(out, 0, 1) if clip else out


@reference("vision.multibox_prior")
def _multibox_prior(attrs, args, out_type):
    return multibox_prior_np(args[0].shape, attrs.sizes, attrs.ratios, attrs.steps,
                             attrs.offsets, bool(attrs.clip)).astype(out_type.dtype)


def multibox_transform_loc_np(cls_prob, loc_pred, anchor, clip, threshold, variances,
                              keep_background=False):
    """Decode SSD box offsets against the anchors and keep, per anchor, the best class (class
    0 is the background unless ``keep_background``) when its score reaches ``threshold``;
    returns ((B, N, 6) rows [class, score, x1, y1, x2, y2] packed first, -1 after; (B,)
    valid counts)."""
    b, _, n = cls_prob.shape
    out = np.full((b, n, 6), -1.0)
    count = np.zeros(b, np.int32)
    vx, vy, vw, vh = (float(v) for v in variances)
    a = anchor.reshape(-1, 4).astype(np.float64)
    aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    ax, ay = (a[:, 0] + a[:, 2]) / 2, (a[:, 1] + a[:, 3]) / 2
    first = 0 if keep_background else 1
    for i in range(b):
        p = loc_pred[i].reshape(-1, 4).astype(np.float64)
        ox, oy = p[:, 0] * vx * aw + ax, p[:, 1] * vy * ah + ay
        ow, oh = np.exp(p[:, 2] * vw) * aw / 2, np.exp(p[:, 3] * vh) * ah / 2
        boxes = np.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=1)
        if clip:
            boxes = np.clip(boxes, 0, 1)
        probs = cls_prob[i, first:].astype(np.float64)
        best = np.argmax(probs, axis=0)
        score = probs[best, np.arange(n)]
        for j in range(n):
            if score[j] < threshold:
                continue
            out[i, count[i]] = [best[j] + first - 1 + (1 if keep_background else 0),
                                score[j], *boxes[j]]
            count[i] += 1
    return out, count


@reference("vision.multibox_transform_loc")
def _multibox_transform_loc(attrs, args, out_type):
    out, count = multibox_transform_loc_np(*args, bool(attrs.clip), float(attrs.threshold),
                                           attrs.variances, bool(attrs.keep_background))
    return out.astype(out_type.fields[0].dtype), count


# ------------------------------------------------------------------ valid counts / NMS
def iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two boxes given as two corners (any order)."""
    ax1, ax2 = sorted((a[0], a[2]))
    ay1, ay2 = sorted((a[1], a[3]))
    bx1, bx2 = sorted((b[0], b[2]))
    by1, by2 = sorted((b[1], b[3]))
    w = max(0.0, min(ax2, bx2) - max(ax1, bx1))
    h = max(0.0, min(ay2, by2) - max(ay1, by1))
    inter = w * h
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    return 0.0 if union <= 0 else inter / union


def get_valid_counts_np(data, score_threshold, id_index=0, score_index=1):
    """(valid counts (B,), boxes with the valid ones packed first and -1 rows after,
    their original indices (B, N) with -1 after)."""
    b, n, _ = data.shape
    count = np.zeros(b, np.int32)
    out = np.full(data.shape, -1, dtype=data.dtype)
    indices = np.full((b, n), -1, np.int32)
    for i in range(b):
        for j in range(n):
            row = data[i, j]
            ok = row[score_index] > score_threshold and (id_index < 0 or row[id_index] >= 0)
            if ok:
                out[i, count[i]] = row
                indices[i, count[i]] = j
                count[i] += 1
    return count, out, indices


def non_max_suppression_np(data, valid_count, indices, max_output_size=-1, iou_threshold=0.5,
                           force_suppress=False, top_k=-1, coord_start=2, score_index=1,
                           id_index=0, return_indices=True, invalid_to_bottom=False):
    """Greedy NMS per batch over the first valid_count boxes, in descending score order."""
    b, n, _ = data.shape
    out = np.full(data.shape, -1, dtype=data.dtype)
    box_indices = np.full((b, n), -1, np.int32)
    kept_count = np.zeros((b, 1), np.int32)
    for i in range(b):
        nvalid = int(valid_count[i])
        order = sorted(range(nvalid), key=lambda j: -float(data[i, j, score_index]))
        if top_k > 0:
            order = order[:top_k]
        kept: list[int] = []
        for j in order:
            if 0 <= max_output_size <= len(kept):
                break
            box = data[i, j, coord_start:coord_start + 4]
            same = [k for k in kept if force_suppress or id_index < 0
                    or data[i, k, id_index] == data[i, j, id_index]]
            if any(iou(box, data[i, k, coord_start:coord_start + 4]) > iou_threshold
                   for k in same):
                continue
            kept.append(j)
        kept_count[i, 0] = len(kept)
        for pos, j in enumerate(kept):
            box_indices[i, pos] = indices[i, j]
        if invalid_to_bottom:
            for pos, j in enumerate(kept):
                out[i, pos] = data[i, j]
        else:
            keep = set(kept)
            for pos, j in enumerate(order):
                out[i, pos] = data[i, j] if j in keep else -1
    if return_indices:
        return box_indices, kept_count
    return out


def _ort_geometry(boxes: np.ndarray, center: bool = False):
    """(x min, x max, y min, y max, area) per box in float32, as ONNX Runtime derives them:
    two corners in either order (``lhs >= rhs`` picks the max, so NaN stays where ORT puts
    it), or centre and size with area ``width * height``."""
    b = boxes.astype(np.float32)
    if center:
        hw, hh = b[:, 2] / np.float32(2), b[:, 3] / np.float32(2)
        return b[:, 0] - hw, b[:, 0] + hw, b[:, 1] - hh, b[:, 1] + hh, b[:, 2] * b[:, 3]
    ge_x, ge_y = b[:, 1] >= b[:, 3], b[:, 0] >= b[:, 2]
    x0, x1 = np.where(ge_x, b[:, 3], b[:, 1]), np.where(ge_x, b[:, 1], b[:, 3])
    y0, y1 = np.where(ge_y, b[:, 2], b[:, 0]), np.where(ge_y, b[:, 0], b[:, 2])
    return x0, x1, y0, y1, (y1 - y0) * (x1 - x0)


def _ort_suppresses(geo, kept: np.ndarray, cand: np.ndarray, iou_threshold) -> np.ndarray:
    """[len(kept), len(cand)]: does kept box r suppress candidate c (ONNX Runtime's float32
    SuppressByIOU; a NaN extent of either box, from any operand of the intersection's max /
    min, means no overlap, as ORT's build behaves)."""
    x0, x1, y0, y1, area = geo
    r, c = kept[:, None], cand[None, :]

    with np.errstate(all="ignore"):
        ix0, ix1 = np.maximum(x0[r], x0[c]), np.minimum(x1[r], x1[c])
        iy0, iy1 = np.maximum(y0[r], y0[c]), np.minimum(y1[r], y1[c])
        inter = (ix1 - ix0) * (iy1 - iy0)
        ratio = inter / (area[c] + area[r] - inter)
        return ~(ix1 <= ix0) & ~(iy1 <= iy0) & ~(inter <= 0) & (ratio > np.float32(iou_threshold))


def _heap_order(cand: list[int], later) -> list[int]:
    """``cand`` in the order libstdc++'s ``std::priority_queue`` (``make_heap``, then
    ``pop_heap`` each) yields them under the heap's ``later(p, q)`` (p < q): the sorted order
    for a strict weak order, ONNX Runtime's own order when NaN scores break it."""

    def adjust(h, hole, length, value):
        top = second = hole
        while second < (length - 1) // 2:
            second = 2 * (second + 1)
            if later(h[second], h[second - 1]):
                second -= 1
            h[hole], hole = h[second], second
        if length % 2 == 0 and second == (length - 2) // 2:
            second = 2 * (second + 1)
            h[hole], hole = h[second - 1], second - 1
        parent = (hole - 1) // 2
        while hole > top and later(h[parent], value):
            h[hole], hole = h[parent], parent
            parent = (hole - 1) // 2
        h[hole] = value

    h = list(cand)
    for p in range((len(h) - 2) // 2, -1, -1):
        adjust(h, p, len(h), h[p])
    out = []
    while h:
        out.append(h[0])
        if len(h) > 1:
            adjust(h, 0, len(h) - 1, h[-1])
        h.pop()
    return out


def ort_candidate_order(scores: np.ndarray, score_threshold=None) -> np.ndarray:
    """The boxes ONNX Runtime's NonMaxSuppression takes in turn: scores above the threshold
    (None: every box), best first, ties the lower box first; with NaN scores the exact order
    of its heap."""
    s = np.asarray(scores, np.float32)
    idx = np.arange(s.size) if score_threshold is None else \
        np.nonzero(s > np.float32(score_threshold))[0]
    if not np.isnan(s[idx]).any():
        return idx[np.argsort(-s[idx], kind="stable")]
    vals = s.tolist()
    return np.asarray(_heap_order(idx.tolist(), lambda p, q: vals[p] < vals[q] or (
        vals[p] == vals[q] and p > q)), np.int64)


def _nms_class(boxes, scores, max_out, iou_threshold, score_threshold, geo=None,
               center: bool = False):
    """Greedy NMS of one class with ONNX Runtime's order and arithmetic: candidates taken in
    turn (``ort_candidate_order``; ``score_threshold`` None: every box), each kept unless a
    kept box suppresses it, at most ``max_out`` kept (negative: no limit). Candidates go in
    chunks about twice the boxes still wanted: one suppression matrix per chunk (against
    itself and the boxes kept), then the greedy pass over its rows."""
    geo = geo if geo is not None else _ort_geometry(boxes, center)
    order = ort_candidate_order(scores, score_threshold)
    limit = max_out if max_out >= 0 else order.size
    kept: list[int] = []
    start = 0
    while start < order.size and len(kept) < limit:
        chunk = order[start:start + max(64, 2 * (limit - len(kept)))]
        start += chunk.size
        alive = np.ones(chunk.size, bool)
        if kept:
            alive &= ~_ort_suppresses(geo, np.array(kept), chunk, iou_threshold).any(0)
        over = _ort_suppresses(geo, chunk, chunk, iou_threshold)
        for a in range(chunk.size):
            if not alive[a]:
                continue
            kept.append(int(chunk[a]))
            if len(kept) >= limit:
                break
            alive[a + 1:] &= ~over[a, a + 1:]
    return kept


def torchvision_nms_np(boxes, scores, iou_threshold: float) -> np.ndarray:
    """``torchvision.ops.nms`` (boxes [N, 4] x1, y1, x2, y2): candidates in a stable
    descending sort (NaN first), each kept unless a kept box overlaps it by
    ``max(0, dx) * max(0, dy) / (area_kept + area - inter)`` (float32) above the float64
    threshold."""
    b = np.asarray(boxes, np.float32)
    s = np.asarray(scores, np.float32)
    key = np.where(np.isnan(s), np.float32(np.inf), s)
    nan_first = np.lexsort((np.arange(s.size), ~np.isnan(s), -key.astype(np.float64)))
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    kept: list[int] = []
    zero = np.float32(0)
    with np.errstate(all="ignore"):
        for j in nan_first:
            if kept:
                k = np.asarray(kept)
                w = np.where(zero < (d := np.where(b[j, 2] < b[k, 2], b[j, 2], b[k, 2])
                                     - np.where(b[k, 0] < b[j, 0], b[j, 0], b[k, 0])), d, zero)
                h = np.where(zero < (e := np.where(b[j, 3] < b[k, 3], b[j, 3], b[k, 3])
                                     - np.where(b[k, 1] < b[j, 1], b[j, 1], b[k, 1])), e, zero)
                inter = w * h
                ovr = inter / (area[k] + area[j] - inter)
                if (ovr.astype(np.float64) > float(iou_threshold)).any():
                    continue
            kept.append(int(j))
    return np.asarray(kept, np.int64)


def all_class_nms_np(boxes, scores, max_output_boxes_per_class, iou_threshold,
                     score_threshold, output_format="onnx", center_point_box=False,
                     rules="onnxruntime"):
    """NMS per batch and class (``score_threshold`` None: every box a candidate). "onnx":
    ((B*C*N, 3) rows [batch, class, box], zero padded; (1,) total); "tensorflow": ((B, C*N, 2)
    [class, box], (B, C*N) scores, (B,) counts)."""
    b, c, n = scores.shape
    max_out = int(max_output_boxes_per_class)
    if rules == "torchvision":
        if output_format != "onnx" or score_threshold is not None or max_out >= 0:
            raise ValueError("torchvision's rules: onnx format, no limit, no score threshold")
        rows = [(i, k, int(j)) for i in range(b) for k in range(c)
                for j in torchvision_nms_np(boxes[i], scores[i, k], iou_threshold)]
        out = np.zeros((b * c * n, 3), np.int64)
        if rows:
            out[:len(rows)] = rows
        return out, np.array([len(rows)], np.int64)
    corners = [_ort_geometry(boxes[i], center_point_box) for i in range(b)]
    if output_format == "onnx":
        rows = []
        for i in range(b):
            for k in range(c):
                rows += [(i, k, j) for j in _nms_class(boxes[i], scores[i, k], max_out,
                                                       iou_threshold, score_threshold,
                                                       corners[i])]
        out = np.zeros((b * c * n, 3), np.int64)
        if rows:
            out[:len(rows)] = rows
        return out, np.array([len(rows)], np.int64)
    sel = np.zeros((b, c * n, 2), np.int64)
    sel_scores = np.zeros((b, c * n), scores.dtype)
    counts = np.zeros(b, np.int64)
    for i in range(b):
        found = []
        for k in range(c):
            found += [(float(scores[i, k, j]), k, j) for j in _nms_class(
                boxes[i], scores[i, k], max_out, iou_threshold, score_threshold, corners[i])]
        # best first, stable (the class order for ties), NaN last
        found = [found[k] for k in np.argsort(-np.asarray([f[0] for f in found], np.float32),
                                              kind="stable")]
        for pos, (s, k, j) in enumerate(found):
            sel[i, pos] = (k, j)
            sel_scores[i, pos] = s
        counts[i] = len(found)
    return sel, sel_scores, counts


@reference("vision.get_valid_counts")
def _get_valid_counts(attrs, args, out_type):
    data, thr = args
    return get_valid_counts_np(data, float(np.asarray(thr).reshape(-1)[0]),
                               int(attrs.id_index), int(attrs.score_index))


@reference("vision.non_max_suppression")
def _non_max_suppression(attrs, args, out_type):
    data, valid_count, indices, max_out, iou_thr = args
    res = non_max_suppression_np(
        data, valid_count, indices, int(np.asarray(max_out).reshape(-1)[0]),
        float(np.asarray(iou_thr).reshape(-1)[0]), bool(attrs.force_suppress), int(attrs.top_k),
        int(attrs.coord_start), int(attrs.score_index), int(attrs.id_index),
        bool(attrs.return_indices), bool(attrs.invalid_to_bottom))
    return tuple(res) if isinstance(res, tuple) else res


@reference("vision.all_class_non_max_suppression")
def _all_class_nms(attrs, args, out_type):
    boxes, scores, max_out, iou_thr, score_thr = args
    thr = np.asarray(score_thr).reshape(-1)
    return all_class_nms_np(boxes, scores, int(np.asarray(max_out).reshape(-1)[0]),
                            float(np.asarray(iou_thr).reshape(-1)[0]),
                            float(thr[0]) if thr.size else None, attrs.output_format,
                            bool(getattr(attrs, "center_point_box", 0)),
                            getattr(attrs, "rules", "onnxruntime"))


# ------------------------------------------------------------------ ROI ops
def roi_sample_corners(h: int, w: int, y, x, f=float):
    """``(y0, x0, y1, x1, ly, lx)`` of a ROIAlign bilinear sample at ``(y, x)`` on an ``h x w``
    map, or None when it lies more than a pixel outside (its value is 0): negative positions
    clamped to 0, a position on or past the last pixel clamped to it; ``ly`` / ``lx`` in the
    float type ``f`` (ONNX Runtime computes them in float32)."""
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return None
    y, x = max(y, f(0.0)), max(x, f(0.0))
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = f(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = f(x0)
    else:
        x1 = x0 + 1
    return y0, x0, y1, x1, f(y - y0), f(x - x0)


def _roi_bilinear(img, y, x):
    """img (C, H, W) at (y, x) as ROIAlign samples: 0 beyond one pixel outside, edge clamped."""
    corners = roi_sample_corners(img.shape[1], img.shape[2], y, x)
    if corners is None:
        return np.zeros(img.shape[0])
    y0, x0, y1, x1, ly, lx = corners
    return ((1 - ly) * (1 - lx) * img[:, y0, x0] + (1 - ly) * lx * img[:, y0, x1]
            + ly * (1 - lx) * img[:, y1, x0] + ly * lx * img[:, y1, x1])


def roi_align_nchw(data, rois, pooled_size, spatial_scale, sample_ratio=-1, mode="avg"):
    """ROIAlign of rois (R, 5) [batch, x1, y1, x2, y2] over NCHW data -> (R, C, ph, pw)."""
    ph, pw = (int(p) for p in pooled_size)
    out = np.zeros((rois.shape[0], data.shape[1], ph, pw))
    for r, roi in enumerate(rois.astype(np.float64)):
        img = data[int(roi[0])].astype(np.float64)
        x1, y1, x2, y2 = roi[1:] * spatial_scale
        rh, rw = max(y2 - y1, 1.0), max(x2 - x1, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sample_ratio if sample_ratio > 0 else int(math.ceil(rh / ph))
        gw = sample_ratio if sample_ratio > 0 else int(math.ceil(rw / pw))
        for i in range(ph):
            for j in range(pw):
                vals = [_roi_bilinear(img, y1 + i * bh + (iy + 0.5) * bh / gh,
                                      x1 + j * bw + (ix + 0.5) * bw / gw)
                        for iy in range(gh) for ix in range(gw)]
                out[r, :, i, j] = np.max(vals, axis=0) if mode == "max" else np.mean(vals, 0)
    return out


def roi_pool_nchw(data, rois, pooled_size, spatial_scale):
    """ROIPool (max over quantized bins; empty bins 0) -> (R, C, ph, pw)."""
    ph, pw = (int(p) for p in pooled_size)
    _, c, h, w = data.shape
    out = np.zeros((rois.shape[0], c, ph, pw), dtype=data.dtype)
    for r, roi in enumerate(rois.astype(np.float64)):
        img = data[int(roi[0])]
        x1, y1, x2, y2 = (int(np.rint(v * spatial_scale)) for v in roi[1:])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = rh / ph, rw / pw
        for i in range(ph):
            hs = min(max(int(math.floor(i * bh)) + y1, 0), h)
            he = min(max(int(math.ceil((i + 1) * bh)) + y1, 0), h)
            for j in range(pw):
                ws = min(max(int(math.floor(j * bw)) + x1, 0), w)
                we = min(max(int(math.ceil((j + 1) * bw)) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = img[:, hs:he, ws:we].max(axis=(1, 2))
    return out


@reference("vision.roi_align")
def _roi_align(attrs, args, out_type):
    data, rois = args
    nhwc = attrs.layout == "NHWC"
    x = data.transpose(0, 3, 1, 2) if nhwc else data
    out = roi_align_nchw(x, rois, attrs.pooled_size, float(attrs.spatial_scale),
                         int(attrs.sample_ratio), attrs.mode)
    out = out.transpose(0, 2, 3, 1) if nhwc else out
    return out.astype(out_type.dtype)


@reference("vision.roi_pool")
def _roi_pool(attrs, args, out_type):
    data, rois = args
    nhwc = attrs.layout == "NHWC"
    x = data.transpose(0, 3, 1, 2) if nhwc else data
    out = roi_pool_nchw(x, rois, attrs.pooled_size, float(attrs.spatial_scale))
    out = out.transpose(0, 2, 3, 1) if nhwc else out
    return out.astype(out_type.dtype)


# ------------------------------------------------------------------ Faster R-CNN proposal
def _anchor(ratio, scale, base):
    w = h = float(base)
    cx, cy = 0.5 * (w - 1), 0.5 * (h - 1)
    size_ratio = math.floor(w * h / ratio)
    nw = math.floor(math.sqrt(size_ratio) + 0.5) * scale
    nh = math.floor(nw / scale * ratio + 0.5) * scale
    return cx - 0.5 * (nw - 1), cy - 0.5 * (nh - 1), cx + 0.5 * (nw - 1), cy + 0.5 * (nh - 1)


def _overlap(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]) + 1)
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]) + 1)
    inter = w * h
    area = (a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
    return inter / (area - inter)


def proposal_np(cls_prob, bbox_pred, im_info, scales, ratios, feature_stride, threshold,
                pre_nms_top_n, post_nms_top_n, min_size, iou_loss):
    """Region proposals (B * post_nms_top_n, 5) rows [batch, x1, y1, x2, y2]: anchors at every
    feature position decoded by bbox_pred, clipped, small ones scored -1, sorted, NMS-ed; the
    kept boxes repeat cyclically to fill ``post_nms_top_n`` rows."""
    b, _, fh, fw = cls_prob.shape
    anchors = [_anchor(r, s, feature_stride) for r in ratios for s in scales]
    na = len(anchors)
    out = np.zeros((b * post_nms_top_n, 5))
    for i in range(b):
        im_h, im_w, im_scale = (float(v) for v in im_info[i])
        boxes, scores = [], []
        for y in range(fh):
            for x in range(fw):
                for k in range(na):
                    ax1, ay1, ax2, ay2 = (v + d for v, d in zip(anchors[k], (
                        x * feature_stride, y * feature_stride) * 2))
                    d = bbox_pred[i, k * 4:k * 4 + 4, y, x].astype(np.float64)
                    if iou_loss:
                        px1, py1, px2, py2 = ax1 + d[0], ay1 + d[1], ax2 + d[2], ay2 + d[3]
                    else:
                        aw, ah = ax2 - ax1 + 1, ay2 - ay1 + 1
                        cx, cy = ax1 + 0.5 * (aw - 1), ay1 + 0.5 * (ah - 1)
                        pcx, pcy = d[0] * aw + cx, d[1] * ah + cy
                        pw_, ph_ = math.exp(d[2]) * aw, math.exp(d[3]) * ah
                        px1, px2 = pcx - 0.5 * (pw_ - 1), pcx + 0.5 * (pw_ - 1)
                        py1, py2 = pcy - 0.5 * (ph_ - 1), pcy + 0.5 * (ph_ - 1)
                    px1, px2 = (min(max(v, 0.0), im_w - 1) for v in (px1, px2))
                    py1, py2 = (min(max(v, 0.0), im_h - 1) for v in (py1, py2))
                    score = float(cls_prob[i, na + k, y, x])
                    real_min = min_size * im_scale
                    if px2 - px1 + 1 < real_min or py2 - py1 + 1 < real_min:
                        score = -1.0
                    boxes.append((px1, py1, px2, py2))
                    scores.append(score)
        order = np.argsort(-np.array(scores), kind="stable")
        if 0 < pre_nms_top_n < len(order):
            order = order[:pre_nms_top_n]
        kept: list[int] = []
        for j in order:
            if all(_overlap(boxes[j], boxes[k]) <= threshold for k in kept):
                kept.append(int(j))
        if kept:
            for pos in range(post_nms_top_n):
                out[i * post_nms_top_n + pos] = (i, *boxes[kept[pos % len(kept)]])
    return out


@reference("vision.proposal")
def _proposal(attrs, args, out_type):
    return proposal_np(*args, [float(s) for s in attrs.scales], [float(r) for r in attrs.ratios],
                       int(attrs.feature_stride), float(attrs.threshold),
                       int(attrs.rpn_pre_nms_top_n), int(attrs.rpn_post_nms_top_n),
                       float(attrs.rpn_min_size), bool(attrs.iou_loss)).astype(out_type.dtype)


# ------------------------------------------------------------------ YOLO reorg
def reorg_np(x: np.ndarray, stride: int) -> np.ndarray:
    """Darknet's reorg: output element (b, k, j, i) of the (B, C, H, W) order reads the input
    viewed as (B, C / s^2, H * s, W * s) at (b, k mod C', j*s + (k div C') div s,
    i*s + (k div C') mod s); the result is then reshaped to (B, C*s*s, H/s, W/s)."""
    b, c, h, w = x.shape
    oc = c // (stride * stride)
    view = x.reshape(b, oc, h * stride, w * stride)
    k = np.arange(c)[:, None, None]
    j = np.arange(h)[None, :, None]
    i = np.arange(w)[None, None, :]
    off = k // oc
    out = view[:, k % oc, j * stride + off // stride, i * stride + off % stride]
    return out.reshape(b, c * stride * stride, h // stride, w // stride)


@reference("vision.yolo_reorg")
def _yolo_reorg(attrs, args, out_type):
    return reorg_np(args[0], int(attrs.stride))
