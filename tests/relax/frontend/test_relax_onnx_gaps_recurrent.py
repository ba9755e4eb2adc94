"""ONNX LSTM / GRU / RNN through relax.frontend.onnx.from_onnx: PyTorch's recurrent modules
exported to ONNX (several layers, both directions, initial states) and single nodes with
sequence_lens, all against ONNX Runtime; weights are folded at import."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
torch = pytest.importorskip("torch", reason="the test models are exported from PyTorch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402


class Recurrent(torch.nn.Module):
    def __init__(self, kind, bidirectional, layers, with_state):
        super().__init__()
        cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN": torch.nn.RNN}[kind]
        self.kind, self.with_state = kind, with_state
        self.rnn = cls(4, 6, num_layers=layers, bidirectional=bidirectional)

    def forward(self, x, h0):
        if not self.with_state:
            return self.rnn(x)[0]
        if self.kind == "LSTM":
            return self.rnn(x, (h0, torch.tanh(h0)))[0]
        return self.rnn(x, h0)[0]


def run_both(model, feeds):
    ref = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, feeds)
    mod = from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    names = [p.name_hint for p in mod["main"].params]
    out = vm["main"](*[feeds[n] for n in names])
    got = [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)
    return mod


@pytest.mark.parametrize("kind,bidirectional,layers,with_state", [
    ("LSTM", True, 2, True), ("GRU", False, 1, True), ("RNN", True, 1, False),
    ("LSTM", False, 1, False)])
def test_torch_exported_recurrent_modules(kind, bidirectional, layers, with_state):
    torch.manual_seed(0)
    m = Recurrent(kind, bidirectional, layers, with_state).eval()
    x = torch.randn(5, 2, 4)
    h0 = torch.randn(layers * (2 if bidirectional else 1), 2, 6)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x, h0), buf, input_names=["x", "h0"], output_names=["y"],
                          opset_version=14, dynamo=False)
    model = onnx.load_from_string(buf.getvalue())
    assert {"LSTM", "GRU", "RNN"} & {n.op_type for n in model.graph.node}
    feeds = {"x": x.numpy(), "h0": h0.numpy()}
    feeds = {i.name: feeds[i.name] for i in model.graph.input if i.name in feeds}
    mod = run_both(model, feeds)
    # every step reads its direction's one transposed R (not a copy a step); W besides
    weights = {line.split("R.matmul(")[1].split(",")[1] for line in mod.script().splitlines()
               if "R.matmul(" in line}
    dirs = layers * (2 if bidirectional else 1)
    assert len(weights) == 2 * dirs


def lens_model(kind, direction):
    rng = np.random.default_rng(1)
    g, hid = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind], 3
    dirs = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array(rng.standard_normal((dirs, g * hid, 4)).astype("float32"),
                                     "W"),
             numpy_helper.from_array(rng.standard_normal((dirs, g * hid, hid))
                                     .astype("float32"), "R"),
             numpy_helper.from_array(rng.standard_normal((dirs, 2 * g * hid))
                                     .astype("float32"), "B"),
             numpy_helper.from_array(np.array([4, 1, 3], "int32"), "L")]
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, ["X", "W", "R", "B", "L"], outs, hidden_size=hid,
                            direction=direction)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, (4, 3, 4))], [helper.make_empty_tensor_value_info(o)
                                              for o in outs], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_sequence_lens_both_directions(kind):
    x = np.random.default_rng(2).standard_normal((4, 3, 4)).astype("float32")
    run_both(lens_model(kind, "bidirectional"), {"X": x})


def test_reverse_with_runtime_lengths():
    """sequence_lens a graph input: the reverse direction gathers by indices computed at run
    time (this was refused before: the reversal needed the lengths at import)."""
    model = lens_model("GRU", "reverse")
    inits = [t for t in model.graph.initializer if t.name != "L"]
    del model.graph.initializer[:]
    model.graph.initializer.extend(inits)
    model.graph.input.append(helper.make_tensor_value_info("L", TensorProto.INT32, (3,)))
    x = np.random.default_rng(4).standard_normal((4, 3, 4)).astype("float32")
    run_both(model, {"X": x, "L": np.array([2, 4, 1], "int32")})
