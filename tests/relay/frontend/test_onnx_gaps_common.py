"""The dialect-neutral ONNX helpers (minitvm.frontend_common.onnx_model) as both importers
use them: one error type per dialect for the same malformed input, unsupported operators
counted inside nested subgraphs, attributes and element types decoded alike."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from onnx import TensorProto, helper  # noqa: E402

from minitvm.frontend_common import onnx_model  # noqa: E402
from minitvm.relax.frontend import onnx as relax_onnx  # noqa: E402
from minitvm.relay.frontend import ImportError_, OpNotImplemented  # noqa: E402
from minitvm.relay.frontend import onnx as relay_onnx  # noqa: E402


def test_both_importers_share_one_helper_module():
    from minitvm.relax.frontend.onnx import context
    from minitvm.relay.frontend.onnx import registry

    assert isinstance(registry.CONVERTERS, onnx_model.ConverterTable)
    assert isinstance(context.CONVERTERS, onnx_model.ConverterTable)
    assert issubclass(registry.Context, onnx_model.NodeContext)
    assert issubclass(context.Context, onnx_model.NodeContext)


@pytest.mark.parametrize("bad,relay_err,relax_err", [
    (b"\x08\x01garbage", ImportError_, relax_onnx.ONNXImportError),
    (onnx.ModelProto(), ImportError_, relax_onnx.ONNXImportError),
    (42, TypeError, TypeError),
])
def test_malformed_models_raise_each_dialects_error(bad, relay_err, relax_err):
    with pytest.raises(relay_err):
        relay_onnx.from_onnx(bad)
    with pytest.raises(relax_err):
        relax_onnx.from_onnx(bad)


def test_unsupported_ops_are_counted_in_nested_subgraphs():
    inner = helper.make_graph([helper.make_node("Foo", [], ["a"]),
                               helper.make_node("Foo", [], ["b"])], "inner", [], [])
    mid = helper.make_graph([helper.make_node("If", ["c"], ["o"], then_branch=inner,
                                              else_branch=inner),
                             helper.make_node("Bar", [], ["z"], domain="custom")], "mid", [],
                            [])
    top = helper.make_graph([helper.make_node("Loop", ["", "c"], [], body=mid),
                             helper.make_node("Relu", ["x"], ["y"])], "top", [], [])
    counts = onnx_model.unsupported_ops(top, ["Relu", "If", "Loop"])
    assert counts == {"Foo": 4, "custom.Bar": 1}
    model = helper.make_model(top)
    with pytest.raises(OpNotImplemented, match=r"Foo \(x4\)"):
        relay_onnx.from_onnx(model)
    with pytest.raises(relax_onnx.OpNotImplemented, match=r"Foo \(x4\)"):
        relax_onnx.from_onnx(model)


def test_attributes_element_types_and_opset():
    node = helper.make_node("X", [], [], s="abc", ss=["p", "q"], i=3,
                            t=helper.make_tensor("t", TensorProto.FLOAT, (2,), [1.0, 2.0]))
    attrs = onnx_model.node_attrs(node)
    assert attrs["s"] == "abc" and attrs["ss"] == ["p", "q"] and attrs["i"] == 3
    np.testing.assert_array_equal(attrs["t"], np.array([1.0, 2.0], "float32"))
    assert onnx_model.onnx_dtype(TensorProto.INT64) == "int64"
    with pytest.raises(ImportError_, match="element type 16 is not supported"):
        relay_onnx.registry.onnx_dtype(TensorProto.BFLOAT16)
    model = helper.make_model(helper.make_graph([], "g", [], []),
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("custom", 99)])
    assert onnx_model.default_opset(model) == 13
    assert onnx_model.default_opset(model, 17) == 17
