"""Annotation/marker ops: identity types and values, opaque patterns, attrs."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op, OpPattern
from minitvm.ir.type import TensorType, TupleType

MARKERS = ["on_device", "annotation.stop_fusion", "annotation.checkpoint",
           "annotation.compiler_begin", "annotation.compiler_end", "annotation.cast_hint"]


@pytest.mark.parametrize("name", MARKERS)
def test_marker_ops_are_opaque_identities(name):
    op = Op.get(name)
    assert op.get_attr("TOpPattern") == OpPattern.OPAQUE
    assert not op.get_attr("TOpIsStateful")
    t = TensorType((2, 3), "float32")
    assert op.get_attr("FTypeRelation")([t], None) == t
    tt = TupleType([t, t])
    assert op.get_attr("FTypeRelation")([tt], None) == tt
    x = np.arange(6.0).reshape(2, 3)
    assert op.get_attr("FNumpy")(None, [x], t) is x
    with pytest.raises(TypeError, match=f"{name} expects 1 argument"):
        op.get_attr("FTypeRelation")([t, t], None)


def test_on_device_attrs_and_non_computational():
    x = relay.var("x", shape=(2,))
    call = relay.annotation.on_device(x, tvm.cpu(), constrain_result=True)
    assert call.op.name == "on_device" and call.args[0] is x
    assert type(call.attrs).__name__ == "OnDeviceAttrs"
    assert [k for k, _ in call.attrs.non_default_items()] == ["virtual_device",
                                                              "constrain_result"]
    assert call.attrs.constrain_body is True
    assert Op.get("on_device").get_attr("TNonComputational") is True
    assert relay.annotation.on_device(x, "cpu").attrs.virtual_device == \
        tvm.target.VirtualDevice(tvm.cpu(0))
    with pytest.raises(ValueError, match="on_device: a device"):
        relay.annotation.on_device(x, None)


def test_compiler_regions_stop_fusion_and_interpreter():
    x = relay.var("x", shape=(2, 2))
    begin = relay.annotation.compiler_begin(x, "ccompiler")
    assert begin.attrs.non_default_items() == [("compiler", "ccompiler")]
    body = relay.annotation.compiler_end(relay.nn.relu(begin), "ccompiler")
    body = relay.annotation.stop_fusion(body)
    assert body.op.name == "annotation.stop_fusion" and body.attrs is None
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    assert mod["main"].body.checked_type == TensorType((2, 2))
    data = np.array([[-1.0, 2.0], [3.0, -4.0]], dtype="float32")
    out = relay.create_executor("debug", mod=mod).evaluate()(data).numpy()
    np.testing.assert_array_equal(out, np.maximum(data, 0))
