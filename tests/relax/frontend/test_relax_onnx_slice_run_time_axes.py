"""relax.frontend.onnx.from_onnx on a Slice whose axes are read from data: one
dynamic_strided_slice of bounds spread over every axis, against onnxruntime; axes out of
range or named twice fail at run time (``R.assert_op``) naming the node."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
from onnx_slice_axes_cases import BAD_AXES, CASES, feeds, slice_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.relax.frontend.onnx.context import NeedsConstantInput  # noqa: E402


def _vm(model):
    mod = from_onnx(model)
    assert "R.dynamic_strided_slice" in mod.script()
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def _run(vm, f):
    return vm["main"](*[tvm.nd.array(v) for v in f.values()]).numpy()


@pytest.mark.parametrize("batch", ["N", 3])
@pytest.mark.parametrize("given, values", CASES)
def test_slice_axes_from_data_match_onnxruntime(given, values, batch):
    model = slice_model(given, batch=batch)
    vm = _vm(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (3, 1) if batch == "N" else (3,):
        f = feeds(given, values, n)
        want = sess.run(None, f)[0]
        got = _run(vm, f)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_slice_axes_from_data_with_constant_negative_steps():
    given, values = ("ax",), {"ax": [2, 0]}
    model = slice_model(given, steps=[-1, 2])
    f = feeds(given, values)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, f)[0]
    np.testing.assert_array_equal(_run(_vm(model), f), want)


def test_slice_axes_out_of_range_or_repeated_fail_at_run_time():
    vm = _vm(slice_model(("ax",)))
    for axes in BAD_AXES:
        with pytest.raises(AssertionError, match=r"Slice node 'sl': the axes \[.*\] must lie "
                                                 r"in \[-3, 3\) and name each axis once"):
            _run(vm, feeds(("ax",), {"ax": axes}))


def test_slice_axes_and_steps_from_data_are_refused_by_name():
    # (a step read from data could be zero, which this path has no run-time check for)
    with pytest.raises(NeedsConstantInput, match="Slice.s steps must be a constant"):
        from_onnx(slice_model(("ax", "sp")))
