"""relay.frontend.from_onnx on DFT (opsets 17 and 20): every form (full, RFFT, IRFFT, forward
and inverse, padded and cropped) as dense products, built strict-native and compared with
numpy's FFT and, where installed, ONNX Runtime; and the errors for what ONNX forbids."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from frontend_models import build_and_run  # noqa: E402
from onnx_dft_cases import CASES, dft_model, dft_reference  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


@pytest.mark.parametrize("case", CASES)
def test_dft(case):
    shape, axis, inverse, onesided, length, opset = case
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    model = dft_model(*case)
    mod, params = relay.frontend.from_onnx(model, {"x": shape})
    text = mod.astext()
    assert "nn.dense(" in text and "fft" not in text
    out = build_and_run(mod, params, {"x": x})[0]
    want = dft_reference(x, axis, inverse, onesided, length)
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", [c for c in CASES if not (c[2] and c[3])])
def test_dft_matches_onnxruntime(case):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    model = dft_model(*case)
    x = np.random.default_rng(2).standard_normal(case[0]).astype("float32")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    mod, params = relay.frontend.from_onnx(model, {"x": case[0]})
    np.testing.assert_allclose(build_and_run(mod, params, {"x": x})[0], want, rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("case, message", [
    (((2, 16, 1), 2, 0, 0, None, 17), "axis 2 is out of range"),
    (((2, 16, 3), 1, 0, 0, None, 17), "last axis must be 1 .real. or 2 .complex."),
    (((2, 16, 2), 1, 0, 1, None, 17), "forward one-sided DFT needs a real input"),
    (((2, 9, 1), 1, 1, 1, None, 20), "IRFFT. needs a complex input"),
    (((2, 8, 1), 1, 0, 0, 0, 17), "dft_length must be positive"),
])
def test_dft_errors_name_the_problem(case, message):
    with pytest.raises(ImportError_, match=message):
        relay.frontend.from_onnx(dft_model(*case), {"x": case[0]})
