"""Regression tests for the ONNX importer findings of the damage fuzzer: each damaged model must
be refused by both importers with an error naming the node or value (or, for an unsupported op,
with TVM's error class)."""

import pytest

pytest.importorskip("onnx", reason="the damaged artefacts are ONNX models")

from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.testing.fuzz.damage_onnx import seed_models  # noqa: E402


def _both(model):
    """Import ``model`` with each importer: the errors (or None) they raise."""
    out = []
    for imp in (relay.frontend.from_onnx, relax.frontend.onnx.from_onnx):
        try:
            imp(model)
            out.append(None)
        except Exception as err:  # noqa: BLE001 - the test reads it
            out.append(err)
    return out


def _set_attr(model, node_name, name, value):
    for n in model.graph.node:
        if n.name == node_name:
            for i, a in enumerate(n.attribute):
                if a.name == name:
                    n.attribute[i].CopyFrom(helper.make_attribute(name, value))
    return model


def test_an_axis_out_of_range_is_refused():
    """Gather axis=99 on a rank-2 input was taken modulo the rank (axis 1): a silent wrong
    answer where ONNX Runtime refuses the model."""
    for axis in (99, -99):
        m = _set_attr(seed_models()["gather"], "gather0", "axis", axis)
        for err in _both(m):
            assert isinstance(err, ValueError)
            assert "Gather node 'gather0'" in str(err) and f"axis {axis} is out of range" in \
                str(err)


def test_keepdims_must_be_zero_or_one():
    """keepdims=5 kept the reduced axis; ONNX Runtime reads anything but 1 as 0."""
    m = _set_attr(seed_models()["elementwise"], "sum0", "keepdims", 5)
    for err in _both(m):
        assert isinstance(err, ValueError)
        assert "ReduceSum node 'sum0'" in str(err) and "'keepdims' must be 0 or 1" in str(err)


def test_a_value_named_twice_is_refused_at_its_second_producer():
    """A second producer of 'mm' replaced the first's value for every later reader."""
    m = seed_models()["gather"]
    m.graph.node[1].output[0] = "mm"
    for err in _both(m):
        assert isinstance(err, ValueError)
        assert "Concat node 'concat0': output 'mm' is already defined" in str(err)


def test_an_ill_typed_conversion_names_its_own_node():
    """Without transB the Gemm's dense is ill typed; Relay's importer named the Softmax that
    read it."""
    m = seed_models()["conv"]
    gemm = next(n for n in m.graph.node if n.name == "gemm0")
    del gemm.attribute[:]
    err = _both(m)[0]
    assert isinstance(err, ValueError) and str(err).startswith("Gemm node 'gemm0': cannot convert")


def test_an_unsupported_op_names_its_node_and_is_tvms_error_class():
    """The importers' OpNotImplemented did not derive from tvm.error.OpNotImplemented (code
    catching TVM's class missed it), and an empty op type listed nothing."""
    for op_type in ("FooBar", ""):
        m = seed_models()["elementwise"]
        m.graph.node[1].op_type = op_type
        for err in _both(m):
            assert isinstance(err, tvm.error.OpNotImplemented)
            assert f"(first at node 'mul0' for {op_type!r})" in str(err)


def test_a_bad_element_type_names_the_input():
    m = seed_models()["elementwise"]
    m.graph.input[1].type.tensor_type.elem_type = TensorProto.STRING
    for err in _both(m):
        assert isinstance(err, ValueError)
        assert "graph input 'C': ONNX element type 8 is not supported" in str(err)


def test_a_missing_required_attribute_is_named():
    """Bytes cut before opset_import leave the default opset 1, where Reshape reads its
    'shape' attribute: the converter failed with a bare KeyError: 'shape'."""
    m = seed_models()["elementwise"]
    del m.opset_import[:]
    err = _both(m)[1]
    assert isinstance(err, ValueError)
    assert "Reshape node 'reshape0'" in str(err)
    assert "the node has no attribute 'shape', which this opset requires" in str(err)
