"""ONNX RNN / GRU / LSTM whose sequence length is known at run time only (``relay.Any()`` in
``shape=``): imported as a loop (``recurrent.recurrent_loop``: a recursive function taking one
step a call), compiled once by ``relay.vm.compile`` and run at two sequence lengths against
onnxruntime (layout 1, which onnxruntime refuses, against the static-length import); forward,
reverse and bidirectional, initial states and ``sequence_lens``; a run-time batch as well, at
several lengths and batch sizes from one build; the error for a run-time input size."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference outputs need `onnxruntime`")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend.common import ImportError_  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F = TensorProto.FLOAT
_HIDDEN, _INPUT, _BATCH = 5, 3, 2


def _model(kind: str, direction: str, layout: int, lens: bool, h0: bool, seed: int = 0,
           batch=_BATCH):
    rng = np.random.default_rng(seed)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    inits = {"W": rng.standard_normal((dirs, gates * _HIDDEN, _INPUT)).astype("float32") * 0.5,
             "R": rng.standard_normal((dirs, gates * _HIDDEN, _HIDDEN)).astype("float32") * 0.5,
             "B": rng.standard_normal((dirs, 2 * gates * _HIDDEN)).astype("float32") * 0.5}
    if h0:
        state = (dirs, _BATCH, _HIDDEN) if layout == 0 else (_BATCH, dirs, _HIDDEN)
        inits["h0"] = rng.standard_normal(state).astype("float32")
    x_shape = ["S", batch, _INPUT] if layout == 0 else [batch, "S", _INPUT]
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


def _shapes(layout: int, lens: bool, seq) -> dict:
    shape = {"x": [seq, _BATCH, _INPUT] if layout == 0 else [_BATCH, seq, _INPUT]}
    return {**shape, "lens": [_BATCH]} if lens else shape


def _outputs(result) -> list[np.ndarray]:
    return [result[i].numpy() for i in range(len(result))]


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction, layout, lens, h0", [
    ("forward", 0, False, True), ("bidirectional", 0, True, False), ("reverse", 1, True, True),
], ids=["forward-h0", "bidirectional-lens", "reverse-layout1-lens-h0"])
def test_one_vm_build_runs_two_sequence_lengths(kind, direction, layout, lens, h0):
    model = _model(kind, direction, layout, lens, h0)
    mod, params = relay.frontend.from_onnx(model, shape=_shapes(layout, lens, relay.Any()))
    assert "while_loop" in mod.astext()  # (a loop, not steps unrolled)
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm", params=params), tvm.cpu())
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]) if layout == 0 else None
    rng = np.random.default_rng(1)
    for seq in (3, 7):
        shape = (seq, _BATCH, _INPUT) if layout == 0 else (_BATCH, seq, _INPUT)
        feed = {"x": rng.standard_normal(shape).astype("float32")}
        if lens:
            feed["lens"] = np.array([seq, seq - 2], "int32")
        if session is not None:
            ref = session.run(None, feed)
        else:  # (onnxruntime runs no layout 1 recurrence: the static-length import instead)
            smod, sparams = relay.frontend.from_onnx(model, shape=_shapes(layout, lens, seq))
            run = relay.create_executor("graph", mod=smod, target="llvm").evaluate()
            ref = _outputs(run(*feed.values(), **sparams))
        out = _outputs(vm.run(*feed.values()))
        assert len(out) == len(ref)
        for o, r in zip(out, ref, strict=True):
            assert o.shape == r.shape
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind, direction, lens", [
    ("LSTM", "forward", False), ("GRU", "bidirectional", True), ("RNN", "reverse", True)])
def test_one_vm_build_runs_any_length_and_batch(kind, direction, lens):
    model = _model(kind, direction, 0, lens, False, batch="B")
    shape = {"x": [relay.Any(), relay.Any(), _INPUT]}
    if lens:
        shape["lens"] = [relay.Any()]
    mod, params = relay.frontend.from_onnx(model, shape=shape)
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm", params=params), tvm.cpu())
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    for seq, batch in ((3, 1), (7, 4), (1, 3), (5, 2)):
        feed = {"x": rng.standard_normal((seq, batch, _INPUT)).astype("float32")}
        if lens:
            feed["lens"] = rng.integers(1, seq + 1, batch).astype("int32")
        ref = session.run(None, feed)
        out = _outputs(vm.run(*feed.values()))
        for o, r in zip(out, ref, strict=True):
            assert o.shape == r.shape
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)


def test_the_step_writes_its_row_in_place():
    """The loop's output is written by ``vm.update_row`` (the VM's ``UpdateRow``), not by a
    select over the whole result; the projection is a loop variable, computed once."""
    model = _model("LSTM", "forward", 0, False, False)
    mod, params = relay.frontend.from_onnx(model, shape=_shapes(0, False, relay.Any()))
    text = mod.astext()
    assert "vm.update_row" in text and "where" not in text
    exe = relay.vm.compile(mod, "llvm", params=params)
    assert "update_row" in exe.bytecode


def test_a_run_time_input_size_the_weights_fix_is_checked_on_entry():
    # (refused before: the input's type now says the size W fixes, which the VM checks)
    model = _model("LSTM", "bidirectional", 0, False, False, batch="B")
    mod, params = relay.frontend.from_onnx(
        model, shape={"x": [relay.Any(), relay.Any(), relay.Any()]})
    assert [int(d) if not isinstance(d, relay.Any) else None
            for d in mod["main"].params[0].checked_type.shape] == [None, None, _INPUT]
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm", params=params), tvm.cpu())
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    for seq, batch in ((4, 2), (6, 3)):
        x = rng.standard_normal((seq, batch, _INPUT)).astype("float32")
        for got, want in zip(_outputs(vm.run(x)), session.run(None, {"x": x}), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for width in (_INPUT + 1, _INPUT - 1):  # (a wrong size read silently before the refusal)
        x = rng.standard_normal((4, 2, width)).astype("float32")
        with pytest.raises(ValueError, match=f"argument 'x': expected Tensor\\[\\(\\?, \\?, "
                                             f"{_INPUT}\\), float32\\], got shape \\(4, 2, "
                                             f"{width}\\)"):
            vm.run(x)


def test_a_run_time_input_size_of_a_computed_tensor_is_a_clear_error():
    model = _model("LSTM", "forward", 0, False, False)
    graph = model.graph
    graph.node.insert(0, helper.make_node("Relu", ["x"], ["xr"]))
    graph.node[1].input[0] = "xr"
    with pytest.raises(ImportError_, match="static input size, got \\?; its weights W fix it at "
                                           f"{_INPUT}: pass it in shape="):
        relay.frontend.from_onnx(model, shape={"x": [relay.Any(), relay.Any(), relay.Any()]})
