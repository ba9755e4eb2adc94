"""relay.frontend.from_onnx on Unique: Relay's unique (native: schedule.unique_sort) and slices
to the data-dependent count, on the Relay VM, against ONNX Runtime (all four outputs, sorted and in
order of first occurrence); along an axis, the slices ranked column by column with the same op
(the Relay importer refused an axis before)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
from onnx_unique_cases import UNIQUE, unique_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


@pytest.mark.parametrize("name", list(UNIQUE))
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


def test_unique_axis_out_of_range_is_a_clear_error():
    x, _ = UNIQUE["rows"]
    with pytest.raises(ImportError_, match="axis 2 is out of range for a rank-2 input"):
        relay.frontend.from_onnx(unique_model((x, {"axis": 2})), {"x": x.shape})
