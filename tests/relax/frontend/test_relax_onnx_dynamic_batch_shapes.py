"""Shape computations an exporter writes for a dynamic batch axis, folded at import so the batch
stays symbolic: ``cls.expand(B, -1, -1)`` (``Equal`` of ``[batch, -1, -1]`` with -1, then
``Where``: a shape variable is never negative) and slice ends from ``Mod`` of two constants;
undecidable comparisons (``batch == 2``) stay tensors. Checked against ONNX Runtime at several
batch sizes of one build."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, tir  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.relax.frontend.onnx.ops_math import _decide  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _i64(*v):
    return np.array(v, "int64")


def _cls_token_model():
    """y = concat(expand(cls, [batch, -1, -1] with -1 -> 1), x[:, :mod(7, 4)]) along axis 1."""
    cls = np.arange(4, dtype="float32").reshape(1, 1, 4)
    inits = {"cls": cls, "zero": np.array(0, "int64"), "ax0": _i64(0), "neg": _i64(-1, -1),
             "minus1": _i64(-1, -1, -1), "seven": _i64(7), "four": _i64(4), "one": _i64(1),
             "start": _i64(0)}
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Concat", ["b1", "neg"], ["shape"], axis=0),
        helper.make_node("Equal", ["shape", "minus1"], ["eq"]),
        helper.make_node("Shape", ["shape"], ["ss"]),
        helper.make_node("ConstantOfShape", ["ss"], ["ones"],
                         value=numpy_helper.from_array(_i64(1))),
        helper.make_node("Where", ["eq", "ones", "shape"], ["target"]),
        helper.make_node("Expand", ["cls", "target"], ["tok"]),
        helper.make_node("Mod", ["seven", "four"], ["end"]),
        helper.make_node("Slice", ["x", "start", "end", "one"], ["xs"]),
        helper.make_node("Concat", ["tok", "xs"], ["y"], axis=1),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["batch", 5, 4])],
                              [helper.make_tensor_value_info("y", F, ["batch", 4, 4])],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_cls_token_expand_keeps_the_batch_symbolic():
    model = _cls_token_model()
    mod = from_onnx(model)
    main = mod["main"]
    assert isinstance(main.params[0].struct_info.shape.values[0], tir.Var)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3, 2):
        x = np.random.default_rng(batch).standard_normal((batch, 5, 4)).astype("float32")
        got = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(got, sess.run(None, {"x": x})[0], rtol=1e-6)


def test_comparisons_with_a_shape_variable():
    n = tir.Var("batch", "int64")
    assert _decide("Equal", n, -1) is False
    assert _decide("Greater", n, -1) is True and _decide("Less", -1, n) is True
    assert _decide("LessOrEqual", n, -2) is False
    assert _decide("Equal", n, n) is True and _decide("Less", n, n) is False
    assert _decide("Equal", n, 2) is None  # undecided: the comparison is emitted
    # a size expression of shape variables is >= 0 too (flattened rows 5 * n: the exporter's
    # expand_as tests them against -1); n - 1 may be negative
    assert _decide("Equal", n + 1, -1) is False and _decide("Equal", n * 5, -1) is False
    assert _decide("Greater", tir.Max(n - 1, 0), -1) is True
    assert _decide("Equal", n - 1, -1) is None
    assert _decide("Equal", 3, 3) is True


def _diagonal_length_model():
    """torch.diagonal's export: the diagonal's length max(min(rows, cols - 0), 0) from the
    shape, a ConstantOfShape of it; also ``min(batch, 4)`` ones, a symbolic Min."""
    inits = {"one": _i64(1), "two": _i64(2), "zero": _i64(0), "ax0": _i64(0), "four": _i64(4)}
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["rows"], axis=0),
        helper.make_node("Gather", ["s", "two"], ["cols"], axis=0),
        helper.make_node("Sub", ["cols", "zero"], ["cols0"]),
        helper.make_node("Min", ["rows", "cols0"], ["m"]),
        helper.make_node("Max", ["m", "zero"], ["len"]),
        helper.make_node("ConstantOfShape", ["len"], ["diag"],
                         value=numpy_helper.from_array(np.array([1.0], "float32"))),
        helper.make_node("ReduceSum", ["x", "one"], ["r"], keepdims=0),
        helper.make_node("Add", ["r", "diag"], ["y"]),
        helper.make_node("Gather", ["s", "ax0"], ["b"], axis=0),
        helper.make_node("Min", ["b", "four"], ["bm"]),
        helper.make_node("ConstantOfShape", ["bm"], ["z"],
                         value=numpy_helper.from_array(np.array([2.0], "float32"))),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["batch", 3, 3])],
                              [helper.make_tensor_value_info("y", F, ["batch", 3]),
                               helper.make_tensor_value_info("z", F, [None])],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_min_max_of_shape_values_fold_at_import():
    model = _diagonal_length_model()
    mod = from_onnx(model)
    text = mod["main"].astext()
    # folded to dims (before: ConstantOfShape's shape "must be a constant or computed from shapes")
    assert "minimum" not in text and "maximum" not in text, text
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3, 6):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 3)).astype("float32")
        got = vm["main"](tvm.nd.array(x))
        want = sess.run(None, {"x": x})
        np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-6)
        np.testing.assert_array_equal(got[1].numpy(), want[1])


def _flattened_rows_expand_model():
    """``rows.expand_as(buffer)`` over the flattened rows of a dynamic batch (what
    ``nn.AdaptiveLogSoftmaxWithLoss.log_prob`` exports): the target shape ``[5 * batch, 3]``
    tested against -1 by ``Equal`` then ``Where``, the rows an ``arange`` column."""
    inits = {"flat": _i64(-1, 3), "zero": np.array(0, "int64"), "one": np.array(1, "int64"),
             "neg": _i64(-1), "col": _i64(-1, 1)}
    nodes = [
        helper.make_node("Reshape", ["x", "flat"], ["h"]),
        helper.make_node("Shape", ["h"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["r"]),
        helper.make_node("Reshape", ["r", "col"], ["rc"]),
        helper.make_node("Shape", ["s"], ["ss"]),
        helper.make_node("ConstantOfShape", ["ss"], ["ones"],
                         value=numpy_helper.from_array(_i64(1))),
        helper.make_node("Mul", ["ones", "neg"], ["minus"]),
        helper.make_node("Equal", ["s", "minus"], ["eq"]),
        helper.make_node("Where", ["eq", "ones", "s"], ["target"]),
        helper.make_node("Expand", ["rc", "target"], ["e"]),
        helper.make_node("Cast", ["e"], ["ef"], to=F),
        helper.make_node("Add", ["ef", "h"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["batch", 5, 3])],
                              [helper.make_tensor_value_info("y", F, None)],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_expand_to_flattened_rows_of_a_symbolic_batch():
    model = _flattened_rows_expand_model()
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 5, 3)).astype("float32")
        np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(),
                                   sess.run(None, {"x": x})[0], rtol=1e-6)


def test_a_deep_size_expression_is_decided_without_recursion():
    size = tir.Var("batch", "int64")
    for _ in range(100_000):
        size = tir.Add(size, tir.IntImm("int64", 1))
    assert _decide("Equal", size, -1) is False
