"""relay.frontend.from_onnx on Attention (opsets 23-25) and RotaryEmbedding (opset 23), built
strict-native and compared with onnx's reference implementation and, where installed, ONNX
Runtime; and the errors for inputs ONNX forbids."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from frontend_models import build_and_run  # noqa: E402
from onnx_attention_cases import (  # noqa: E402
    ATTENTION_CASES,
    ROTARY_CASES,
    attention_expected,
    attention_inputs,
    attention_model,
    ort_checks,
    reference,
    rotary_inputs,
    rotary_model,
)

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


def _run(model, feeds):
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()})
    return mod, build_and_run(mod, params, feeds)


@pytest.mark.parametrize("name", list(ATTENTION_CASES))
def test_attention(name):
    c = ATTENTION_CASES[name]
    model, feeds = attention_model(c), attention_inputs(c)
    mod, got = _run(model, feeds)
    text = mod.astext()
    assert "nn.softmax" in text and "nn.batch_matmul" in text
    if c["hq"] != c["hkv"]:
        assert "repeat" not in text  # the grouped heads share K and V without copies
    want = attention_expected(c, model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", [n for n, c in ATTENTION_CASES.items() if ort_checks(c)])
def test_attention_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    c = ATTENTION_CASES[name]
    model, feeds = attention_model(c), attention_inputs(c, seed=3)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    for g, w in zip(_run(model, feeds)[1], want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(ROTARY_CASES))
def test_rotary_embedding(name):
    case = ROTARY_CASES[name]
    model, feeds = rotary_model(case), rotary_inputs(case)
    got = _run(model, feeds)[1][0]
    np.testing.assert_allclose(got, reference(model, feeds)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(ROTARY_CASES))
def test_rotary_embedding_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    case = ROTARY_CASES[name]
    model, feeds = rotary_model(case), rotary_inputs(case, seed=4)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(_run(model, feeds)[1][0], sess.run(None, feeds)[0], rtol=1e-5,
                               atol=1e-5)


def _with(name, **kw):
    c = dict(ATTENTION_CASES[name])
    c.update(kw)
    return c


@pytest.mark.parametrize("case, message", [
    (_with("3d", attrs={}), "3-D inputs need the q_num_heads and kv_num_heads"),
    (_with("4d", hq=3, hkv=2), "q_num_heads 3 is not a multiple of kv_num_heads 2"),
    (_with("4d", opset=25, attrs={"q_num_heads": 4, "kv_num_heads": 4}),
     "must not be given with 4-D inputs"),
    (_with("4d", attrs={"qk_matmul_output_mode": 5}), "qk_matmul_output_mode must be 0..3"),
    (_with("4d", opset=25, attrs={"left_window_size": -2}), "window sizes must be -1"),
])
def test_attention_errors_name_the_problem(case, message):
    model = attention_model(case)
    with pytest.raises(ImportError_, match=message):
        relay.frontend.from_onnx(model, {k: v.shape for k, v in attention_inputs(case).items()})


def test_rotary_embedding_errors_name_the_problem():
    case = ((2, 5, 24), (2, 5, 4), {}, False)
    shapes = {k: v.shape for k, v in rotary_inputs(case).items()}
    with pytest.raises(ImportError_, match="a 3-D input needs the num_heads"):
        relay.frontend.from_onnx(rotary_model(case), shapes)
    case = ((2, 3, 5, 8), (2, 5, 3), {}, False)
    shapes = {k: v.shape for k, v in rotary_inputs(case).items()}
    with pytest.raises(ImportError_, match="expected rotary_embedding_dim/2 = 4"):
        relay.frontend.from_onnx(rotary_model(case), shapes)
