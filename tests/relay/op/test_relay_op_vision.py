"""vision.* ops: multibox_prior, multibox_transform_loc, get_valid_counts, non_max_suppression,
all_class_non_max_suppression, roi_align, roi_pool, proposal, yolo_reorg — types, numbers
worked out by hand (TVM's documented examples where it has them), text round trip and
relay.build."""

import numpy as np
import pytest
from relay_op_check import _mod, _type, run, run_all

from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(6)


@pytest.mark.numpy_fallback("vision.multibox_prior has no native compute")
def test_multibox_prior():
    x = np.zeros((1, 3, 2, 4), "float32")
    out = run(lambda a: relay.vision.multibox_prior(a, sizes=(0.5, 0.25), ratios=(1.0, 4.0)),
              x)
    assert out.shape == (1, 2 * 4 * 3, 4)
    # first position (row 0, col 0): centre (0.25, 0.125) with steps 1/2 and 1/4
    cy, cx = 0.5 * 0.5, 0.5 * 0.25
    np.testing.assert_allclose(out[0, 0], [cx - 0.125, cy - 0.25, cx + 0.125, cy + 0.25])
    np.testing.assert_allclose(out[0, 1], [cx - 0.0625, cy - 0.125, cx + 0.0625, cy + 0.125])
    np.testing.assert_allclose(out[0, 2], [cx - 0.25, cy - 0.125, cx + 0.25, cy + 0.125],
                               rtol=1e-6)
    clipped = run(lambda a: relay.vision.multibox_prior(a, sizes=(0.5, 0.25), ratios=(1.0, 4.0),
                                                        clip=True), x)
    assert clipped.min() >= 0 and clipped.max() <= 1
    with pytest.raises(Exception, match="vision.multibox_prior: expects 4-D NCHW data"):
        _type(relay.vision.multibox_prior, (1, 3, 4))


def test_multibox_transform_loc():
    cls = np.array([[[0.1, 0.7], [0.6, 0.2], [0.3, 0.1]]], "float32")  # (1, 3 classes, 2)
    loc = np.array([[0.1, -0.2, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0]], "float32")
    anchor = np.array([[[0.2, 0.2, 0.6, 0.4], [0.0, 0.0, 0.1, 0.1]]], "float32")
    out, count = run_all(lambda c, lo, an: relay.vision.multibox_transform_loc(
        c, lo, an, threshold=0.25).astuple(), cls, loc, anchor)
    assert count.tolist() == [1]  # anchor 1's best foreground score 0.2 is under 0.25
    ox, oy = 0.1 * 0.1 * 0.4 + 0.4, -0.2 * 0.1 * 0.2 + 0.3
    ow, oh = 0.4 / 2, np.exp(0.5 * 0.2) * 0.2 / 2
    np.testing.assert_allclose(out[0, 0], [0, 0.6, ox - ow, oy - oh, ox + ow, oy + oh],
                               rtol=1e-5)
    assert (out[0, 1] == -1).all()
    with pytest.raises(Exception, match="vision.multibox_transform_loc: 2 anchors need"):
        _type(lambda c, lo, an: relay.vision.multibox_transform_loc(c, lo, an).astuple(),
              (1, 3, 2), (1, 6), (1, 2, 4))


def _nms_data():
    data = np.array([[[0, 0.8, 1, 20, 25, 45], [1, 0.7, 30, 60, 50, 80],
                      [0, 0.4, 4, 21, 19, 40], [2, 0.9, 35, 61, 52, 79],
                      [1, 0.5, 100, 60, 70, 110]]], "float32")
    return data, np.array([4], "int32"), np.array([[0, 1, 2, 3, 4]], "int32")


def test_get_valid_counts():
    data = np.array([[[0, 0.8, 1, 2, 3, 4], [-1, 0.9, 0, 0, 1, 1], [1, 0.1, 0, 0, 2, 2],
                      [2, 0.6, 1, 1, 3, 3]]], "float32")
    count, out, idx = run_all(lambda d: relay.vision.get_valid_counts(d, 0.5).astuple(), data)
    assert count.tolist() == [2]
    np.testing.assert_array_equal(out[0, :2], data[0, [0, 3]])
    assert (out[0, 2:] == -1).all()
    assert idx.tolist() == [[0, 3, -1, -1]]
    with pytest.raises(Exception, match="vision.get_valid_counts: data must be 3-D"):
        _type(lambda d: relay.vision.get_valid_counts(d, 0.5).astuple(), (4, 6))


