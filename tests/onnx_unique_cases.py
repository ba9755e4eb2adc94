"""ONNX Unique cases both importers' tests run: flattened and along an axis, sorted and in
order of first occurrence, float and int64 inputs; checked against ONNX Runtime."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

X = np.array([[2, 1, 1], [3, 4, 3], [2, 1, 1], [0, -5, 3]], "float32")
# name -> (input, attrs)
UNIQUE = {
    "sorted": (X, {}),
    "first_occurrence": (X, {"sorted": 0}),
    "int64": (np.array([5, -1, 5, 7, -1, 0, 5], "int64"), {}),
    "int64_first_occurrence_axis": (np.array([5, -1, 5, 7, -1, 0, 5], "int64"),
                                    {"sorted": 0, "axis": 0}),
    "rows": (X, {"axis": 0}),
    "columns_first_occurrence": (X, {"axis": -1, "sorted": 0}),
    # many values, repeated: +-0 (one value: the first seen), infinities, tiny and huge
    "many_floats": (np.random.default_rng(3).choice(np.array(
        [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, 3e30, -1e-40, 7.0, -7.0], "float32"), (40, 50)),
        {}),
    "many_floats_first_occurrence": (np.random.default_rng(4).choice(np.array(
        [-0.0, 0.0, 1.5, -2.0, np.inf, 3e30, -1e-40], "float32"), 777), {"sorted": 0}),
    "many_int64": (np.random.default_rng(5).integers(-10**15, 10**15, 50).repeat(7), {}),
    # along an axis: many repeated slices (a few values per column), 3-D, int64 rows
    "many_rows": (np.random.default_rng(6).integers(-1, 2, (1200, 3)).astype("float32"),
                  {"axis": 0}),
    "middle_axis_3d_first_occurrence": (np.random.default_rng(8).integers(0, 2, (2, 520, 2))
                                        .astype("float32"), {"axis": 1, "sorted": 0}),
    "int64_columns": (np.random.default_rng(9).integers(-3, 3, (2, 600)).astype("int64")
                      * 10**12, {"axis": -1, "sorted": 0}),
}


def unique_model(case):
    """``y, indices, inverse_indices, counts = Unique(x)``."""
    x, attrs = case
    dt = TensorProto.INT64 if x.dtype == np.int64 else TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    node = helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], **attrs)
    outs = [vi("y", dt, None)] + [vi(n, TensorProto.INT64, None)
                                  for n in ("indices", "inverse", "counts")]
    graph = helper.make_graph([node], "unique", [vi("x", dt, list(x.shape))], outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
