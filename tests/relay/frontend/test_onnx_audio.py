"""relay.frontend.from_onnx on STFT, HannWindow / HammingWindow / BlackmanWindow and
MelWeightMatrix: built strict-native and compared with onnx's reference implementation and,
where installed, ONNX Runtime; and the errors for what the ops forbid."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from frontend_models import build_and_run  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_audio_cases import (  # noqa: E402
    MEL_CASES,
    STFT_CASES,
    WINDOW_CASES,
    mel_model,
    stft_inputs,
    stft_model,
    window_model,
)

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


def _run(model, feeds):
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()},
                                           {k: str(v.dtype) for k, v in feeds.items()})
    return mod, build_and_run(mod, params, feeds)[0]


def _models():
    for name, case in STFT_CASES.items():
        yield f"stft_{name}", stft_model(case), stft_inputs(case)
    rng = np.random.default_rng(0)
    for op, size, periodic, code in WINDOW_CASES:
        dtype = "float32" if code == 1 else "float64"
        yield (f"{op}_{size}_{periodic}_{code}", window_model(op, size, periodic, code),
               {"x": rng.random((2, size)).astype(dtype)})
    for case in MEL_CASES:
        yield (f"mel_{case[0]}_{case[1]}", mel_model(case),
               {"x": rng.random((3, case[1] // 2 + 1)).astype("float32")})


MODELS = {name: (model, feeds) for name, model, feeds in _models()}


@pytest.mark.parametrize("name", list(MODELS))
def test_audio_ops_match_the_reference(name):
    model, feeds = MODELS[name]
    mod, got = _run(model, feeds)
    if name.startswith("stft"):
        text = mod.astext()
        assert "nn.dense(" in text and "take(" in text
        if STFT_CASES[name[5:]][2] not in (None, "input"):  # a known window: in the matrices
            assert text.count("multiply(") == 0
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", [n for n in MODELS if not n.startswith("mel")])
def test_audio_ops_match_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    model, feeds = MODELS[name]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(_run(model, feeds)[1], sess.run(None, feeds)[0], rtol=1e-4,
                               atol=1e-4)


def _window_of(model, size: int):
    """``model`` with its window op making ``size`` points."""
    for init in model.graph.initializer:
        if init.name == "wlen":
            init.CopyFrom(onnx.numpy_helper.from_array(np.array(size, "int64"), "wlen"))
    return model


@pytest.mark.parametrize("case, message", [
    (((2, 8, 1), 4, None, 16, 1), "frame_step 4 and frame_length 16 do not fit"),
    (((2, 32, 2), 4, None, 8, 1), "forward one-sided DFT needs a real input"),
    (((2, 32, 3), 4, None, 8, 0), "the signal must be .batch, length, 1 or 2."),
])
def test_stft_errors_name_the_problem(case, message):
    shapes = {k: v.shape for k, v in stft_inputs(case).items()}
    with pytest.raises(ImportError_, match=message):
        relay.frontend.from_onnx(stft_model(case), shapes)


def test_stft_window_and_frame_length_must_agree():
    case = ((2, 32, 1), 4, "hann", 8, 1)
    with pytest.raises(ImportError_, match="the window has 12 points but frame_length is 8"):
        relay.frontend.from_onnx(_window_of(stft_model(case), 12), {"x": (2, 32, 1)})


def test_mel_weight_matrix_needs_ordered_edges():
    model = mel_model((8, 16, 8192, 4096.0, 100.0))
    with pytest.raises(ImportError_, match="invalid mel bins"):
        relay.frontend.from_onnx(model, {"x": (3, 9)})


@pytest.mark.parametrize("win", ["hann", None])
def test_stft_of_a_batch_length_signal(win):
    """A real signal [batch, length] without its trailing axis, as torch's exporter writes
    ``torch.stft``'s input (ORT takes it; onnx's reference does not): the [b, n, 1] result."""
    case = ((2, 48), 6, win, 12, 1)
    model, feeds = stft_model(case), stft_inputs(case)
    want = stft_inputs(((2, 48, 1), 6, win, 12, 1))
    np.testing.assert_allclose(feeds["x"][..., None], want["x"])
    got = _run(model, feeds)[1]
    ref = ReferenceEvaluator(stft_model(((2, 48, 1), 6, win, 12, 1))).run(None, want)[0]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
