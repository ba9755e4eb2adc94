"""resize2d_params: the one decision both ONNX importers use to bring a Resize in as
``image.resize2d`` (only where its in/out scaling samples exactly as the ONNX taps)."""

from minitvm.frontend_common.onnx_resize import resize2d_params


def test_integer_upsample_maps_onto_resize2d_arguments():
    got = resize2d_params({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                           "nearest_mode": "floor"}, [1, 3, 8, 8], [1, 3, 16, 16],
                          [1.0, 1.0, 2.0, 2.0], "float32")
    assert got == {"method": "nearest_neighbor", "coordinate_transformation_mode": "asymmetric",
                   "rounding_method": "floor", "cubic_alpha": -0.75, "cubic_exclude": 0}


def test_linear_carries_no_rounding_and_cubic_its_coefficients():
    lin = resize2d_params({"mode": "linear"}, [1, 4, 16, 16], [1, 4, 32, 32],
                          [1.0, 1.0, 2.0, 2.0], "float32")
    assert lin["method"] == "linear" and lin["rounding_method"] == ""
    cub = resize2d_params({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
                          [1, 2, 5, 6], [1, 2, 10, 18], [1.0, 1.0, 2.0, 3.0], "float32")
    assert (cub["cubic_alpha"], cub["cubic_exclude"]) == (-0.5, 1)


def test_cases_resize2d_cannot_reproduce_are_refused():
    plain = {"mode": "linear"}
    # the factor's taps differ from in/out's: 5 * 1.5 = 7.5 -> 7 outputs
    assert resize2d_params(plain, [1, 2, 4, 5], [1, 2, 8, 7], [1.0, 1.0, 2.0, 1.5],
                           "float32") is None
    assert resize2d_params(plain, [1, 2, 4, 4], [1, 4, 8, 8], [1.0, 2.0, 2.0, 2.0],
                           "float32") is None  # channels resized
    assert resize2d_params(plain, [1, 2, 6], [1, 2, 12], [1.0, 1.0, 2.0], "float32") is None
    assert resize2d_params(plain, [1, 1, 4, 4], [1, 1, 8, 8], [1.0, 1.0, 2.0, 2.0],
                           "int32") is None
    assert resize2d_params({"mode": "linear", "antialias": 1}, [1, 1, 12, 12], [1, 1, 5, 5],
                           [1.0, 1.0, 5 / 12, 5 / 12], "float32") is None
    assert resize2d_params({"mode": "linear", "coordinate_transformation_mode":
                            "tf_crop_and_resize"}, [1, 1, 4, 4], [1, 1, 8, 8],
                           [1.0, 1.0, 2.0, 2.0], "float32") is None
