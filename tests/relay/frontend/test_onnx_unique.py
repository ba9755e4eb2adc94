"""relay.frontend.from_onnx on Unique: Relay's unique (native: schedule.unique_sort) and slices
to the data-dependent count, on the Relay VM, against ONNX Runtime (all four outputs, sorted and in
order of first occurrence); the error for an axis of a rank-2 input."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
from onnx_unique_cases import FLAT, UNIQUE, unique_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


@pytest.mark.parametrize("name", FLAT)
def test_unique_matches_onnxruntime(name):
    x, _ = UNIQUE[name]
    model = unique_model(UNIQUE[name])
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})
    mod, _ = relay.frontend.from_onnx(model, {"x": x.shape}, {"x": str(x.dtype)})
    assert "unique(" in mod.astext()
    with tvm.transform.PassContext(opt_level=3):
        run = relay.create_executor("vm", mod=mod, target="llvm").evaluate()
    got = [a.numpy() for a in run(x)]
    assert len(got) == 4
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_unique_along_an_axis_of_a_matrix_is_a_clear_error():
    x, attrs = UNIQUE["rows"]
    with pytest.raises(ImportError_, match="Unique along axis 0 of a rank-2 input"):
        relay.frontend.from_onnx(unique_model(UNIQUE["rows"]), {"x": x.shape})
