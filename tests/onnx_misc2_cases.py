"""ONNX cases of LpPool, GlobalLpPool, CenterCropPad, Det, Compress, MaxUnpool, CumProd,
ReverseSequence and Upsample both importers' tests run: (model, inputs) pairs checked against
onnx's reference implementation (or, where that one is known to differ, ONNX Runtime)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def one_node(op, inputs, attrs=None, inits=(), opset=18, out_type=F, batch=None):
    """A model of one ``op`` node; ``inputs`` are (name, shape, elem type) graph inputs;
    ``batch`` names a symbolic first dim of the first input."""
    vi = helper.make_tensor_value_info
    graph_inputs = []
    for k, (name, shape, t) in enumerate(inputs):
        dims = [batch or shape[0], *shape[1:]] if k == 0 and batch else list(shape)
        graph_inputs.append(vi(name, t, dims))
    names = [i[0] for i in inputs] + [n for n, _ in inits]
    node = helper.make_node(op, names, ["y"], **(attrs or {}))
    graph = helper.make_graph([node], op.lower(), graph_inputs, [vi("y", out_type, None)],
                              [numpy_helper.from_array(v, n) for n, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _x(shape):
    return ("x", shape, F)


LP_POOL = {
    "2d_p2": ((1, 3, 8, 8), {"kernel_shape": [3, 3], "strides": [2, 2]}),
    "2d_pads_p3": ((2, 2, 7, 6), {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "p": 3}),
    "2d_same_upper_p1": ((1, 2, 5, 5), {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER",
                                        "p": 1}),
    "2d_dilated_ceil": ((1, 1, 9, 9), {"kernel_shape": [2, 2], "strides": [2, 2],
                                       "dilations": [2, 2], "ceil_mode": 1}),
    "1d": ((2, 3, 10), {"kernel_shape": [3], "strides": [2]}),
    "3d": ((1, 2, 4, 5, 6), {"kernel_shape": [2, 2, 3]}),
}

GLOBAL_LP_POOL = {"p2": ((2, 3, 5, 4), 2), "p1_3d": ((1, 2, 3, 4, 5), 1),
                  "p3": ((2, 3, 7), 3)}

# name -> (input shape, target shape, axes)
CENTER_CROP_PAD = {
    "crop_and_pad": ((4, 7, 3), [6, 4, 3], None),
    "odd_crop_axes": ((2, 9, 8), [4, 5], [1, -1]),
    "pad_only": ((2, 3, 4), [5], [2]),
}

DET = {"2x2": (3, 2, 2), "3x3_batched": (2, 3, 3, 3), "4x4": (4, 4), "1x1": (5, 1, 1),
       "5x5": (2, 5, 5)}

# name -> (input shape, condition, axis or None)
COMPRESS = {
    "axis0": ((4, 3), [0, 1, 1, 0], 0),
    "axis1_short": ((2, 5, 2), [1, 0, 1], 1),
    "flat": ((3, 2), [0, 1, 0, 0, 1, 1], None),
    "negative_axis": ((2, 3), [1, 0, 1], -1),
}


def cases():
    """(name, model, inputs, expected) of every case: ``expected`` is None where onnx's
    reference implementation gives it, numpy's result where that one has no implementation
    or a bug, "ort" where only ONNX Runtime does."""
    rng = np.random.default_rng(0)

    def x(shape):
        return rng.standard_normal(shape).astype("float32")

    for name, (shape, attrs) in LP_POOL.items():
        yield (f"lppool_{name}", one_node("LpPool", [_x(shape)], attrs), {"x": x(shape)},
               None)
    for name, (shape, p) in GLOBAL_LP_POOL.items():
        v = x(shape)
        want = (np.abs(v.astype("float64")) ** p).sum(axis=tuple(range(2, v.ndim)),
                                                      keepdims=True) ** (1 / p)
        yield (f"globallppool_{name}", one_node("GlobalLpPool", [_x(shape)], {"p": p}),
               {"x": v}, want.astype("float32"))
    for name, (shape, target, axes) in CENTER_CROP_PAD.items():
        attrs = {} if axes is None else {"axes": axes}
        model = one_node("CenterCropPad", [_x(shape)], attrs,
                         [("shape", np.array(target, "int64"))])
        yield f"centercroppad_{name}", model, {"x": x(shape)}, None
    for name, shape in DET.items():
        yield f"det_{name}", one_node("Det", [_x(shape)]), {"x": x(shape)}, None
    for name, (shape, cond, axis) in COMPRESS.items():
        attrs = {} if axis is None else {"axis": axis}
        model = one_node("Compress", [_x(shape)], attrs, [("cond", np.array(cond, bool))])
        yield f"compress_{name}", model, {"x": x(shape)}, None
    yield from _unpool_cases(rng)
    yield from _cumprod_cases(rng)
    yield from _reverse_sequence_cases(rng)
    yield from _upsample_cases(rng)


def _unpool_cases(rng):
    """MaxUnpool of a MaxPool's values and indices (computed here with numpy)."""
    for name, shape, out_shape in (("2x2", (2, 3, 4, 6), None),
                                   ("output_shape", (1, 2, 4, 4), [1, 2, 9, 9])):
        n, c, h, w = shape
        xin = rng.standard_normal(shape).astype("float32")
        win = xin.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(
            n, c, h // 2, w // 2, 4)
        arg = win.argmax(-1)
        rows = np.arange(h // 2)[:, None] * 2 + arg // 2
        cols = np.arange(w // 2)[None, :] * 2 + arg % 2
        full = out_shape or [n, c, h, w]
        plane = full[2] * full[3]
        base = (np.arange(n)[:, None, None, None] * c + np.arange(c)[None, :, None, None])
        idx = (base * plane + rows * full[3] + cols).astype("int64")
        inits = [] if out_shape is None else [("oshape", np.array(out_shape, "int64"))]
        model = one_node("MaxUnpool", [_x(win.shape[:4]), ("i", idx.shape, TensorProto.INT64)],
                         {"kernel_shape": [2, 2], "strides": [2, 2]}, inits)
        want = np.zeros(int(np.prod(full)), "float32")  # (the reference mis-indexes a
        want[idx.reshape(-1)] = win.max(-1).reshape(-1)  # larger output_shape)
        yield (f"maxunpool_{name}", model, {"x": win.max(-1), "i": idx},
               want.reshape(full) if out_shape else None)


def _cumprod_cases(rng):
    for name, shape, axis, attrs in (("axis1", (2, 5), 1, {}),
                                     ("reverse_exclusive", (3, 4, 2), 1,
                                      {"reverse": 1, "exclusive": 1}),
                                     ("negative_axis", (2, 3, 4), -1, {"exclusive": 1})):
        model = one_node("CumProd", [_x(shape)], attrs, [("axis", np.array(axis, "int64"))],
                         opset=26)
        yield (f"cumprod_{name}", model,
               {"x": rng.uniform(0.5, 1.5, shape).astype("float32")}, None)


def _reverse_sequence_cases(rng):
    for name, shape, lens, attrs in (("time_major", (5, 3, 2), [5, 2, 0],
                                      {"time_axis": 0, "batch_axis": 1}),
                                     ("batch_major", (3, 4), [1, 4, 3],
                                      {"time_axis": 1, "batch_axis": 0})):
        model = one_node("ReverseSequence", [_x(shape), ("lens", (len(lens),),
                                                         TensorProto.INT64)], attrs)
        yield (f"reversesequence_{name}", model,
               {"x": rng.standard_normal(shape).astype("float32"),
                "lens": np.array(lens, "int64")}, None)


def _upsample_cases(rng):
    for name, shape, scales, mode in (("nearest", (1, 2, 3, 4), [1, 1, 2, 3], "nearest"),
                                      ("linear", (2, 1, 4, 4), [1, 1, 2, 2], "linear")):
        model = one_node("Upsample", [_x(shape)], {"mode": mode},
                         [("scales", np.array(scales, "float32"))], opset=9)
        yield (f"upsample_{name}", model, {"x": rng.standard_normal(shape).astype("float32")},
               None if mode == "nearest" else "ort")
