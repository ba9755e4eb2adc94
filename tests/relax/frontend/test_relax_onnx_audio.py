"""relax.frontend.onnx.from_onnx on STFT (static and with a symbolic batch), the window ops
and MelWeightMatrix, built and run on the Relax VM against onnx's reference implementation;
and the errors for what the ops forbid."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

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

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


def _run(mod, model, feeds):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(feeds[i.name]) for i in model.graph.input]).numpy()


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("name", list(STFT_CASES))
def test_stft(name, symbolic):
    case = STFT_CASES[name]
    model = stft_model(case, batch="n" if symbolic else None)
    mod = from_onnx(model)
    assert "R.matmul" in mod.script()
    for b in ((1, 3) if symbolic else (None,)):
        feeds = stft_inputs(case, b=b)
        want = ReferenceEvaluator(model).run(None, feeds)[0]
        np.testing.assert_allclose(_run(mod, model, feeds), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", WINDOW_CASES)
def test_window_ops(case):
    op, size, periodic, code = case
    model = window_model(op, size, periodic, code)
    feeds = {"x": np.random.default_rng(0).random((2, size)).astype(
        "float32" if code == 1 else "float64")}
    np.testing.assert_allclose(_run(from_onnx(model), model, feeds),
                               ReferenceEvaluator(model).run(None, feeds)[0], rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("case", MEL_CASES)
def test_mel_weight_matrix(case):
    model = mel_model(case)
    feeds = {"x": np.random.default_rng(0).random((3, case[1] // 2 + 1)).astype("float32")}
    np.testing.assert_allclose(_run(from_onnx(model), model, feeds),
                               ReferenceEvaluator(model).run(None, feeds)[0], rtol=1e-5,
                               atol=1e-6)


def test_stft_errors_name_the_problem():
    with pytest.raises(ONNXImportError, match="frame_step 4 and frame_length 16 do not fit"):
        from_onnx(stft_model(((2, 8, 1), 4, None, 16, 1)))
    model = stft_model(((2, 32, 1), 4, None, 8, 1))
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "len"
    with pytest.raises(ONNXImportError, match="the signal length must be static"):
        from_onnx(model)


def test_a_window_size_computed_from_a_graph_input_asks_for_it():
    """A value that must be known (the window size) computed from a graph input raises
    NeedsConstantInput naming that input, so a caller (the ONNX backend) can bind it."""
    from onnx import TensorProto, helper, numpy_helper

    from minitvm.relax.frontend.onnx import NeedsConstantInput

    one = numpy_helper.from_array(np.array(1, "int64"), "one")
    nodes = [helper.make_node("Add", ["n", "one"], ["m"]),
             helper.make_node("HannWindow", ["m"], ["w"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("n", TensorProto.INT64,
                                                                         [])],
                              [helper.make_tensor_value_info("w", TensorProto.FLOAT, None)],
                              [one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(NeedsConstantInput, match="computed from the graph input.s. 'n'") as e:
        from_onnx(model)
    assert e.value.input_name == "n"
    mod = from_onnx(model, const_inputs={"n": np.array(7, "int64")})
    out = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())["main"]().numpy()
    np.testing.assert_allclose(out, np.sin(np.pi * np.arange(8) / 8) ** 2, atol=1e-6)


@pytest.mark.parametrize("symbolic", [False, True])
def test_stft_of_a_batch_length_signal(symbolic):
    """A real signal [batch, length] without its trailing axis, as torch's exporter writes
    ``torch.stft``'s input (ORT takes it; onnx's reference does not): the [b, n, 1] result."""
    model = stft_model(((2, 48), 6, "hann", 12, 1), batch="n" if symbolic else None)
    ref_model = stft_model(((2, 48, 1), 6, "hann", 12, 1))
    mod = from_onnx(model)
    for b in ((1, 3) if symbolic else (2,)):
        feeds = stft_inputs(((2, 48), 6, "hann", 12, 1), b=b)
        want = ReferenceEvaluator(ref_model).run(None, {"x": feeds["x"][..., None]})[0]
        np.testing.assert_allclose(_run(mod, model, feeds), want, rtol=1e-4, atol=1e-4)
