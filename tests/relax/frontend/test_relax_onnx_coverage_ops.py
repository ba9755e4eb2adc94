"""Relax ONNX converters added or fixed for the node-test coverage (gathers/scatters, TopK,
OneHot, Hardmax, DepthToSpace/SpaceToDepth, (de)quantization, normalizations, activations,
Resize by fractional scales, LayerNormalization's extra outputs, ArgMax's select_last_index,
mixed-type Pow, floor Mod, reverse CumSum, run-time negative Gather indices) against ONNX
Runtime on random inputs; and ``const_inputs`` / ``NeedsConstantInput``."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import NeedsConstantInput, from_onnx  # noqa: E402

rng = np.random.default_rng(7)
CODE = {np.dtype(k): v for k, v in [("float32", TensorProto.FLOAT), ("int64", TensorProto.INT64),
                                     ("int32", TensorProto.INT32), ("uint8", TensorProto.UINT8),
                                     ("int8", TensorProto.INT8), ("float64", TensorProto.DOUBLE),
                                     ("uint32", TensorProto.UINT32)]}


def model(op, inputs: dict, attrs=None, inits=None, n_out=1, opset=21):
    """A one-node model: ``inputs`` are graph inputs (name -> array), ``inits`` initializers."""
    inits = inits or {}
    names = list(inputs) + list(inits)
    node = helper.make_node(op, names, [f"y{i}" for i in range(n_out)], **(attrs or {}))
    g = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, CODE[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(f"y{i}") for i in range(n_out)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def check(m, inputs: dict, rtol=1e-5, atol=1e-5):
    ref = ort.InferenceSession(m.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, inputs)
    vm = relax.VirtualMachine(relax.build(from_onnx(m), "llvm"), tvm.cpu())
    out = vm["main"](*inputs.values())
    got = [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape and g.dtype == r.dtype, (g.shape, g.dtype, r.shape, r.dtype)
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)


def case(op, inputs: dict, *args, **kwargs):
    """(one-node model, its inputs)."""
    return model(op, inputs, *args, **kwargs), inputs


def f32(*shape):
    return rng.standard_normal(shape).astype("float32")


CASES = {
    "castlike": lambda: case("CastLike", {"x": f32(3, 4) * 5},
                             inits={"t": np.zeros(1, "int32")}),
    "gather_elements_negative": lambda: case(
        "GatherElements", {"x": f32(3, 4), "i": rng.integers(-4, 4, (3, 2))}, {"axis": 1}),
    "gather_nd_batch": lambda: case(
        "GatherND", {"x": f32(2, 3, 4), "i": rng.integers(0, 3, (2, 2, 1))},
        {"batch_dims": 1}),
    "scatter_elements_add": lambda: case(
        "ScatterElements", {"x": f32(4, 3), "i": np.array([[1, 0, 2], [-1, 2, 0]]),
                            "u": f32(2, 3)}, {"axis": 0, "reduction": "add"}),
    "scatter_nd": lambda: case(
        "ScatterND", {"x": f32(4, 5), "i": np.array([[2], [0]]), "u": f32(2, 5)}),
    "topk_smallest": lambda: case("TopK", {"x": f32(3, 7)}, {"axis": 1, "largest": 0},
                                  inits={"k": np.array([3])}, n_out=2),
    "onehot": lambda: case("OneHot", {"i": np.array([[1, -1], [3, 0]])}, {"axis": 1},
                           inits={"d": np.array(4), "v": np.array([0.5, 2.0], "float32")}),
    "hardmax": lambda: case("Hardmax", {"x": f32(2, 3, 5)}, {"axis": 1}),
    "hardmax_opset11": lambda: case("Hardmax", {"x": f32(2, 3, 5)}, {"axis": 1}, opset=11),
    "depth_to_space_dcr": lambda: case("DepthToSpace", {"x": f32(1, 8, 2, 3)},
                                       {"blocksize": 2}),
    "depth_to_space_crd": lambda: case("DepthToSpace", {"x": f32(1, 8, 2, 3)},
                                       {"blocksize": 2, "mode": "CRD"}),
    "space_to_depth": lambda: case("SpaceToDepth", {"x": f32(2, 3, 4, 6)}, {"blocksize": 2}),
    "bitshift_right": lambda: case("BitShift", {"a": np.array([16, 255, 7], "uint32"),
                                                "b": np.array([1, 4, 2], "uint32")},
                                   {"direction": "RIGHT"}),
    "celu": lambda: case("Celu", {"x": f32(3, 4)}, {"alpha": 0.7}),
    "mish": lambda: case("Mish", {"x": f32(3, 4)}),
    "thresholded_relu": lambda: case("ThresholdedRelu", {"x": f32(3, 4)}, {"alpha": 0.3}),
    "shrink": lambda: case("Shrink", {"x": f32(3, 4)}, {"lambd": 0.4, "bias": 0.1}),
    "reduce_log_sum": lambda: case("ReduceLogSum", {"x": np.abs(f32(3, 4, 2)) + 0.1},
                                   {"keepdims": 0}, inits={"a": np.array([1])}),
    "group_norm": lambda: case("GroupNormalization", {"x": f32(2, 6, 3, 3)},
                               {"num_groups": 3}, inits={"s": f32(6), "b": f32(6)}),
    "lp_norm": lambda: case("LpNormalization", {"x": f32(3, 4)}, {"axis": 0, "p": 1}),
    "mvn": lambda: case("MeanVarianceNormalization", {"x": f32(2, 3, 4, 4)}),
    "quantize_per_channel": lambda: case(
        "QuantizeLinear", {"x": f32(2, 3, 4) * 20},
        inits={"s": np.array([0.1, 0.2, 0.3], "float32"), "z": np.array([3, 120, 250], "uint8")}),
    "quantize_blocked": lambda: case(
        "QuantizeLinear", {"x": f32(2, 6) * 10}, {"axis": 1, "block_size": 4},
        inits={"s": np.array([[0.1, 0.3], [0.2, 0.05]], "float32"),
               "z": np.array([[1, -2], [0, 5]], "int8")}),
    "dequantize_int8": lambda: case(
        "DequantizeLinear", {"x": rng.integers(-128, 128, (3, 4)).astype("int8")},
        inits={"s": np.array(0.05, "float32"), "z": np.array(-3, "int8")}),
    "layer_norm_three_outputs": lambda: case(
        "LayerNormalization", {"x": f32(2, 3, 4)}, {"axis": 1},
        inits={"g": f32(3, 4), "b": f32(3, 4)}, n_out=3),
    "argmax_last_index": lambda: case(
        "ArgMax", {"x": rng.integers(0, 3, (3, 6)).astype("float32")},
        {"axis": 1, "select_last_index": 1}),
    "argmin_last_index_keepdims0": lambda: case(
        "ArgMin", {"x": rng.integers(0, 3, (3, 6)).astype("float32")},
        {"axis": 0, "keepdims": 0, "select_last_index": 1}),
    "pow_float_int_exponent": lambda: case(
        "Pow", {"x": np.abs(f32(3, 4)) + 0.5, "y": rng.integers(0, 3, (3, 4))}),
    "pow_int_float_exponent": lambda: case(
        "Pow", {"x": rng.integers(1, 5, (3, 4)), "y": np.array([2.0], "float32")}, opset=15),
    "mod_float_fmod": lambda: case("Mod", {"x": f32(3, 4) * 5, "y": f32(3, 4) + 3},
                                   {"fmod": 1}),
    "cumsum_reverse_exclusive": lambda: case(
        "CumSum", {"x": f32(3, 4)}, {"reverse": 1, "exclusive": 1}, inits={"a": np.array(1)}),
    "gather_negative_runtime_indices": lambda: case(
        "Gather", {"x": f32(5, 3), "i": np.array([-1, 0, -5, 2])}),
    "resize_downsample_linear_scales": lambda: case(
        "Resize", {"x": f32(1, 2, 4, 5)}, {"mode": "linear"},
        inits={"r": np.zeros(0, "float32"), "s": np.array([1, 1, 0.6, 0.6], "float32")}),
    "resize_cubic_align_corners_sizes": lambda: case(
        "Resize", {"x": f32(1, 1, 4, 4)},
        {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
        inits={"r": np.zeros(0, "float32"), "s": np.zeros(0, "float32"),
               "z": np.array([1, 1, 7, 5])}),
    "conv_transpose_output_shape": lambda: case(
        "ConvTranspose", {"x": f32(1, 2, 3, 3)}, {"strides": [3, 2], "output_shape": [10, 8]},
        inits={"w": f32(2, 3, 3, 3)}),
    "conv_transpose_same_lower": lambda: case(
        "ConvTranspose", {"x": f32(1, 2, 3, 4)}, {"strides": [2, 2], "auto_pad": "SAME_LOWER"},
        inits={"w": f32(2, 2, 3, 3)}),
    "reduce_max_empty_axis": lambda: case("ReduceMax", {"x": f32(2, 0, 4)},
                                          inits={"a": np.array([1])}),
    "resize_nearest_upsample2x": lambda: case(
        "Resize", {"x": f32(2, 3, 4, 5)},
        inits={"r": np.zeros(0, "float32"), "s": np.array([1, 1, 2, 2], "float32")}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_converter_matches_onnxruntime(name):
    check(*CASES[name]())


def test_shape_input_needs_binding_then_const_inputs_binds_it():
    x = f32(2, 6)
    m = model("Reshape", {"x": x, "shape": np.array([3, 4])})
    with pytest.raises(NeedsConstantInput, match="const_inputs") as e:
        from_onnx(m)
    assert e.value.input_name == "shape"
    mod = from_onnx(m, const_inputs={"shape": np.array([3, 4])})
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    np.testing.assert_array_equal(vm["main"](x).numpy(), x.reshape(3, 4))


def test_float_mod_without_fmod_is_floor_mod():
    """fmod=0 on floats (opset 28 allows it; ONNX Runtime does not run it yet): Python's %."""
    x, y = f32(3, 4) * 5, f32(3, 4) + 3
    m = model("Mod", {"x": x, "y": y})
    vm = relax.VirtualMachine(relax.build(from_onnx(m), "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](x, y).numpy(), np.mod(x, y), rtol=1e-5, atol=1e-5)
