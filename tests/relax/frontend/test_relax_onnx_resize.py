"""The Relax ONNX importer brings Resize in as one ``image.resize2d`` wherever it samples as the
ONNX taps do (the decision Relay's importer shares), else as per-axis ``take`` taps; both match
ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402

rng = np.random.default_rng(3)


def _resize(shape, attrs, scales=None, sizes=None, opset=13):
    inits = {"roi": np.zeros(0, "float32"),
             "sc": np.array(scales if scales else [], "float32")}
    if sizes is not None:
        inits["sz"] = np.array(sizes, "int64")
    node = helper.make_node("Resize", ["x", *inits], ["y"], **attrs)
    g = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_empty_tensor_value_info("y")],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return model, rng.standard_normal(shape).astype("float32")


# name -> (model and input, whether the import is one image.resize2d): Relay's table of cases
RESIZES = {
    "nearest_asymmetric_floor_x2": (_resize(
        (1, 3, 8, 8), {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                       "nearest_mode": "floor"}, scales=[1, 1, 2, 2]), True),
    "linear_half_pixel_sizes": (_resize(
        (1, 4, 16, 16), {"mode": "linear"}, sizes=[1, 4, 32, 32]), True),
    "linear_align_corners_sizes": (_resize(
        (1, 2, 16, 12), {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        sizes=[1, 2, 32, 20]), True),
    "linear_pytorch_half_pixel_down": (_resize(
        (1, 2, 9, 7), {"mode": "linear", "coordinate_transformation_mode":
                       "pytorch_half_pixel"}, sizes=[1, 2, 4, 1]), True),
    "cubic_exclude_outside": (_resize(
        (1, 2, 5, 6), {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
        scales=[1, 1, 2, 3]), True),
    "nearest_round_prefer_ceil_one_axis": (_resize(
        (2, 3, 6, 10), {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
        sizes=[2, 3, 6, 4]), True),
    # a scale factor whose taps differ from in/out's (5 * 1.5 = 7.5 -> 7 pixels)
    "linear_fractional_scale": (_resize(
        (1, 2, 4, 5), {"mode": "linear"}, scales=[1, 1, 2, 1.5]), False),
    "nearest_fractional_scale": (_resize(
        (1, 1, 4, 5), {"mode": "nearest"}, scales=[1, 1, 1, 1.5]), False),
    "nearest_channels_resized": (_resize(
        (1, 2, 4, 4), {"mode": "nearest"}, sizes=[1, 4, 8, 8]), False),
    "linear_3d_input": (_resize((1, 2, 6), {"mode": "linear"}, sizes=[1, 2, 12]), False),
    "linear_antialias_down": (_resize(
        (1, 1, 12, 12), {"mode": "linear", "antialias": 1}, sizes=[1, 1, 5, 5], opset=18),
        False),
}


def _called_ops(mod) -> set[str]:
    names = set()
    relax.analysis.post_order_visit(
        mod["main"], lambda e: names.add(e.op.name) if isinstance(e, relax.Call)
        and hasattr(e.op, "name") else None)
    return names


@pytest.mark.parametrize("name", sorted(RESIZES))
def test_resize_imports_as_resize2d_where_it_samples_the_same(name):
    (model, x), as_resize2d = RESIZES[name]
    mod = from_onnx(model)
    ops = _called_ops(mod)
    assert ("relax.image.resize2d" in ops) == as_resize2d
    assert ("relax.take" in ops) != as_resize2d
    (ref,) = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, {"x": x})
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](x).numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
