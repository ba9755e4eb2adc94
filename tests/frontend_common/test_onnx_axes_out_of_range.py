"""An ONNX axis outside ``[-rank, rank)`` is refused by both importers, naming the node: taken
modulo the rank, it silently picked another axis (Split, Slice, Squeeze, LayerNormalization,
Compress, Pad, Hardmax, CumProd, a per-axis quantization parameter), where ONNX Runtime refuses
the model."""

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the models are ONNX files")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from minitvm import relax, relay  # noqa: E402

F = TensorProto.FLOAT


def _model(node, inits=(), in_shape=(2, 3), out_shape=None, out_type=F):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, list(in_shape))],
                          [helper.make_tensor_value_info(o, out_type, out_shape)
                           for o in node.output],
                          [numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def _refused(model, importers=("relay", "relax")):
    for which in importers:
        imp = relay.frontend.from_onnx if which == "relay" else relax.frontend.onnx.from_onnx
        with pytest.raises(Exception, match=r"node 'n'.*out of range|out of range.*node 'n'"
                           r"|is out of range"):
            imp(model)


I64 = np.int64


@pytest.mark.parametrize("case", [
    "split", "slice", "squeeze", "layernorm", "compress"])
def test_both_importers_refuse_an_axis_out_of_range(case):
    if case == "split":
        node = helper.make_node("Split", ["x"], ["a", "b"], name="n", axis=2, num_outputs=2)
    elif case == "slice":
        node = helper.make_node("Slice", ["x", "s", "e", "ax"], ["y"], name="n")
        inits = [("s", np.array([0], I64)), ("e", np.array([1], I64)), ("ax", np.array([3], I64))]
        return _refused(_model(node, inits))
    elif case == "squeeze":
        node = helper.make_node("Squeeze", ["x", "ax"], ["y"], name="n")
        return _refused(_model(node, [("ax", np.array([-3], I64))], in_shape=(1, 3)))
    elif case == "layernorm":
        node = helper.make_node("LayerNormalization", ["x", "g"], ["y"], name="n", axis=5)
        return _refused(_model(node, [("g", np.ones(3, np.float32))]))
    else:
        node = helper.make_node("Compress", ["x", "c"], ["y"], name="n", axis=4)
        return _refused(_model(node, [("c", np.array([True, False]))]))
    _refused(_model(node))


def test_relax_refuses_pad_hardmax_and_cumprod_axes_out_of_range():
    pad = helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], name="n")
    _refused(_model(pad, [("p", np.array([1, 1], I64)), ("ax", np.array([2], I64))]),
             ("relax",))
    _refused(_model(helper.make_node("Hardmax", ["x"], ["y"], name="n", axis=-3)), ("relax",))
    cum = helper.make_node("CumProd", ["x", "ax"], ["y"], name="n")
    _refused(_model(cum, [("ax", np.array(2, I64))]), ("relax",))


def test_a_per_axis_quantization_parameter_needs_its_axis_in_range():
    """A 1-D scale of 3 values along axis 2 of a rank-2 input; one value along any axis is a
    per-tensor parameter and imports."""
    node = helper.make_node("DequantizeLinear", ["q", "s"], ["y"], name="n", axis=2)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("q", TensorProto.INT8,
                                                                      [2, 3])],
                          [helper.make_tensor_value_info("y", F, None)],
                          [numpy_helper.from_array(np.full(3, 0.5, np.float32), "s")])
    _refused(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))
    g.initializer[0].CopyFrom(numpy_helper.from_array(np.full(1, 0.5, np.float32), "s"))
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    relay.frontend.from_onnx(model)
    relax.frontend.onnx.from_onnx(model)
