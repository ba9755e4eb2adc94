"""ONNX Resize models whose scales or sizes are a graph input, and cases that onnxruntime
samples by a fractional or antialiased scale, for the Relax importer's tests (Relay's build
the same model in tests/relay/frontend/test_onnx_run_time_resize.py and sweep the coordinate
modes: the sampling is ``frontend_common.onnx_run_time_taps`` in both)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

# (attributes, "scales" or "sizes", [(input shape, the run-time scales or sizes)])
CASES = [
    ({"mode": "linear"}, "scales", [((1, 2, 4, 5), [2.0, 0.5]), ((3, 2, 7, 5), [0.7, 1.3])]),
    ({"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5}, "scales",
     [((1, 2, 7, 5), [0.7, 1.3])]),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
      "nearest_mode": "floor"}, "scales", [((1, 2, 7, 5), [0.7, 2.3])]),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, "scales",
     [((1, 2, 7, 5), [0.7, 2.3])]),
    ({"mode": "linear"}, "sizes", [((1, 2, 4, 5), [7, 3]), ((2, 2, 6, 6), [6, 13])]),
    ({"mode": "linear", "antialias": 1}, "sizes", [((1, 2, 12, 12), [5, 7]),
                                                   ((1, 2, 4, 5), [7, 5])]),
    ({"mode": "linear", "antialias": 1}, "scales", [((1, 2, 9, 11), [0.6, 0.45])]),
    ({"mode": "cubic", "antialias": 1, "exclude_outside": 1}, "scales",
     [((1, 2, 9, 11), [0.5, 0.8])]),
]


def run_time_resize_model(rank: int, attrs: dict, by: str, roi=None, batch="N",
                          every_axis: bool = False):
    """Resize of an (N, 2, spatial...) float input by the graph input ``s`` (scales or sizes
    of the spatial axes; of every axis with ``every_axis``); ``roi`` a constant."""
    k = rank - 2
    r = "roi" if roi is not None else ""
    ins = ["x", r, "", "s"] if by == "sizes" else ["x", r, "s"]
    if not every_axis:
        attrs = dict(attrs, axes=list(range(2, rank)))
    graph = helper.make_graph(
        [helper.make_node("Resize", ins, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 2] + [None] * k),
         helper.make_tensor_value_info("s", TensorProto.INT64 if by == "sizes" else
                                       TensorProto.FLOAT, [rank if every_axis else k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[] if roi is None else [helper.make_tensor("roi", TensorProto.FLOAT,
                                                               [len(roi)], roi)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def given(by: str, values) -> np.ndarray:
    return np.array(values, "int64" if by == "sizes" else "float32")
