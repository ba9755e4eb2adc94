"""ONNX graphs of the third round of new-user architectures through the Relax importer, with a
symbolic batch axis: recurrent nodes (a CRNN's bidirectional LSTM, a seq2seq GRU) unrolled over a
static sequence with a symbolic batch (or looped over a symbolic one). Checked against ONNX Runtime at several sizes of one
build."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402

F = TensorProto.FLOAT
_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _model(nodes, inputs, outputs, inits=None):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run_all(model, feeds, reference=None, to_ref=None, from_ref=None):
    """Build once; every output of every feed against ONNX Runtime (running ``reference``, with
    the feeds mapped by ``to_ref`` and the outputs by ``from_ref``, where given)."""
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    sess = ort.InferenceSession((reference or model).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    names = [i.name for i in model.graph.input if i.name not in
             {t.name for t in model.graph.initializer}]
    for feed in feeds:
        got = vm["main"](*[tvm.nd.array(feed[n]) for n in names])
        got = [got] if hasattr(got, "numpy") else list(got)
        want = sess.run(None, to_ref(feed) if to_ref else feed)
        want = from_ref(want) if from_ref else want
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5)


def _recurrent(kind, hidden=6, width=4, seq=5, direction="forward", layout=0, states=False,
               lens=False):
    """One RNN / GRU / LSTM node whose batch dim is the symbolic ``n``."""
    dirs = 2 if direction == "bidirectional" else 1
    g = _GATES[kind] * hidden
    rng = np.random.default_rng(0)
    inits = {"w": rng.standard_normal((dirs, g, width)).astype("float32") * 0.5,
             "r": rng.standard_normal((dirs, g, hidden)).astype("float32") * 0.5,
             "b": rng.standard_normal((dirs, 2 * g)).astype("float32") * 0.1}
    xdims = ["n", seq, width] if layout else [seq, "n", width]
    sdims = ["n", dirs, hidden] if layout else [dirs, "n", hidden]
    inputs = [helper.make_tensor_value_info("x", F, xdims)]
    names = ["x", "w", "r", "b", "", ""]
    if lens:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, ["n"]))
        names[4] = "lens"
    if states:
        inputs.append(helper.make_tensor_value_info("h0", F, sdims))
        names[5] = "h0"
        if kind == "LSTM":
            inputs.append(helper.make_tensor_value_info("c0", F, sdims))
            names.append("c0")
    while names[-1] == "":
        names.pop()
    outs = ["y", "y_h"] + (["y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, names, outs, hidden_size=hidden, direction=direction,
                            layout=layout)
    ydims = ["n", seq, dirs, hidden] if layout else [seq, dirs, "n", hidden]
    outputs = [helper.make_tensor_value_info("y", F, ydims)] + [
        helper.make_tensor_value_info(o, F, sdims) for o in outs[1:]]
    return _model([node], inputs, outputs, inits), xdims, sdims


def _feeds(xdims, sdims, batches, states=False, kind="LSTM", lens=False):
    out = []
    for n in batches:
        rng = np.random.default_rng(n)
        feed = {"x": rng.standard_normal([n if d == "n" else d for d in xdims]).astype("float32")}
        if lens:
            feed["lens"] = np.full(n, xdims[1] if xdims[0] == "n" else xdims[0], "int32")
        if states:
            shape = [n if d == "n" else d for d in sdims]
            feed["h0"] = rng.standard_normal(shape).astype("float32")
            if kind == "LSTM":
                feed["c0"] = rng.standard_normal(shape).astype("float32")
        out.append(feed)
    return out


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_node_with_a_symbolic_batch(kind, direction):
    """No initial states: the zero states of Y_h / Y_c take the symbolic batch."""
    model, xd, sd = _recurrent(kind, direction=direction)
    _run_all(model, _feeds(xd, sd, (1, 3)))


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_recurrent_node_batch_major_with_states_and_symbolic_batch(kind):
    """ONNX Runtime has no batch-major (layout 1) kernels: its reference is the seq-major node
    on transposed inputs."""
    model, xd, sd = _recurrent(kind, direction="bidirectional", layout=1, states=True)
    ref, _, _ = _recurrent(kind, direction="bidirectional", layout=0, states=True)

    def to_ref(feed):
        return {k: np.ascontiguousarray(v.transpose(1, 0, 2)) for k, v in feed.items()}

    def from_ref(outs):
        return [outs[0].transpose(2, 0, 1, 3)] + [v.transpose(1, 0, 2) for v in outs[1:]]

    _run_all(model, _feeds(xd, sd, (2, 4), states=True, kind=kind), ref, to_ref, from_ref)


def test_recurrent_node_over_a_symbolic_sequence_length():
    """A symbolic length runs as a loop (``recurrent_loop``), where it was refused: the same
    graph at two lengths of one build."""
    model = _model(
        [helper.make_node("GRU", ["x", "w", "r"], ["y"], hidden_size=3)],
        [helper.make_tensor_value_info("x", F, ["t", 2, 4])],
        [helper.make_tensor_value_info("y", F, ["t", 1, 2, 3])],
        {"w": np.ones((1, 9, 4), "float32") * 0.1, "r": np.ones((1, 9, 3), "float32") * 0.1})
    rng = np.random.default_rng(5)
    _run_all(model, [{"x": rng.standard_normal((t, 2, 4)).astype("float32")} for t in (2, 6)])


def test_reverse_with_runtime_lengths_and_symbolic_batch():
    """Run-time sequence_lens in a reverse direction: a gather by run-time indices, where it
    was refused."""
    model, xd, sd = _recurrent("LSTM", direction="reverse", lens=True)
    feeds = _feeds(xd, sd, (1, 3), lens=True)
    feeds[1]["lens"] = np.array([5, 2, 1], "int32")
    _run_all(model, feeds)


def test_exported_bidirectional_lstm_and_gru_with_dynamic_batch():
    """torch's export of a CRNN-style (seq-major, bidirectional, 2 layers) LSTM and a
    batch-first GRU given an initial state, each at two batch sizes of one build."""
    torch = pytest.importorskip("torch")
    import io
    import warnings

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 16, 2, bidirectional=True).eval()
    gru = torch.nn.GRU(8, 16, batch_first=True).eval()
    cases = [(lstm, (torch.randn(5, 2, 8),), {"x": {1: "b"}}, ["x"]),
             (gru, (torch.randn(2, 5, 8), torch.randn(1, 2, 16)),
              {"x": {0: "b"}, "h0": {1: "b"}}, ["x", "h0"])]
    for m, args, axes, names in cases:
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(m, args, buf, dynamo=False, opset_version=17, input_names=names,
                              dynamic_axes=axes)
        vm = relax.VirtualMachine(relax.build(from_onnx(onnx.load_from_string(buf.getvalue())),
                                              "llvm"), tvm.cpu())
        for b in (2, 3):
            feed = [a.repeat_interleave(2, dim=list(ax)[0])[
                (slice(None),) * list(ax)[0] + (slice(0, b),)] for a, ax in
                zip(args, axes.values(), strict=True)]
            with torch.no_grad():
                want = m(*feed)
            got = vm["main"](*[tvm.nd.array(a.numpy()) for a in feed])
            np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-5, atol=1e-5)
            want_h = want[1][0] if isinstance(want[1], tuple) else want[1]
            np.testing.assert_allclose(got[1].numpy(), want_h.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("known", [True, False])
def test_tile_by_a_symbolic_repeat(known):
    """DETR's ``query.unsqueeze(0).repeat(batch, 1, 1)``: the repeats come from the input's
    shape, the tiled tensor is an initializer (known) or computed from an input."""
    q = np.arange(15, dtype="float32").reshape(1, 3, 5)
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=0, end=1),
             helper.make_node("Concat", ["s", "ones"], ["reps"], axis=0)]
    if known:
        nodes.append(helper.make_node("Tile", ["q", "reps"], ["y"]))
    else:
        nodes += [helper.make_node("ReduceMean", ["x"], ["m"], keepdims=1),
                  helper.make_node("Slice", ["m", "zero", "one"], ["m1"]),
                  helper.make_node("Unsqueeze", ["m1", "one"], ["m2"]),
                  helper.make_node("Add", ["q", "m2"], ["qx"]),
                  helper.make_node("Tile", ["qx", "reps"], ["y"])]
    inits = {"q": q, "ones": np.array([1, 1], "int64"), "zero": np.array([0], "int64"),
             "one": np.array([1], "int64")}
    model = _model(nodes, [helper.make_tensor_value_info("x", F, ["n", 4])],
                   [helper.make_tensor_value_info("y", F, ["n", 3, 5])], inits)
    _run_all(model, [{"x": np.random.default_rng(n).standard_normal((n, 4)).astype("float32")}
                     for n in (1, 3)])


def _opset(model, version):
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", version))
    return model


@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid_with_a_symbolic_batch(align):
    nodes = [helper.make_node("Shape", ["theta"], ["n"], start=0, end=1),
             helper.make_node("Concat", ["n", "chw"], ["size"], axis=0),
             helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)]
    model = _opset(_model(nodes, [helper.make_tensor_value_info("theta", F, ["n", 2, 3])],
                          [helper.make_tensor_value_info("grid", F, ["n", 5, 7, 2])],
                          {"chw": np.array([3, 5, 7], "int64")}), 20)
    _run_all(model, [{"theta": np.random.default_rng(n).standard_normal((n, 2, 3))
                      .astype("float32")} for n in (1, 3)])


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_with_a_symbolic_batch(mode, padding, align):
    """Grid points reach past the borders (|g| up to 1.3) so the padding matters."""
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding,
                            align_corners=align)
    model = _opset(_model([node], [helper.make_tensor_value_info("x", F, ["n", 3, 7, 8]),
                                   helper.make_tensor_value_info("g", F, ["n", 6, 9, 2])],
                          [helper.make_tensor_value_info("y", F, ["n", 3, 6, 9])]), 20)
    feeds = []
    for n in (1, 2):
        rng = np.random.default_rng(n)
        feeds.append({"x": rng.standard_normal((n, 3, 7, 8)).astype("float32"),
                      "g": rng.uniform(-1.3, 1.3, (n, 6, 9, 2)).astype("float32")})
    _run_all(model, feeds)


def test_grid_sample_opset16_mode_name():
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode="bilinear")
    model = _opset(_model([node], [helper.make_tensor_value_info("x", F, [1, 2, 4, 5]),
                                   helper.make_tensor_value_info("g", F, [1, 3, 3, 2])],
                          [helper.make_tensor_value_info("y", F, [1, 2, 3, 3])]), 16)
    rng = np.random.default_rng(0)
    _run_all(model, [{"x": rng.standard_normal((1, 2, 4, 5)).astype("float32"),
                      "g": rng.uniform(-1, 1, (1, 3, 3, 2)).astype("float32")}])


def test_grid_sample_unsupported_mode_is_refused():
    """Cubic sampling of a volume (ONNX defines it; ORT has no kernel for it either) is refused
    with the mode and the rank named."""
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode="cubic")
    model = _opset(_model([node], [helper.make_tensor_value_info("x", F, [1, 2, 4, 5, 3]),
                                   helper.make_tensor_value_info("g", F, [1, 3, 3, 2, 3])],
                          [helper.make_tensor_value_info("y", F, [1, 2, 3, 3, 2])]), 20)
    with pytest.raises(Exception, match="cubic sampling of a 5-D input is not supported"):
        from_onnx(model)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements_with_a_known_index_becomes_a_gather(reduction, axis):
    """A GCN's ``zeros.scatter_add(1, dst.expand_as(msg), msg)``: the index is an initializer
    broadcast off the axis, so the importer emits a take and a reduction, no scatter."""
    rng = np.random.default_rng(axis)
    shape, n = [4, 5], 9
    ushape = list(shape)
    ushape[axis] = n
    idx1 = rng.integers(-shape[axis], shape[axis], n)
    if reduction == "none":  # duplicates have no defined order in ONNX: a permutation
        idx1 = rng.permutation(shape[axis])[: min(n, shape[axis])]
        ushape[axis] = n = idx1.shape[0]
    bshape = [1, 1]
    bshape[axis] = n
    index = np.ascontiguousarray(np.broadcast_to(idx1.reshape(bshape), ushape)).astype("int64")
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis,
                            reduction=reduction)
    model = _model([node], [helper.make_tensor_value_info("x", F, shape),
                            helper.make_tensor_value_info("u", F, ushape)],
                   [helper.make_tensor_value_info("y", F, shape)], {"i": index})
    model.opset_import[0].version = 18
    assert "scatter_elements" not in str(from_onnx(model))
    _run_all(model, [{"x": rng.standard_normal(shape).astype("float32"),
                      "u": rng.standard_normal(ushape).astype("float32")}])