def test_non_max_suppression_tvm_example():
    data, vc, idx = _nms_data()
    ind, cnt = run_all(lambda d, v, i: relay.vision.non_max_suppression(
        d, v, i, iou_threshold=0.5, top_k=2).astuple(), data, vc, idx)
    assert ind.tolist() == [[3, 0, -1, -1, -1]] and cnt.tolist() == [[2]]
    out = run(lambda d, v, i: relay.vision.non_max_suppression(
        d, v, i, iou_threshold=0.5, top_k=2, return_indices=False), data, vc, idx)
    want = np.full((1, 5, 6), -1, "float32")
    want[0, 0], want[0, 1] = data[0, 3], data[0, 0]
    np.testing.assert_array_equal(out, want)
    # force_suppress: box 3 (score 0.9) suppresses box 1 (IoU 270 / 436) across classes;
    # box 2 overlaps box 0 by 285 / 600 < 0.5 and stays
    ind, cnt = run_all(lambda d, v, i: relay.vision.non_max_suppression(
        d, v, i, iou_threshold=0.5, force_suppress=True).astuple(), data, vc, idx)
    assert ind.tolist() == [[3, 0, 2, -1, -1]] and cnt.tolist() == [[3]]
    ind, _ = run_all(lambda d, v, i: relay.vision.non_max_suppression(
        d, v, i, iou_threshold=0.5).astuple(), data, vc, idx)
    assert ind.tolist() == [[3, 0, 1, 2, -1]]  # classes differ: box 1 survives box 3
    ind, _ = run_all(lambda d, v, i: relay.vision.non_max_suppression(
        d, v, i, iou_threshold=0.4).astuple(), data, vc, idx)
    assert ind.tolist() == [[3, 0, 1, -1, -1]]  # now box 0 suppresses box 2 (same class)
    with pytest.raises(Exception, match="vision.non_max_suppression: coord_start 3 leaves"):
        _type(lambda d, v, i: relay.vision.non_max_suppression(
            d, relay.cast(v, "int32"), relay.cast(i, "int32"), coord_start=3).astuple(),
              (1, 5, 6), (1,), (1, 5))


def test_all_class_nms_onnx_example():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [0, 10.1, 1, 11.1], [0, 100, 1, 101]]], "float32")
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], "float32")
    sel, total = run_all(lambda b, s: relay.vision.all_class_non_max_suppression(
        b, s, 3, 0.5, 0.0).astuple(), boxes, scores)
    assert int(total[0]) == 3
    assert sel[:3].tolist() == [[0, 0, 3], [0, 0, 0], [0, 0, 5]]
    assert not sel[3:].any()
    with pytest.raises(Exception, match="vision.all_class_non_max_suppression: boxes must be"):
        _type(lambda b, s: relay.vision.all_class_non_max_suppression(b, s).astuple(),
              (1, 6, 5), (1, 1, 6))
    # (boxes and scores of different batches: the kernel would read past the smaller)
    with pytest.raises(Exception, match="all_class_non_max_suppression: scores .* must be "
                                        "\\(batch=1"):
        _type(lambda b, s: relay.vision.all_class_non_max_suppression(b, s).astuple(),
              (1, 6, 4), (2, 1, 6))


def test_onnx_roi_align_needs_one_image_index_per_box():
    with pytest.raises(Exception, match="vision.onnx_roi_align: batch_indices .* one index per "
                                        "box"):
        _type(lambda x, r, i: relay.vision.onnx_roi_align(x, r, i, 2, 2, 0, 1.0, True),
              (1, 2, 4, 4), (3, 4), (2,))


def test_all_class_nms_tensorflow_format():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [0, 10.1, 1, 11.1], [0, 100, 1, 101]]], "float32")
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], "float32")
    sel, sc, cnt = run_all(lambda b, s: relay.vision.all_class_non_max_suppression(
        b, s, 2, 0.5, 0.0, output_format="tensorflow").astuple(), boxes, scores)
    assert cnt.tolist() == [2] and sel[0, :2].tolist() == [[0, 3], [0, 0]]
    np.testing.assert_allclose(sc[0, :2], [0.95, 0.9])


