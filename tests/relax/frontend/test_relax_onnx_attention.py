"""relax.frontend.onnx.from_onnx on Attention (opsets 23-25) and RotaryEmbedding (opset 23),
static and with a symbolic batch, built and run on the Relax VM against onnx's reference
implementation; and the errors for inputs ONNX forbids or this importer cannot plan."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

from onnx_attention_cases import (  # noqa: E402
    ATTENTION_CASES,
    ROTARY_CASES,
    attention_expected,
    attention_inputs,
    attention_model,
    reference,
    rotary_inputs,
    rotary_model,
)

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


def _run(mod, model, feeds) -> list:
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(feeds[i.name]) for i in model.graph.input])
    return [o.numpy() for o in out] if isinstance(out, list | tuple) else [out.numpy()]


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("name", list(ATTENTION_CASES))
def test_attention(name, symbolic):
    c = ATTENTION_CASES[name]
    model = attention_model(c, batch="n" if symbolic else None)
    mod = from_onnx(model)
    text = mod.script()
    assert "R.nn.softmax" in text and "R.matmul" in text and "R.repeat" not in text
    for b in ((1, 3) if symbolic else (None,)):
        feeds = attention_inputs(c, b=b)
        want = attention_expected(c, model, feeds)
        got = _run(mod, model, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("name", list(ROTARY_CASES))
def test_rotary_embedding(name, symbolic):
    case = ROTARY_CASES[name]
    model = rotary_model(case, batch="n" if symbolic else None)
    mod = from_onnx(model)
    for b in ((1, 3) if symbolic else (None,)):
        feeds = rotary_inputs(case, b=b)
        np.testing.assert_allclose(_run(mod, model, feeds)[0], reference(model, feeds)[0],
                                   rtol=1e-5, atol=1e-5)


def _with(name, **kw):
    c = dict(ATTENTION_CASES[name])
    c.update(kw)
    return c


@pytest.mark.parametrize("case, message", [
    (_with("3d", attrs={"q_num_heads": 3, "kv_num_heads": 3}), "not divisible by the heads"),
    (_with("4d", opset=25, attrs={"q_num_heads": 4, "kv_num_heads": 4}),
     "must not be given with 4-D inputs"),
])
def test_attention_errors_name_the_problem(case, message):
    with pytest.raises(ONNXImportError, match=message):
        from_onnx(attention_model(case))


def test_softmax_precision_of_the_input_type_is_accepted():
    c = _with("4d", attrs={"softmax_precision": 1})
    model, feeds = attention_model(c), attention_inputs(c)
    np.testing.assert_allclose(_run(from_onnx(model), model, feeds)[0],
                               reference(model, feeds)[0], rtol=1e-4, atol=1e-5)


def test_causal_attention_over_a_symbolic_sequence_is_an_error():
    c = _with("4d", attrs={"is_causal": 1})
    model = attention_model(c)
    for vi in model.graph.input:
        vi.type.tensor_type.shape.dim[2].dim_param = "seq"
    with pytest.raises(ONNXImportError, match="the query length .for is_causal or a window. "
                                              "must be static"):
        from_onnx(model)
