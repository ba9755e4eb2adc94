"""relax.frontend.onnx.from_onnx on DFT (opsets 17 and 20), static and with a symbolic batch,
built and run on the Relax VM against numpy's FFT, and the errors for what ONNX forbids."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

from onnx_dft_cases import CASES, dft_model, dft_reference  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_dft(case, symbolic):
    shape, axis, inverse, onesided, length, opset = case
    mod = from_onnx(dft_model(*case, batch="n" if symbolic else None))
    assert "R.matmul" in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for n in ((1, 3) if symbolic else (shape[0],)):
        x = np.random.default_rng(n).standard_normal((n, *shape[1:])).astype("float32")
        out = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(out, dft_reference(x, axis, inverse, onesided, length),
                                   rtol=1e-4, atol=1e-4)


def test_dft_of_a_symbolic_axis_is_an_error():
    with pytest.raises(ONNXImportError, match="transformed axis 0 must be static"):
        from_onnx(dft_model((4, 8, 1), 0, 0, 0, None, 17, batch="n"))


def test_dft_axis_on_the_complex_dim_is_an_error():
    with pytest.raises(ONNXImportError, match="axis -1 is out of range"):
        from_onnx(dft_model((2, 8, 2), -1, 0, 0, None, 20))
