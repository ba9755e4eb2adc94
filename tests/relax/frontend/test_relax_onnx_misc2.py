"""relax.frontend.onnx.from_onnx on LpPool, GlobalLpPool, CenterCropPad, Det, Compress,
MaxUnpool, CumProd, ReverseSequence and Upsample: built and run on the Relax VM against onnx's
reference implementation (numpy or ONNX Runtime where that one has none), some also with a
symbolic batch; and the errors for what cannot be imported."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_misc2_cases import _x, cases, one_node  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402

CASES = {name: (model, feeds, expected) for name, model, feeds, expected in cases()}


def _expected(model, feeds, expected):
    if expected is None:
        return ReferenceEvaluator(model).run(None, feeds)[0]
    if isinstance(expected, str):
        ort = pytest.importorskip("onnxruntime", reason="only ONNX Runtime implements this case")
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)[0]
    return expected


def _run(mod, model, feeds):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(feeds[i.name]) for i in model.graph.input]).numpy()


@pytest.mark.parametrize("name", list(CASES))
def test_op(name):
    model, feeds, expected = CASES[name]
    want = _expected(model, feeds, expected)
    got = _run(from_onnx(model), model, feeds)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


SYMBOLIC = {
    "LpPool": ((2, 3, 8, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                              "p": 3}),
    "GlobalLpPool": ((2, 3, 5, 4), {"p": 2}),
    "Det": ((2, 3, 3), {}),
    "CumProd": ((2, 5), {"exclusive": 1}),
}


@pytest.mark.parametrize("op", list(SYMBOLIC))
def test_symbolic_batch(op):
    shape, attrs = SYMBOLIC[op]
    inits = [("axis", np.array(1, "int64"))] if op == "CumProd" else []
    model = one_node(op, [_x(shape)], attrs, inits, opset=26 if op == "CumProd" else 18,
                     batch="n")
    mod = from_onnx(model)
    fixed = one_node(op, [_x(shape)], attrs, inits, opset=26 if op == "CumProd" else 18)
    for b in (1, 3):
        x = np.random.default_rng(b).uniform(0.5, 1.5, (b, *shape[1:])).astype("float32")
        fixed.graph.input[0].type.tensor_type.shape.dim[0].dim_value = b
        if op == "GlobalLpPool":  # (no reference implementation)
            want = np.sqrt((x.astype("float64") ** 2).sum(axis=(2, 3), keepdims=True))
        else:
            want = ReferenceEvaluator(fixed).run(None, {"x": x})[0]
        np.testing.assert_allclose(_run(mod, model, {"x": x}), want, rtol=1e-4, atol=1e-4)


def test_errors_name_the_problem():
    with pytest.raises(ONNXImportError, match="Det of 7 x 7 matrices is not supported"):
        from_onnx(one_node("Det", [_x((7, 7))]))
    model = one_node("Compress", [_x((4, 3)), ("c", (4,), onnx.TensorProto.BOOL)],
                     {"axis": 0})
    with pytest.raises(ONNXImportError, match="condition .the output's length depends on it. "
                                              "must be a constant"):
        from_onnx(model)
    model = one_node("CenterCropPad", [_x((4, 5))], {"axes": [0]},
                     [("shape", np.array([2, 2], "int64"))])
    with pytest.raises(ONNXImportError, match="shape has 2 values for 1 axes"):
        from_onnx(model)
    with pytest.raises(ONNXImportError, match="MaxUnpool needs a static input shape"):
        model = one_node("MaxUnpool", [_x((2, 1, 2, 2)), ("i", (2, 1, 2, 2),
                                                          onnx.TensorProto.INT64)],
                         {"kernel_shape": [2, 2], "strides": [2, 2]}, batch="n")
        from_onnx(model)
