"""ONNX RNN / GRU / LSTM through relay.frontend.from_onnx, against ONNX Runtime: directions,
initial states, biases, sequence_lens, peepholes, linear_before_reset, clip, activations,
batch-first layout, and the clear errors for bad attributes."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402

F = TensorProto.FLOAT
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def recurrent_model(kind, seq=3, batch=2, width=4, hidden=5, direction="forward", bias=True,
                    lens=None, h0=False, c0=False, peep=False, layout=0, seed=0, **attrs):
    """A one-node model; weights are initializers, X (and optional states) are inputs."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[kind]
    inits = {"W": rng.standard_normal((dirs, g * hidden, width)).astype("float32") * 0.5,
             "R": rng.standard_normal((dirs, g * hidden, hidden)).astype("float32") * 0.5}
    names = ["X", "W", "R"]
    if bias:
        inits["B"] = rng.standard_normal((dirs, 2 * g * hidden)).astype("float32") * 0.5
    names.append("B" if bias else "")
    feeds = {"X": rng.standard_normal((batch, seq, width) if layout else (seq, batch, width))
             .astype("float32")}
    inputs = [helper.make_tensor_value_info("X", F, feeds["X"].shape)]
    if lens is not None:
        inits["L"] = np.array(lens, "int32")
    names.append("L" if lens is not None else "")
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    for flag, name in ((h0, "H0"), (c0, "C0")):
        if kind != "LSTM" and name == "C0":
            break
        if flag:
            feeds[name] = rng.standard_normal(state).astype("float32")
            inputs.append(helper.make_tensor_value_info(name, F, state))
        names.append(name if flag else "")
    if peep:
        inits["P"] = rng.standard_normal((dirs, 3 * hidden)).astype("float32")
        names.append("P")
    while names and names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, names, outs, hidden_size=hidden, direction=direction,
                            **({"layout": layout} if layout else {}), **attrs)
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info(o, F, None) for o in outs],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), feeds


def ort_run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_minitvm(model, feeds, compiled=False):
    mod, params = relay.frontend.from_onnx(model)
    if compiled:
        from frontend_models import build_and_run

        got = build_and_run(mod, params, feeds)
    else:
        run = relay.create_executor("debug", mod=mod).evaluate()
        out = run(*[feeds[p.name_hint] for p in mod["main"].params])
        got = [o.numpy() for o in out]
    return got


def check(model, feeds, compiled=False):
    ref = ort_run(model, feeds)
    got = run_minitvm(model, feeds, compiled)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_directions_with_states(kind, direction):
    check(*recurrent_model(kind, direction=direction, h0=True, c0=True))


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_defaults_without_bias_or_states(kind):
    check(*recurrent_model(kind, bias=False))


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_sequence_lens(kind, direction):
    check(*recurrent_model(kind, seq=4, batch=3, lens=[4, 2, 1], direction=direction,
                           h0=True))


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_batch_first_layout(kind):
    # ONNX Runtime rejects layout=1: compare with the same weights in layout 0, transposed
    model, feeds = recurrent_model(kind, layout=1, h0=True, c0=True, direction="bidirectional")
    model0, _ = recurrent_model(kind, layout=0, h0=True, c0=True, direction="bidirectional")
    ref = ort_run(model0, {k: v.transpose(1, 0, 2) for k, v in feeds.items()})
    got = run_minitvm(model, feeds)
    np.testing.assert_allclose(got[0], ref[0].transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)
    for g, r in zip(got[1:], ref[1:]):
        np.testing.assert_allclose(g, r.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)


def test_lstm_peepholes_and_clip():
    check(*recurrent_model("LSTM", peep=True, clip=0.7, c0=True, h0=True))


def test_gru_linear_before_reset():
    check(*recurrent_model("GRU", linear_before_reset=1, direction="bidirectional"))


def test_custom_activations():
    check(*recurrent_model("GRU", activations=["HardSigmoid", "LeakyRelu"],
                           activation_alpha=[0.3, 0.05], activation_beta=[0.4]))
    check(*recurrent_model("RNN", activations=["Relu"]))
    check(*recurrent_model("LSTM", activations=["HardSigmoid", "Elu", "Softsign"],
                           activation_alpha=[0.3, 0.9], activation_beta=[0.45]))
    check(*recurrent_model("RNN", activations=["ScaledTanh"], activation_alpha=[1.5],
                           activation_beta=[0.7]))
    check(*recurrent_model("RNN", activations=["Affine"], activation_alpha=[0.5],
                           activation_beta=[0.1]))
    check(*recurrent_model("GRU", activations=["Sigmoid", "ThresholdedRelu"],
                           activation_alpha=[0.2]))


def test_lstm_input_forget():
    check(*recurrent_model("LSTM", input_forget=1, h0=True, c0=True))


def test_lstm_compiled_matches():
    check(*recurrent_model("LSTM", direction="bidirectional", h0=True, c0=True), compiled=True)


def test_bad_attributes_are_clear_errors():
    model, _ = recurrent_model("LSTM", activations=["Sigmoid", "Swish", "Tanh"])
    with pytest.raises(ImportError_, match="activation 'Swish' is not supported"):
        relay.frontend.from_onnx(model)
    model, _ = recurrent_model("GRU", direction="sideways")
    with pytest.raises(ImportError_, match="direction='sideways'"):
        relay.frontend.from_onnx(model)


def test_sequence_lens_as_a_runtime_input():
    model, feeds = recurrent_model("GRU", seq=4, batch=3, lens=[3, 4, 2],
                                   direction="bidirectional")
    lens = next(t for t in model.graph.initializer if t.name == "L")
    model.graph.initializer.remove(lens)
    model.graph.input.append(helper.make_tensor_value_info("L", TensorProto.INT32, (3,)))
    feeds["L"] = np.array([3, 4, 2], "int32")
    check(model, feeds)
    check(model, dict(feeds, L=np.array([1, 2, 4], "int32")))
