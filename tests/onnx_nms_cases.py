"""ONNX NonMaxSuppression cases both importers' tests run: corner and centre boxes, with and
without the optional inputs, ties in score (the lower box first) and IoU exactly at the
threshold (kept), reversed corners, empty boxes, several batches and classes; checked against
ONNX Runtime and onnx's reference implementation."""

from __future__ import annotations

import numpy as np

# the last three inputs are optional: a case gives max_output_boxes_per_class, iou_threshold,
# score_threshold as far as it goes (None: the input is left out)
NMS = {
    "corners": (0, (3, 0.5, 0.0)),
    "centre": (1, (3, 0.5, 0.0)),
    "no_score_threshold": (0, (4, 0.3)),
    "limit_only": (0, (10,)),
    "no_limit_input": (0, ()),
    "negative_limit": (0, (-1, 0.5, 0.1)),
    "high_threshold": (1, (100, 0.0, 0.6)),
    "iou_one_third": (0, (10, 1.0 / 3.0, 0.0)),
}


def nms_model(case, batch: str | int = 2, boxes: str | int = 12, classes: int = 3):
    """``y = NonMaxSuppression(boxes, scores, ...)``; dims may be named (symbolic)."""
    from onnx import TensorProto, helper  # (the inputs' helpers need no onnx: Relay op tests)

    center, optional = case
    vi = helper.make_tensor_value_info
    inputs = [vi("boxes", TensorProto.FLOAT, [batch, boxes, 4]),
              vi("scores", TensorProto.FLOAT, [batch, classes, boxes])]
    names, inits = ["boxes", "scores"], []
    for k, v in enumerate(optional):
        name = ("max_out", "iou", "score")[k]
        dt = TensorProto.INT64 if k == 0 else TensorProto.FLOAT
        inits.append(helper.make_tensor(name, dt, [1], [v]))
        names.append(name)
    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)
    graph = helper.make_graph([node], "nms", inputs, [vi("y", TensorProto.INT64, None)],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def nms_inputs(case, batch: int = 2, boxes: int = 12, classes: int = 3, seed: int = 0) -> dict:
    """Clustered boxes (so that many overlap), scores on a coarse grid (ties), the first
    boxes of each batch hand-made: copies of one box, a box overlapping it by IoU 1/3, a
    reversed and an empty box."""
    rng = np.random.default_rng(seed)
    centre, _ = case
    xy = rng.integers(0, 4, (batch, boxes, 2)).astype("float32") * 0.5
    wh = rng.integers(1, 5, (batch, boxes, 2)).astype("float32") * 0.5
    if centre:
        b = np.concatenate([xy + wh / 2, wh], axis=2)
        b[:, :5] = [[0.5, 0.5, 1, 1], [0.5, 0.5, 1, 1], [1.0, 0.5, 1, 1], [3, 3, 1, 1],
                    [5, 5, 0, 1]]
    else:
        b = np.concatenate([xy[..., ::-1], (xy + wh)[..., ::-1]], axis=2)  # y1, x1, y2, x2
        b[:, :5] = [[0, 0, 1, 1], [0, 0, 1, 1], [0, 0.5, 1, 1.5], [1, 1.5, 0, 0.5],
                    [2, 2, 2, 3]]
    s = rng.integers(0, 8, (batch, classes, boxes)).astype("float32") / 8
    return {"boxes": b.astype("float32"), "scores": s.astype("float32")}


# (center_point_box, max_output_boxes_per_class, iou_threshold, score_threshold: None absent)
EDGE = {
    "no_threshold": (0, 1000, 0.5, None),
    "no_threshold_centre": (1, 1000, 0.3, None),
    "minus_inf_threshold": (0, 7, 0.5, float("-inf")),
    "nan_threshold": (0, 7, 0.5, float("nan")),
    "iou_zero": (0, 1000, 0.0, None),
    "iou_one": (1, 1000, 1.0, 0.25),
    "limit_zero": (0, 0, 0.5, None),
    "limit_one": (1, 1, 0.5, None),
}


def nms_edge_model(case, batch=2, boxes=40, classes=3):
    """A NonMaxSuppression with every input given (the score threshold where not None)."""
    center, limit, iou, score = case
    return nms_model((center, (limit, iou) if score is None else (limit, iou, score)),
                     batch, boxes, classes)


def nms_edge_inputs(batch=2, boxes=40, classes=3, seed=0) -> dict:
    """Scores drawn from NaN, +-inf, +-0 and a few ties; boxes with NaN and infinite
    coordinates, zero and negative sizes, and many copies (so that the order decides)."""
    rng = np.random.default_rng(seed)
    svals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.25, 0.5, 1.0], "float32")
    scores = svals[rng.integers(0, svals.size, (batch, classes, boxes))]
    cvals = np.array([0, 0.5, 1, 1.5, 2, -1, np.nan, np.inf, -np.inf], "float32")
    weights = np.array([4, 4, 4, 4, 4, 1, 0.5, 0.5, 0.5])
    b = rng.choice(cvals, (batch, boxes, 4), p=weights / weights.sum()).astype("float32")
    b[:, ::5] = b[:, 1:2]  # copies of one box
    return {"boxes": b, "scores": scores}
