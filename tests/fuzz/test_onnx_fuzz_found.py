"""Findings of the random ONNX graph fuzzer (``fuzz_long --onnx-programs``,
``testing.fuzz.onnx_differential``), each reduced to its few nodes: both importers at
opt_level 0 and 3 against ONNX Runtime."""

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the graphs are ONNX models")
pytest.importorskip("onnxruntime", reason="ONNX Runtime gives the expected outputs")
from onnx import TensorProto as P  # noqa: E402
from onnx import helper  # noqa: E402

from minitvm.testing import onnx_graphs as og  # noqa: E402
from minitvm.testing.fuzz.onnx_differential import check_onnx_program  # noqa: E402
from minitvm.testing.fuzz.onnx_generator import OnnxProgram  # noqa: E402


def check(nodes, inputs, outputs, feeds, inits=None, opset=15):
    """``nodes`` through both importers at both opt levels give ONNX Runtime's outputs."""
    m = og.model(nodes, inputs, outputs, inits, opset)
    m.ir_version = 8
    prog = OnnxProgram(0, m, feeds, [np.asarray(x) for x in og.ort_run(m, feeds)], opset)
    found = check_onnx_program(prog)
    assert not found, "\n".join(str(f) for f in found)


def test_flatten_at_axis_equal_to_rank():
    """Flatten's axis may equal the rank: (5,) at axis 1 is (5, 1). Relax took the axis
    modulo the rank, flattening at 0: (1, 5) (seed 195)."""
    check([helper.make_node("Flatten", ["x"], ["y"], axis=1),
           helper.make_node("Flatten", ["x2"], ["y2"], axis=2),
           helper.make_node("Flatten", ["x2"], ["y3"], axis=-2)],
          [og.vi("x", P.BOOL, [5]), og.vi("x2", P.FLOAT, [2, 3])],
          [og.vi("y", P.BOOL, [5, 1]), og.vi("y2", P.FLOAT, [6, 1]),
           og.vi("y3", P.FLOAT, [1, 6])],
          {"x": np.array([0, 1, 1, 0, 0], bool),
           "x2": np.arange(6, dtype="float32").reshape(2, 3)})


