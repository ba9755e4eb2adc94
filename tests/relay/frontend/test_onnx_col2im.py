"""relay.frontend.from_onnx on Col2Im (opset 18, what torch exports nn.Fold to): folded by
gathers through constant tap tables, added (``relay.frontend.fold``), built at opt_level 3
strict-native and compared with a direct numpy fold, plus the plan's errors."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from frontend_models import build_and_run  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_col2im_cases import CASES, col2im_model, fold_reference  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.frontend_common.fold_plan import fold_plan  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


@pytest.mark.parametrize("case", CASES)
def test_col2im(case):
    shape, size, block, dil, pads, strides = case
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    mod, params = relay.frontend.from_onnx(col2im_model(*case), {"x": shape})
    text = mod.astext()
    assert "take(" in text and "scatter" not in text
    out = build_and_run(mod, params, {"x": x})[0]
    np.testing.assert_allclose(out, fold_reference(x, size, block, dil, pads, strides),
                               rtol=1e-5, atol=1e-5)


def test_col2im_window_count_mismatch_is_an_error():
    with pytest.raises(ImportError_, match="10 windows given.*has 11x11"):
        relay.frontend.from_onnx(col2im_model((1, 98, 10), (32, 32), (7, 7), (1, 1), (3, 3, 3, 3),
                                        (3, 3)), {"x": (1, 98, 10)})


def test_col2im_3d_image_is_an_error():
    node = helper.make_node("Col2Im", ["x", "size", "block"], ["y"])
    graph = helper.make_graph(
        [node], "col2im", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 8, 1))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([2, 2, 2], "int64"), "size"),
         numpy_helper.from_array(np.array([2, 2, 2], "int64"), "block")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(ImportError_, match="only 2-D images"):
        relay.frontend.from_onnx(model, {"x": (1, 8, 1)})


def test_fold_plan_tables():
    """A 4-long axis, kernel 2, stride 2, no padding: two windows, each position one tap."""
    plan = fold_plan((4, 3), (2, 1), (1, 1), (0, 0), (0, 0), (2, 1), 2, 6, ValueError)
    assert plan.channels == 1 and plan.windows == (2, 3)
    np.testing.assert_array_equal(plan.rows, [[0], [2], [1], [3]])  # tap i, window y: i*2+y
    np.testing.assert_array_equal(plan.cols, [[0], [1], [2]])


def test_fold_plan_refuses_rows_that_are_not_whole_kernels():
    """5 column rows cannot be channels of a 2x1 kernel's taps."""
    with pytest.raises(ValueError, match="5 column rows are not a multiple of the kernel's 2x1"):
        fold_plan((4, 3), (2, 1), (1, 1), (0, 0), (0, 0), (2, 1), 5, 6, ValueError)
