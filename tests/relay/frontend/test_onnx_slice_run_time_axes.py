"""ONNX Slice whose axes are read from data (with run-time sizes): every axis sliced by the
bounds the axes give it, against onnxruntime; axes out of range or named twice raise at run
time naming the node."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime import vm as runtime_vm


def _vm(mod, params=None):
    with tvm.transform.PassContext(opt_level=3):
        return runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm", params=params),
                                         tvm.cpu())


onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx_slice_axes_cases import BAD_AXES, CASES, feeds, slice_model  # noqa: E402


def _import(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return relay.frontend.from_onnx(model)


@pytest.mark.parametrize("given, values", CASES)
def test_slice_axes_from_data_match_onnxruntime(given, values):
    model = slice_model(given)
    vm = _vm(*_import(model))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (3, 1):
        f = feeds(given, values, batch)
        want = sess.run(None, f)[0]
        got = vm.run(*f.values()).numpy()
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_slice_axes_from_data_with_constant_negative_steps():
    given, values = ("ax",), {"ax": [2, 0]}
    model = slice_model(given, steps=[-1, 2])
    f = feeds(given, values)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, f)[0]
    np.testing.assert_array_equal(_vm(*_import(model)).run(*f.values()).numpy(), want)


def test_slice_axes_out_of_range_or_repeated_raise_at_run_time():
    vm = _vm(*_import(slice_model(("ax",))))
    for axes in BAD_AXES:
        with pytest.raises(RuntimeError, match=r"Slice node 'sl': the axes \[.*\] must lie in "
                                               r"\[-3, 3\) and name each axis once"):
            vm.run(*feeds(("ax",), {"ax": axes}).values())
