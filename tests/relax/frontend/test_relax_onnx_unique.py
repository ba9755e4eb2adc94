"""relax.frontend.onnx.from_onnx on Unique: relax.unique with every output asked (run-time
lengths), flattened and along an axis, sorted and in order of first occurrence, against ONNX
Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
from onnx_unique_cases import UNIQUE, unique_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


@pytest.mark.parametrize("name", list(UNIQUE))
def test_unique_matches_onnxruntime(name):
    x, _ = UNIQUE[name]
    model = unique_model(UNIQUE[name])
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})
    mod = from_onnx(model)
    assert "R.unique(" in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = [a.numpy() for a in vm["main"](tvm.nd.array(x))]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_unique_axis_out_of_range():
    x, _ = UNIQUE["rows"]
    with pytest.raises(ONNXImportError, match="axis 2 is out of range"):
        from_onnx(unique_model((x, {"axis": 2})))
