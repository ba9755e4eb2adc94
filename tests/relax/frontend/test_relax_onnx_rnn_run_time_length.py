"""ONNX RNN / GRU / LSTM whose sequence length (and batch) is symbolic, through
relax.frontend.onnx.from_onnx: a private recursive Relax function a direction, one step a call,
writing its output row in place (``recurrent_loop``); one ``relax.build`` run at several lengths
and batch sizes against onnxruntime (layout 1, which onnxruntime refuses, against the
static-length import); forward, reverse and bidirectional, initial states, ``sequence_lens`` a
run-time input; a symbolic input size that the weights fix (match-cast to it), and the error
when the weights are run-time inputs too."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference outputs need `onnxruntime`")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402

F = TensorProto.FLOAT
_HIDDEN, _INPUT = 5, 3


def _model(kind, direction, layout=0, lens=False, h0=False, batch="B", width=_INPUT, seq="S"):
    rng = np.random.default_rng(0)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    inits = {"W": rng.standard_normal((dirs, gates * _HIDDEN, _INPUT)).astype("float32") * 0.5,
             "R": rng.standard_normal((dirs, gates * _HIDDEN, _HIDDEN)).astype("float32") * 0.5,
             "B": rng.standard_normal((dirs, 2 * gates * _HIDDEN)).astype("float32") * 0.5}
    if h0:
        state = (dirs, batch, _HIDDEN) if layout == 0 else (batch, dirs, _HIDDEN)
        inits["h0"] = rng.standard_normal(state).astype("float32")
    x_shape = [seq, batch, width] if layout == 0 else [batch, seq, width]
    inputs = [helper.make_tensor_value_info("x", F, x_shape)]
    if lens:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [batch]))
    outs = ["y", "y_h"] + (["y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, ["x", "W", "R", "B", "lens" if lens else "",
                                   "h0" if h0 else ""], outs, hidden_size=_HIDDEN,
                            direction=direction, layout=layout)
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info(o, F, None) for o in outs],
                              initializer=[numpy_helper.from_array(v, n)
                                           for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _run(vm, mod, feed) -> list:
    out = vm["main"](*[feed[p.name_hint] for p in mod["main"].params])
    return [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]


@pytest.mark.parametrize("kind, direction, lens, h0", [
    ("LSTM", "forward", False, False), ("GRU", "bidirectional", True, False),
    ("RNN", "reverse", True, False), ("LSTM", "bidirectional", True, True),
    ("GRU", "reverse", False, True)])
def test_one_build_runs_any_length_and_batch(kind, direction, lens, h0):
    batch = 2 if h0 else "B"  # (an initializer state fixes the batch)
    model = _model(kind, direction, 0, lens, h0, batch)
    mod = from_onnx(model)
    text = mod.script()
    assert "_loop(" in text and 'R.call_inplace_packed("vm.builtin.update_row"' in text
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    sizes = ((3, 2), (8, 2), (1, 2)) if h0 else ((3, 1), (8, 4), (1, 3))
    for seq, b in sizes:
        feed = {"x": rng.standard_normal((seq, b, _INPUT)).astype("float32")}
        if lens:
            feed["lens"] = rng.integers(1, seq + 1, b).astype("int32")
        ref = session.run(None, feed)
        got = _run(vm, mod, feed)
        assert len(got) == len(ref)
        for g, r in zip(got, ref, strict=True):
            assert g.shape == r.shape
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_layout_1_against_the_static_length_import():
    model = _model("LSTM", "bidirectional", 1, lens=True)
    mod = from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    seq = 4
    feed = {"x": np.random.default_rng(3).standard_normal((3, seq, _INPUT)).astype("float32"),
            "lens": np.array([seq, 1, seq - 1], "int32")}
    static = _model("LSTM", "bidirectional", 1, lens=True, batch=3, seq=seq)
    smod = from_onnx(static)  # (unrolled; its reverse direction gathers by run-time lengths)
    assert "_loop(" not in smod.script()
    want = _run(relax.VirtualMachine(relax.build(smod, "llvm"), tvm.cpu()), smod, feed)
    for g, r in zip(_run(vm, mod, feed), want, strict=True):
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_a_symbolic_input_size_the_weights_fix_runs():
    # (this was refused, "needs a static input size": W [dirs, G*H, 3] fixes it at 3)
    model = _model("GRU", "bidirectional", lens=True, width="W")
    mod = from_onnx(model)
    assert "_loop(" in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    for seq, b in ((4, 2), (7, 3)):
        feed = {"x": rng.standard_normal((seq, b, _INPUT)).astype("float32"),
                "lens": rng.integers(1, seq + 1, b).astype("int32")}
        for g, r in zip(_run(vm, mod, feed), session.run(None, feed), strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    # an input of another size: the match-cast's check names it
    bad = {"x": np.zeros((4, 2, _INPUT + 1), "float32"), "lens": np.array([4, 4], "int32")}
    with pytest.raises(ValueError, match="match_cast"):
        _run(vm, mod, bad)


def test_a_symbolic_input_size_is_a_clear_error():
    # the weights a run-time input too: nothing fixes the size
    model = _model("GRU", "forward", width="W")
    w = [i for i in model.graph.initializer if i.name == "W"][0]
    model.graph.initializer.remove(w)
    model.graph.input.append(helper.make_tensor_value_info("W", F, [1, 3 * _HIDDEN, "W"]))
    with pytest.raises(ONNXImportError, match="needs a static input size"):
        from_onnx(model)


def test_an_lstm_step_is_the_recurrent_matmul_and_one_gate_kernel():
    """FuseOps groups the step's take of its input row and the gates of both new states (the
    cell state an output the hidden state reads) into one kernel returning both."""
    mod = relax.get_pipeline("zero")(from_onnx(_model("LSTM", "forward")))
    (loop,) = [f for gv, f in mod.functions.items() if "_loop" in gv.name_hint]
    step = loop.body.blocks[-1].bindings[-1].value.true_branch.blocks[0].bindings
    tirs = [b.value.args[0].name_hint for b in step
            if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", "") ==
            "relax.call_tir"]
    assert len(tirs) == 3 and tirs[0] == "matmul" and tirs[2].startswith("add"), tirs
    assert tirs[1].startswith("fused_take_") and tirs[1].endswith("_tanh_multiply"), tirs