def _slice_model(x_type, shape, starts, ends, axes, steps, out_shape):
    inits = {"s": np.array(starts), "e": np.array(ends), "a": np.array(axes),
             "p": np.array(steps)}
    return ([helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"])],
            [og.vi("x", x_type, shape)], [og.vi("y", x_type, out_shape)], inits)


def test_slice_stepping_down_from_before_the_first_element():
    """ONNX clamps a negative start stepping down to [0, dim - 1]: ``x[-2::-2]`` of one
    element reads it. Both importers clamped it as Python (and strided_slice) do, to "before
    the first", and read nothing (seed 1069); an input and a constant (folded) alike."""
    nodes, inputs, outputs, inits = _slice_model(
        P.FLOAT, [2, 5, 5, 1], [5, 1, -2], [2, -2 ** 62, -2 ** 62], [-3, 2, -1], [-2, -1, -2],
        [2, 1, 2, 1])
    x = np.arange(50, dtype="float32").reshape(2, 5, 5, 1)
    check(nodes, inputs, outputs, {"x": x}, inits)
    # the same slice of a constant, folded at import, then used
    nodes = [helper.make_node("Slice", ["k", "s", "e", "a", "p"], ["ks"]),
             helper.make_node("Add", ["x", "ks"], ["y"])]
    check(nodes, inputs, [og.vi("y", P.FLOAT, [2, 5, 5, 1])], {"x": x},
          {**inits, "k": np.arange(5, dtype="float32").reshape(1, 5, 1, 1) * 10,
           "s": np.array([-9]), "e": np.array([-2 ** 62]), "a": np.array([1]),
           "p": np.array([-1])})



def test_zero_sized_dims_through_unsqueeze_squeeze_flatten_and_matmul():
    """A static 0 in a reshape the Relay importer builds is a zero-sized dimension, not
    reshape's "copy the input's" code: Unsqueeze of (1, 0, 0) is (1, 1, 0, 0) (seed 1194:
    a type error), Flatten of (2, 3, 0) at 1 is (2, 0), not (2, 3)."""
    n = helper.make_node
    nodes = [n("Unsqueeze", ["x", "ax"], ["u"]), n("Squeeze", ["u", "ax"], ["s"]),
             n("Flatten", ["y"], ["f"], axis=1), n("MatMul", ["m", "w"], ["mm"])]
    check(nodes, [og.vi("x", P.FLOAT, [1, 0, 0]), og.vi("y", P.FLOAT, [2, 3, 0]),
                  og.vi("m", P.FLOAT, [2, 3, 0, 4])],
          [og.vi("u", P.FLOAT, [1, 1, 0, 0]), og.vi("s", P.FLOAT, [1, 0, 0]),
           og.vi("f", P.FLOAT, [2, 0]), og.vi("mm", P.FLOAT, [2, 3, 0, 2])],
          {"x": np.zeros((1, 0, 0), "float32"), "y": np.zeros((2, 3, 0), "float32"),
           "m": np.zeros((2, 3, 0, 4), "float32")},
          {"ax": np.array([0]), "w": np.ones((4, 2), "float32")})


def test_float64_initializers_keep_their_dtype():
    """A DOUBLE initializer is a float64 constant in Relax too (relax.const alone turns a
    float64 array into float32, as TVM's does): Min / Mod of a float64 Cast by it failed to
    import (seeds 1144, 1204)."""
    n = helper.make_node
    check([n("Cast", ["x"], ["c"], to=P.DOUBLE), n("Min", ["c", "k"], ["y"]),
           n("Mod", ["c", "k"], ["z"], fmod=1)],
          [og.vi("x", P.FLOAT, [2, 2])], [og.vi("y", P.DOUBLE, [2, 2]),
                                          og.vi("z", P.DOUBLE, [2, 2])],
          {"x": np.array([[1.5, -7.25], [4.0, 0.1]], "float32")},
          {"k": np.array([3.0, -2.0])}, opset=13)


def test_trilu_fused_into_a_depthwise_conv():
    """Trilu's ``col - row >= k`` fused into the depthwise conv schedule compares its int32
    vector positions with the int64 k: the LLVM text had ``icmp sge <4 x i32> ..., <4 x i64>``
    and did not parse (seed 10290, Relax at opt_level 3)."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=3, kernel_shape=[2, 2],
                              dilations=[2, 1], pads=[1, 1, 0, 1], strides=[1, 2]),
             helper.make_node("Trilu", ["c", "k"], ["y"], upper=1)]
    check(nodes, [og.vi("x", P.FLOAT, [1, 3, 4, 6])], [og.vi("y", P.FLOAT, [1, 3, 3, 4])],
          {"x": rng.standard_normal((1, 3, 4, 6)).astype("float32")},
          {"k": np.array(0), "w": rng.standard_normal((3, 1, 2, 2)).astype("float32"),
           "b": np.ones(3, "float32")})


def test_concat_keeps_inputs_empty_along_another_axis():
    """(0, 2, 0) ++ (0, 1, 0) along axis 1 is (0, 3, 0): the Relay importer dropped every
    input with a 0 anywhere in its shape and gave (0, 2, 0) (seed 20116); an input empty
    along the axis itself adds nothing and is still dropped."""
    n = helper.make_node
    check([n("Concat", ["a", "b"], ["y"], axis=1), n("Concat", ["c", "d", "c"], ["z"], axis=-1)],
          [og.vi("a", P.BOOL, [0, 2, 0]), og.vi("b", P.BOOL, [0, 1, 0]),
           og.vi("c", P.FLOAT, [2, 0]), og.vi("d", P.FLOAT, [2, 3])],
          [og.vi("y", P.BOOL, [0, 3, 0]), og.vi("z", P.FLOAT, [2, 3])],
          {"a": np.zeros((0, 2, 0), bool), "b": np.zeros((0, 1, 0), bool),
           "c": np.zeros((2, 0), "float32"), "d": np.ones((2, 3), "float32")})


def test_batch_norm_with_a_zero_gamma_before_a_dense():
    """ForwardFoldScaleAxis carried batch_norm's scale (gamma / sqrt(var + eps), 0 where gamma
    is 0) through the shift's add by dividing the shift by it: ``(x + b / 0) * 0`` is NaN
    where the answer is ``b`` (seed 30793, Relay at opt_level 3; TVM divides too)."""
    n = helper.make_node
    check([n("BatchNormalization", ["x", "g", "b", "m", "v"], ["bn"]),
           n("MatMul", ["bn", "w"], ["y"])],
          [og.vi("x", P.FLOAT, [1, 2]), og.vi("w", P.FLOAT, [2, 3])],
          [og.vi("y", P.FLOAT, [1, 3])],
          {"x": np.array([[1.25, 0.5]], "float32"),
           "w": np.arange(6, dtype="float32").reshape(2, 3) - 2},
          {"g": np.array([0.0, -0.75], "float32"), "b": np.array([-1.0, 0.5], "float32"),
           "m": np.array([1.0, -0.75], "float32"), "v": np.array([1.75, 0.75], "float32")})


def test_scatter_elements_of_float64_by_a_known_index():
    """A float64 ScatterElements by a constant index (a gather of the updates padded by a
    fill): the fill was a relax.const of a float64 array, made float32, and the concat failed
    (seed 31965)."""
    check([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0)],
          [og.vi("x", P.DOUBLE, [1, 2]), og.vi("u", P.DOUBLE, [1, 2])],
          [og.vi("y", P.DOUBLE, [1, 2])],
          {"x": np.array([[-2.0, 7.0]]), "u": np.array([[-2.0, 2.0]])},
          {"i": np.array([[0, -1]])}, opset=17)
