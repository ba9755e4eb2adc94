"""One-node ONNX Resize models shared by the Relay and Relax importer tests: each case with
whether its import should be one ``image.resize2d`` (where it samples as the ONNX taps do, the
decision both importers share through ``frontend_common.onnx_resize``) or per-axis ``take``
taps. Needs onnx (the importing test skips first)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def resize_model(shape, attrs, scales=None, sizes=None, opset: int = 13):
    """A model resizing input ``x`` of ``shape`` (``scales`` or ``sizes`` as constant inputs,
    an empty roi), and a random float32 input for it."""
    inits = {"roi": np.zeros(0, "float32"),
             "sc": np.array(scales if scales else [], "float32")}
    if sizes is not None:
        inits["sz"] = np.array(sizes, "int64")
    node = helper.make_node("Resize", ["x", *inits], ["y"], **attrs)
    g = helper.make_graph(
        [node], "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_empty_tensor_value_info("y")],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    x = np.random.default_rng(len(RESIZES)).standard_normal(shape).astype("float32")
    return model, x


RESIZES: dict = {}
# name -> ((model, input), whether the import is one image.resize2d). torch's nearest upsample
# export; hrnet_mini's bilinear size=, align_corners=True/False; then the cases that fall back
for _name, _args, _one in [
    ("nearest_asymmetric_floor_x2", ((1, 3, 8, 8), {
        "mode": "nearest", "coordinate_transformation_mode": "asymmetric",
        "nearest_mode": "floor"}, [1, 1, 2, 2]), True),
    ("linear_half_pixel_sizes", ((1, 4, 16, 16), {"mode": "linear"}, None, [1, 4, 32, 32]),
     True),
    ("linear_align_corners_sizes", ((1, 2, 16, 12), {
        "mode": "linear", "coordinate_transformation_mode": "align_corners"}, None,
        [1, 2, 32, 20]), True),
    ("linear_pytorch_half_pixel_down", ((1, 2, 9, 7), {
        "mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, None,
        [1, 2, 4, 1]), True),
    ("cubic_exclude_outside", ((1, 2, 5, 6), {
        "mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, [1, 1, 2, 3]), True),
    ("nearest_round_prefer_ceil_one_axis", ((2, 3, 6, 10), {
        "mode": "nearest", "nearest_mode": "round_prefer_ceil"}, None, [2, 3, 6, 4]), True),
    # a scale factor whose taps differ from in/out's (5 * 1.5 = 7.5 -> 7 pixels)
    ("linear_fractional_scale", ((1, 2, 4, 5), {"mode": "linear"}, [1, 1, 2, 1.5]), False),
    ("nearest_fractional_scale", ((1, 1, 4, 5), {"mode": "nearest"}, [1, 1, 1, 1.5]), False),
    ("nearest_channels_resized", ((1, 2, 4, 4), {"mode": "nearest"}, None, [1, 4, 8, 8]),
     False),
    ("linear_3d_input", ((1, 2, 6), {"mode": "linear"}, None, [1, 2, 12]), False),
    ("linear_antialias_down", ((1, 1, 12, 12), {"mode": "linear", "antialias": 1}, None,
                               [1, 1, 5, 5], 18), False),
]:
    RESIZES[_name] = (resize_model(*_args), _one)
