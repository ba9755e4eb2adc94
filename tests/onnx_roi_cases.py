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

# opset 10's RoiAlign has output_half_pixel boxes (no attribute); onnx's reference computes
# it with half_pixel ones, so these are checked against ONNX Runtime
ROI_ALIGN_10 = {
    "avg": ((2, 2, 9, 7), {"output_height": 2, "output_width": 3, "sampling_ratio": 3}, 10),
    "max_scaled": ((1, 4, 6, 6), {"output_height": 3, "output_width": 3, "sampling_ratio": 1,
                                  "mode": "max", "spatial_scale": 0.25}, 10),
}

BOXES = np.array([[0.5, 1.0, 6.0, 7.5], [-3.0, -2.0, 4.0, 3.0], [2.0, 2.0, 2.2, 2.1],
                  [5.0, 4.0, 30.0, 25.0], [1.0, 0.0, 9.0, 9.0]], "float32")


def roi_align_model(case, boxes: str | int = 5):
    """``y = RoiAlign(x, rois, batch_indices)``; ``boxes`` may name a symbolic box count."""
    shape, attrs, opset = case
    vi = helper.make_tensor_value_info
    inputs = [vi("x", TensorProto.FLOAT, shape), vi("rois", TensorProto.FLOAT, [boxes, 4]),
              vi("idx", TensorProto.INT64, [boxes])]
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], **attrs)
    graph = helper.make_graph([node], "roi_align", inputs, [vi("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def roi_align_inputs(case, count: int = 5, seed: int = 0) -> dict:
    shape = case[0]
    rng = np.random.default_rng(seed)
    boxes = BOXES[np.arange(count) % len(BOXES)] * (1 + 0.1 * rng.random((count, 1)))
    return {"x": rng.standard_normal(shape).astype("float32"),
            "rois": boxes.astype("float32"),
            "idx": (np.arange(count) % shape[0]).astype("int64")}
