"""The unrolled LSTM / GRU (``frontend_common.onnx_rnn.unroll_direction``, shared by the PyTorch
and both ONNX importers): one input projection per layer and direction, then per step the
recurrent product and its gate arithmetic in a fixed, small number of kernels that every step
shares; compiled outputs equal PyTorch's and ONNX Runtime's; a 2,000-step sequence builds and
runs without deep recursion; stack / concatenate of many tensors."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def build(mod, params):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    return lib, graph_executor.GraphModule(lib["default"](tvm.cpu()))


def run(g, feeds):
    for name, value in feeds.items():
        g.set_input(name, value)
    g.run()
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())]


def kernel_programs(lib) -> int:
    """Distinct compiled programs of a build (kernels that share code count once)."""
    return len({k.address for k in lib.get_lib().kernels.values()})


# ------------------------------------------------------------------ PyTorch
torch_cases = [  # kind, layers, bidirectional, bias, batch_first, initial state, batch
    ("lstm", 2, False, True, True, False, 1),
    ("lstm", 2, True, True, False, True, 3),
    ("lstm", 1, True, False, True, True, 2),
    ("gru", 2, False, True, True, False, 1),
    ("gru", 2, True, True, False, True, 3),
    ("gru", 1, False, False, True, True, 2),
]


def torch_rnn(kind, layers, bidir, bias, batch_first, hidden=6, width=5):
    torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    torch.manual_seed(0)
    return cls(width, hidden, num_layers=layers, bias=bias, batch_first=batch_first,
               bidirectional=bidir).eval()


class _WithState:
    """forward(x, h0): the module run from a given initial state (LSTM: c0 = tanh(h0))."""

    def __new__(cls, rnn, kind):
        import torch

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = rnn

            def forward(self, x, h0):
                if kind == "lstm":
                    y, (h, c) = self.rnn(x, (h0, torch.tanh(h0)))
                    return y, h, c
                return self.rnn(x, h0)

        return M().eval()


def import_torch(kind, layers, bidir, bias, batch_first, state, batch, seq):
    torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")
    rnn = torch_rnn(kind, layers, bidir, bias, batch_first)
    x = torch.randn((batch, seq, 5) if batch_first else (seq, batch, 5))
    args, infos = (x,), [("x", tuple(x.shape))]
    model = rnn
    if state:
        h0 = torch.randn(layers * (2 if bidir else 1), batch, 6)
        model, args = _WithState(rnn, kind), (x, h0)
        infos.append(("h0", tuple(h0.shape)))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = model(*args)
        ts = torch.jit.trace(model, args)
    mod, params = relay.frontend.from_pytorch(ts, infos)
    ref = [ref[0], *ref[1]] if isinstance(ref[1], tuple) else list(ref)
    feeds = {n: a.numpy() for (n, _), a in zip(infos, args, strict=True)}
    return mod, params, feeds, [r.numpy() for r in ref]


@pytest.mark.parametrize("kind,layers,bidir,bias,batch_first,state,batch", torch_cases)
def test_torch_rnn_compiled_matches_eager(kind, layers, bidir, bias, batch_first, state, batch):
    mod, params, feeds, ref = import_torch(kind, layers, bidir, bias, batch_first, state,
                                           batch, seq=5)
    _, g = build(mod, params)
    got = run(g, feeds)
    assert len(got) == len(ref)
    for o, r in zip(got, ref, strict=True):
        assert o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("state", [False, True])
def test_torch_rnn_structure(kind, state):
    """Per layer and direction: one projection dense and one recurrent dense per step (none
    for the first step from a zero state), and no per-step input dense."""
    seq, layers, dirs = 6, 2, 2
    mod, *_ = import_torch(kind, layers, True, True, True, state, 2, seq)
    per = 1 + (seq if state else seq - 1)
    assert mod.astext().count("nn.dense(") == layers * dirs * per


@pytest.mark.parametrize("kind,per_step", [("lstm", 3), ("gru", 2)])
def test_torch_rnn_kernels_per_step(kind, per_step):
    """After FuseOps a step is the recurrent dense plus one (GRU) or two (LSTM: cell, output)
    elementwise kernels, and the steps share their programs: the number of distinct compiled
    kernels does not grow with the sequence."""
    counts, programs = {}, {}
    for seq in (6, 12):
        mod, params, *_ = import_torch(kind, 1, False, True, True, True, 1, seq)
        lib, g = build(mod, params)
        counts[seq] = len(g._plan["steps"])
        programs[seq] = kernel_programs(lib)
    assert counts[12] - counts[6] == 6 * per_step
    assert programs[12] == programs[6]


# ------------------------------------------------------------------ ONNX
def onnx_model(kind, seq=4, batch=2, width=3, hidden=5, direction="forward", layout=0,
               lens=None, seed=0, **attrs):
    """One LSTM / GRU node with bias and initial states; X and the states are inputs."""
    pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    g, dirs = {"GRU": 3, "LSTM": 4}[kind], 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype("float32") * 0.5, n)
             for n, s in (("W", (dirs, g * hidden, width)), ("R", (dirs, g * hidden, hidden)),
                          ("B", (dirs, 2 * g * hidden)))]
    if lens is not None:
        inits.append(numpy_helper.from_array(np.array(lens, "int32"), "L"))
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    feeds = {"X": rng.standard_normal((batch, seq, width) if layout else (seq, batch, width))
             .astype("float32"), "H0": rng.standard_normal(state).astype("float32")}
    names = ["X", "W", "R", "B", "L" if lens is not None else "", "H0"]
    if kind == "LSTM":
        feeds["C0"] = rng.standard_normal(state).astype("float32")
        names.append("C0")
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, names, outs, hidden_size=hidden, direction=direction,
                            **({"layout": layout} if layout else {}), **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
                      for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), feeds


def ort_outputs(model, feeds):
    ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


onnx_cases = [  # kind, direction, attributes
    ("LSTM", "forward", {}),
    ("LSTM", "bidirectional", {}),
    ("LSTM", "reverse", {"lens": [4, 2]}),
    ("GRU", "forward", {}),
    ("GRU", "bidirectional", {"linear_before_reset": 1}),
    ("GRU", "reverse", {"linear_before_reset": 1}),
    ("GRU", "bidirectional", {"lens": [3, 4]}),
]


@pytest.mark.parametrize("kind,direction,attrs", onnx_cases)
def test_onnx_rnn_compiled_matches_onnxruntime(kind, direction, attrs):
    model, feeds = onnx_model(kind, direction=direction, **attrs)
    ref = ort_outputs(model, feeds)
    mod, params = relay.frontend.from_onnx(model)
    _, g = build(mod, params)
    got = run(g, feeds)
    for o, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_onnx_rnn_batch_first_layout_compiled(kind):
    # ONNX Runtime rejects layout=1: the same weights in layout 0, transposed
    model, feeds = onnx_model(kind, layout=1, direction="bidirectional")
    model0, _ = onnx_model(kind, layout=0, direction="bidirectional")
    ref = ort_outputs(model0, {k: v.transpose(1, 0, 2) for k, v in feeds.items()})
    mod, params = relay.frontend.from_onnx(model)
    _, g = build(mod, params)
    got = run(g, feeds)
    np.testing.assert_allclose(got[0], ref[0].transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)
    for o, r in zip(got[1:], ref[1:], strict=True):
        np.testing.assert_allclose(o, r.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_onnx_rnn_structure(kind):
    """Per direction one projection dense, then one recurrent dense per step (GRU's default
    linear_before_reset=0 needs two: z and r first, then (r * h) . R_h)."""
    seq = 5
    model, _ = onnx_model(kind, seq=seq, direction="bidirectional")
    mod, _ = relay.frontend.from_onnx(model)
    per_step = 1 if kind == "LSTM" else 2
    assert mod.astext().count("nn.dense(") == 2 * (1 + per_step * seq)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_torch_exported_rnn_through_relax(kind):
    """A torch module exported to ONNX, imported by the Relax frontend, against ORT."""
    torch = pytest.importorskip("torch", reason="the test models are exported from PyTorch")
    onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
    from minitvm import relax
    from minitvm.relax.frontend.onnx import from_onnx

    rnn = torch_rnn(kind.lower(), 2, False, True, True)
    x = torch.randn(2, 4, 5)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(rnn, (x,), buf, input_names=["x"], opset_version=14, dynamo=False)
    model = onnx.load_from_string(buf.getvalue())
    feeds = {"x": x.numpy()}
    ref = ort_outputs(model, feeds)
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    out = vm["main"](feeds["x"])
    got = [o.numpy() for o in out] if isinstance(out, list | tuple) else [out.numpy()]
    for o, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ long sequences
def test_two_thousand_steps_build_and_run():
    """2,000 unrolled steps: import, optimization, fusion, lowering and the executor stay
    iterative (no recursion limit), and the outputs match eager PyTorch."""
    torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")
    torch.manual_seed(0)
    rnn = torch.nn.GRU(3, 4, batch_first=True).eval()
    x = torch.randn(1, 2000, 3)
    with torch.no_grad():
        y, h = rnn(x)
        ts = torch.jit.trace(rnn, (x,))
    mod, params = relay.frontend.from_pytorch(ts, [("x", (1, 2000, 3))])
    _, g = build(mod, params)
    got = run(g, {"x": x.numpy()})
    np.testing.assert_allclose(got[0], y.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], h.numpy(), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ stack / concatenate
@pytest.mark.parametrize("op", ["stack0", "stack1", "concat0", "concat1"])
def test_stack_and_concatenate_of_many_fused_inputs(op):
    """Each output element reads the one input it comes from (a balanced if_then_else), with
    its producer fused in; 300 inputs lower without deep recursion."""
    n = 300
    rng = np.random.default_rng(0)
    xs = [relay.var(f"x{i}", shape=(2, 3)) for i in range(n)]
    vals = {f"x{i}": rng.standard_normal((2, 3)).astype("float32") for i in range(n)}
    ys = [relay.sigmoid(v) for v in xs]
    axis = int(op[-1])
    y = relay.stack(ys, axis) if op.startswith("stack") else relay.concatenate(ys, axis)
    mod = tvm.IRModule.from_expr(relay.Function(xs, y))
    _, g = build(mod, {})
    got = run(g, vals)[0]
    sig = [1 / (1 + np.exp(-vals[f"x{i}"])) for i in range(n)]
    want = np.stack(sig, axis) if op.startswith("stack") else np.concatenate(sig, axis)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