def test_roi_align_and_pool():
    h, w = 8, 10
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    data = np.stack([2.0 * yy + 3.0 * xx, -yy + 0.5 * xx]).astype("float32")[None]
    data = np.concatenate([data, data + 100])  # batch 2
    rois = np.array([[1, 2.0, 1.0, 8.0, 5.0], [0, 0.0, 0.0, 6.0, 4.0]], "float32")
    out = run(lambda d, r: relay.vision.roi_align(d, r, (2, 3), 1.0, 2), data, rois)
    assert out.shape == (2, 2, 2, 3)
    # a linear image is sampled exactly: each bin's mean is the image at the bin centre
    for r, (b, x1, y1, x2, y2) in enumerate(rois):
        bh, bw = (y2 - y1) / 2, (x2 - x1) / 3
        for i in range(2):
            for j in range(3):
                cy, cx = y1 + (i + 0.5) * bh, x1 + (j + 0.5) * bw
                want = [2 * cy + 3 * cx, -cy + 0.5 * cx]
                np.testing.assert_allclose(out[r, :, i, j], np.array(want) + 100 * b,
                                           rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(tt.roi_align_nchw_python(data, rois, (2, 3), 1.0, 2), out,
                               rtol=1e-6)
    mx = run(lambda d, r: relay.vision.roi_align(d, r, (2, 3), 1.0, 2, mode="max"), data, rois)
    assert (mx >= out - 1e-5).all()
    nhwc = run(lambda d, r: relay.vision.roi_align(d, r, (2, 3), 1.0, 2, layout="NHWC"),
               data.transpose(0, 2, 3, 1).copy(), rois)
    np.testing.assert_allclose(nhwc, out.transpose(0, 2, 3, 1), rtol=1e-6)
    pool = run(lambda d, r: relay.vision.roi_pool(d, r, (2, 2), 0.5), data, rois)
    # roi 0 scaled by 0.5 and rounded: x 1..4, y 0..2 (round half to even), bins of 1.5 x 2
    want = np.empty((2, 2, 2))
    for i, (hs, he) in enumerate(((0, 2), (1, 3))):
        for j, (ws, we) in enumerate(((1, 3), (3, 5))):
            want[:, i, j] = data[1, :, hs:he, ws:we].max(axis=(1, 2))
    np.testing.assert_allclose(pool[0], want)
    np.testing.assert_allclose(tt.roi_pool_nchw_python(data, rois, 2, 0.5), pool)
    with pytest.raises(Exception, match=r"vision.roi_pool: rois must be \(num_rois, 5\)"):
        _type(lambda d, r: relay.vision.roi_pool(d, r, (2, 2), 1.0), data.shape, (2, 4))


def test_proposal():
    cls = RNG.uniform(0, 1, (1, 2 * 3, 4, 5)).astype("float32")
    bbox = RNG.uniform(-0.2, 0.2, (1, 4 * 3, 4, 5)).astype("float32")
    info = np.array([[64.0, 80.0, 1.0]], "float32")
    build = lambda c, b, i: relay.vision.proposal(  # noqa: E731
        c, b, i, scales=(1.0, 2.0, 4.0)[:1], ratios=(0.5, 1.0, 2.0), feature_stride=16,
        threshold=0.7, rpn_pre_nms_top_n=30, rpn_post_nms_top_n=10, rpn_min_size=4,
        iou_loss=False)
    out = run(build, cls, bbox, info)
    assert out.shape == (10, 5)
    assert (out[:, 0] == 0).all()
    assert (out[:, 1] >= 0).all() and (out[:, 3] <= 79).all() and (out[:, 4] <= 63).all()
    assert (out[:, 3] >= out[:, 1]).all() and (out[:, 4] >= out[:, 2]).all()
    with pytest.raises(Exception, match="vision.proposal: cls_prob must have 2 \\* num_anchors"):
        _type(build, (1, 4, 4, 5), (1, 12, 4, 5), (1, 3))


def test_yolo_reorg():
    x = RNG.standard_normal((2, 8, 4, 6)).astype("float32")
    out = run(lambda a: relay.vision.yolo_reorg(a, 2), x)
    assert out.shape == (2, 32, 2, 3)
    # Darknet's loop: element (b, k, j, i) reads flat index of (b, k % c', j*s + (k // c') // s,
    # i*s + (k // c') % s) in a (B, c', H*s, W*s) view
    flat = x.reshape(-1)
    want = np.empty(x.size, "float32")
    cnt, oc, s = 0, 2, 2
    for b in range(2):
        for k in range(8):
            for j in range(4):
                for i in range(6):
                    off = k // oc
                    h2, w2 = j * s + off // s, i * s + off % s
                    want[cnt] = flat[w2 + 6 * s * (h2 + 4 * s * (k % oc + oc * b))]
                    cnt += 1
    np.testing.assert_array_equal(out, want.reshape(out.shape))
    np.testing.assert_array_equal(tt.reorg_python(x, 2), out)
    with pytest.raises(Exception, match="vision.yolo_reorg: height 5"):
        _type(lambda a: relay.vision.yolo_reorg(a, 2), (1, 4, 5, 4))


def test_vision_ops_print_and_parse():
    data, vc, idx = _nms_data()
    mod = _mod(lambda d: relay.vision.get_valid_counts(d, 0.3, 0, 1).astuple(), data)
    assert "vision.get_valid_counts(" in mod.astext()
