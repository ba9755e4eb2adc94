"""ONNX RoiAlign cases both importers' tests run: boxes inside, across and outside the
feature map, tiny boxes, both coordinate modes and both pooling modes, checked against onnx's
reference implementation."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

# name -> (X shape, attrs, opset)
ROI_ALIGN = {
    "avg_half_pixel": ((2, 3, 10, 12), {"output_height": 3, "output_width": 4,
                                        "sampling_ratio": 2, "spatial_scale": 0.5}, 16),
    "max_half_pixel": ((1, 2, 8, 8), {"output_height": 2, "output_width": 2,
                                      "sampling_ratio": 2, "mode": "max"}, 16),
    "avg_output_half_pixel": ((2, 2, 9, 7), {"output_height": 2, "output_width": 3,
                                             "sampling_ratio": 3, "coordinate_transformation_mode":
                                             "output_half_pixel"}, 16),
    "max_output_half_pixel_scaled": ((1, 4, 6, 6), {"output_height": 3, "output_width": 3,
                                                    "sampling_ratio": 1, "mode": "max",
                                                    "spatial_scale": 0.25,
                                                    "coordinate_transformation_mode":
                                                    "output_half_pixel"}, 16),
}

# sampling_ratio 0: ceil(bin size) samples a side, box by box
ROI_ALIGN_ADAPTIVE = {
    "avg_half_pixel": ((2, 3, 10, 12), {"output_height": 3, "output_width": 2,
                                        "spatial_scale": 0.5}, 16),
    "max_half_pixel": ((1, 2, 8, 8), {"output_height": 2, "output_width": 3, "mode": "max"},
                       16),
    "avg_output_half_pixel": ((2, 2, 9, 7), {"output_height": 2, "output_width": 2,
                                             "coordinate_transformation_mode":
                                             "output_half_pixel"}, 16),
    "max_output_half_pixel": ((1, 17, 6, 6), {"output_height": 1, "output_width": 2,
                                              "mode": "max", "spatial_scale": 2.0,
                                              "coordinate_transformation_mode":
                                              "output_half_pixel"}, 16),
}

# opset 10's RoiAlign has output_half_pixel boxes (no attribute); onnx's reference computes
# it with half_pixel ones, so these are checked against ONNX Runtime
ROI_ALIGN_10 = {
    "avg": ((2, 2, 9, 7), {"output_height": 2, "output_width": 3, "sampling_ratio": 3}, 10),
    "max_scaled": ((1, 4, 6, 6), {"output_height": 3, "output_width": 3, "sampling_ratio": 1,
                                  "mode": "max", "spatial_scale": 0.25}, 10),
}

# inside, across the top-left edge, tiny, past the far edges, the whole map, reversed
BOXES = np.array([[0.5, 1.0, 6.0, 7.5], [-3.0, -2.0, 4.0, 3.0], [2.0, 2.0, 2.2, 2.1],
                  [5.0, 4.0, 30.0, 25.0], [1.0, 0.0, 9.0, 9.0], [6.0, 5.0, 1.0, 2.0]],
                 "float32")


def roi_align_model(case, boxes: str | int = len(BOXES)):
    """``y = RoiAlign(x, rois, batch_indices)``; ``boxes`` may name a symbolic box count."""
    shape, attrs, opset = case
    vi = helper.make_tensor_value_info
    inputs = [vi("x", TensorProto.FLOAT, shape), vi("rois", TensorProto.FLOAT, [boxes, 4]),
              vi("idx", TensorProto.INT64, [boxes])]
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], **attrs)
    graph = helper.make_graph([node], "roi_align", inputs, [vi("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def roi_align_inputs(case, count: int = len(BOXES), seed: int = 0) -> dict:
    shape = case[0]
    rng = np.random.default_rng(seed)
    boxes = BOXES[np.arange(count) % len(BOXES)] * (1 + 0.1 * rng.random((count, 1)))
    return {"x": rng.standard_normal(shape).astype("float32"),
            "rois": boxes.astype("float32"),
            "idx": (np.arange(count) % shape[0]).astype("int64")}


# MaxRoiPool: name -> (X shape, attrs)
MAX_ROI_POOL = {
    "unit_scale": ((2, 3, 10, 12), {"pooled_shape": [3, 4]}),
    "half_scale": ((1, 17, 8, 9), {"pooled_shape": [2, 2], "spatial_scale": 0.5}),
    "one_bin": ((2, 2, 6, 6), {"pooled_shape": [1, 1], "spatial_scale": 0.25}),
}

# (batch, x1, y1, x2, y2): inside, across the edges, halves that round away from zero, one
# pixel, reversed, past the far edges
POOL_BOXES = np.array([[0, 0.5, 1.0, 6.0, 7.5], [1, -3.0, -2.0, 4.0, 3.0],
                       [0, 2.5, 1.5, 4.5, 6.5], [1, 3.0, 3.0, 3.0, 3.0],
                       [0, 6.0, 5.0, 1.0, 2.0], [1, 5.0, 4.0, 30.0, 25.0]], "float32")


def max_roi_pool_model(case, boxes: str | int = len(POOL_BOXES)):
    """``y = MaxRoiPool(x, rois)``; ``boxes`` may name a symbolic box count."""
    shape, attrs = case
    vi = helper.make_tensor_value_info
    inputs = [vi("x", TensorProto.FLOAT, shape), vi("rois", TensorProto.FLOAT, [boxes, 5])]
    node = helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], **attrs)
    graph = helper.make_graph([node], "max_roi_pool", inputs, [vi("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def max_roi_pool_inputs(case, count: int = len(POOL_BOXES), seed: int = 0) -> dict:
    shape = case[0]
    rng = np.random.default_rng(seed)
    boxes = POOL_BOXES[np.arange(count) % len(POOL_BOXES)].copy()
    boxes[:, 0] %= shape[0]
    return {"x": rng.standard_normal(shape).astype("float32"), "rois": boxes}
