"""relax.frontend.onnx.from_onnx on Unique: flattened, the native kernel (a call_tir, the
lengths run-time dims); along an axis, the same kernel ranking many narrow slices column by
column (it was relax.unique, numpy, which few or wide slices keep); sorted and in order of first occurrence, floats (+-0, infinities) and
int64, against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from onnx_unique_cases import UNIQUE, unique_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402
from minitvm.relax.frontend.onnx.ops_unique import _ranking_pays  # noqa: E402


@pytest.mark.parametrize("name", list(UNIQUE))
def test_unique_matches_onnxruntime(name):
    x, _ = UNIQUE[name]
    model = unique_model(UNIQUE[name])
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})
    mod = from_onnx(model)
    text = mod.script()
    flat = "axis" not in UNIQUE[name][1] or x.ndim == 1
    native = flat or _ranking_pays(list(x.shape), UNIQUE[name][1]["axis"] % x.ndim)
    assert ("R.call_tir(cls.onnx_unique" in text) == native
    assert ("R.unique(" in text) == (not native)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = [a.numpy() for a in vm["main"](tvm.nd.array(x))]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_unique_axis_out_of_range():
    x, _ = UNIQUE["rows"]
    with pytest.raises(ONNXImportError, match="axis 2 is out of range"):
        from_onnx(unique_model((x, {"axis": 2})))


def test_unique_of_a_symbolic_length():
    """One module for every length: the kernel's PrimFunc takes the length as a var."""
    vi = helper.make_tensor_value_info
    node = helper.make_node("Unique", ["x"], ["y", "i", "v", "c"], sorted=0)
    outs = [vi(o, TensorProto.FLOAT if o == "y" else TensorProto.INT64, None) for o in "yivc"]
    model = helper.make_model(
        helper.make_graph([node], "u", [vi("x", TensorProto.FLOAT, ["n"])], outs),
        opset_imports=[helper.make_opsetid("", 11)])
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (1, 5, 300):
        x = np.random.default_rng(n).integers(0, 9, n).astype("float32")
        got = [a.numpy() for a in vm["main"](tvm.nd.array(x))]
        for g, w in zip(got, sess.run(None, {"x": x}), strict=True):
            np.testing.assert_array_equal(g, w)


def test_unique_axis_path_choice():
    """Many narrow slices take the kernel; few or wide ones stay relax.unique."""
    assert _ranking_pays([1200, 4], 0) and _ranking_pays([2, 600, 3], 1)
    assert not _ranking_pays([200, 8], 0) and not _ranking_pays([2000, 40], 0)
    assert sum("axis" in a and x.ndim > 1 and _ranking_pays(list(x.shape), a["axis"] % x.ndim)
               for x, a in UNIQUE.values()) >= 3
