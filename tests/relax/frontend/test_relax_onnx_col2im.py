"""relax.frontend.onnx.from_onnx on Col2Im (opset 18, torch's export of nn.Fold), static and
with a symbolic batch, built and run on the Relax VM against a direct numpy fold."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_col2im_cases import CASES, col2im_model, fold_reference  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_col2im(case, symbolic):
    shape, size, block, dil, pads, strides = case
    mod = from_onnx(col2im_model(*case, batch="n" if symbolic else None))
    assert mod.script().count("R.take") == 2
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for n in ((1, 3) if symbolic else (shape[0],)):
        x = np.random.default_rng(n).standard_normal((n, *shape[1:])).astype("float32")
        out = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(out, fold_reference(x, size, block, dil, pads, strides),
                                   rtol=1e-5, atol=1e-5)


def test_col2im_window_count_mismatch_is_an_error():
    with pytest.raises(ONNXImportError, match="10 windows given.*has 11x11"):
        from_onnx(col2im_model((1, 98, 10), (32, 32), (7, 7), (1, 1), (3, 3, 3, 3), (3, 3)))


def test_col2im_of_constant_columns():
    """Columns known at import (DeepFill's fold of ``ones_like``, the overlap count, which
    the dynamo exporter folds to an initializer) become a constant before the fold."""
    shape, size, block, dil, pads, strides = CASES[1]
    cols = np.random.default_rng(0).standard_normal(shape).astype("float32")
    node = helper.make_node("Col2Im", ["cols", "size", "block"], ["f"], dilations=list(dil),
                            pads=list(pads), strides=list(strides))
    ref = fold_reference(cols, size, block, dil, pads, strides)
    graph = helper.make_graph(
        [node, helper.make_node("Add", ["x", "f"], ["y"])], "col2im_const",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(ref.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(cols, "cols"),
         numpy_helper.from_array(np.array(size, "int64"), "size"),
         numpy_helper.from_array(np.array(block, "int64"), "block")])
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = np.random.default_rng(1).standard_normal(ref.shape).astype("float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(), x + ref, rtol=1e-5,
                               atol=1e-5)
