"""ONNX sequences and optionals, run-time Loops and Ifs, and the operator gaps closed with them
(3-D ConvTranspose, Pad 'wrap', antialiased Resize, LpNormalization of a zero vector,
out-of-range BitShift, seeded training-mode Dropout) through relay.frontend.from_onnx,
against ONNX Runtime (or the ONNX reference implementation where ORT differs)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from minitvm import relay, transform  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402
from minitvm.relay.frontend.onnx import NeedsConstantInput  # noqa: E402
from minitvm.relay.frontend.onnx_backend import MinitvmBackend  # noqa: E402
from minitvm.testing.onnx_graphs import assert_same, model, ort_run, seq_vi, vi  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
rng = np.random.default_rng(7)


def check(m, feeds, kind="debug"):
    """minitvm's ONNX backend (import, run) against ORT on the same inputs."""
    got = MinitvmBackend.prepare(m, kind=kind).run(feeds)
    assert_same(list(got), ort_run(m, feeds))


# ------------------------------------------------------------------------------- sequences
def test_sequence_ops_resolve_at_import():
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s0"]),
        helper.make_node("SequenceInsert", ["s0", "c", "zero"], ["s1"]),  # at the front
        helper.make_node("SequenceErase", ["s1", "minus1"], ["s2"]),  # drop b
        helper.make_node("SequenceLength", ["s2"], ["n"]),
        helper.make_node("SequenceAt", ["s2", "one"], ["second"]),
        helper.make_node("ConcatFromSequence", ["s2"], ["cat"], axis=1),
        helper.make_node("ConcatFromSequence", ["s2"], ["stacked"], axis=-1, new_axis=1),
    ]
    m = model(nodes, [vi("a", F, (2, 3)), vi("b", F, (2, 3)), vi("c", F, (2, 3))],
              ["n", "second", "cat", "stacked"],
              {"zero": np.array(0, "int64"), "one": np.array(1, "int64"),
               "minus1": np.array(-1, "int64")})
    feeds = {k: rng.standard_normal((2, 3)).astype("float32") for k in "abc"}
    check(m, feeds)
    check(m, feeds, kind="graph")  # all static: compiled through relay.build too
    mod, _ = relay.frontend.from_onnx(m)
    # sequence ops leave no trace: the program is the concatenates of the tensors
    assert "concatenate" in mod.astext() and "SequenceAt" not in mod.astext()


@pytest.mark.parametrize("attrs,split", [({"axis": 1}, np.array([1, 3], "int64")),
                                         ({"axis": 1}, np.array(3, "int64")),
                                         ({"axis": 0, "keepdims": 0}, None)])
def test_split_to_sequence_then_concat(attrs, split):
    ins = ["x"] if split is None else ["x", "split"]
    nodes = [helper.make_node("SplitToSequence", ins, ["s"], **attrs),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=1)
             if split is None else
             helper.make_node("SequenceAt", ["s", "last"], ["y"])]
    inits = {"last": np.array(-1, "int64")}
    if split is not None:
        inits["split"] = split
    m = model(nodes, [vi("x", F, (3, 4))], ["y"], inits)
    check(m, {"x": rng.standard_normal((3, 4)).astype("float32")})


def test_sequence_output_and_sequence_input():
    """A sequence graph output comes back as a list; a sequence graph input is one Relay
    parameter per element (shapes given as a list)."""
    nodes = [helper.make_node("SequenceInsert", ["s", "x"], ["out"])]
    m = model(nodes, [seq_vi("s"), vi("x", F, (3,))], [seq_vi("out")])
    feeds = {"s": [rng.standard_normal(2).astype("float32"),
                   rng.standard_normal(4).astype("float32")],
             "x": rng.standard_normal(3).astype("float32")}
    got = MinitvmBackend.prepare(m, kind="debug").run(feeds)
    assert isinstance(got[0], list) and [g.shape for g in got[0]] == [(2,), (4,), (3,)]
    assert_same(list(got), ort_run(m, feeds))
    mod, _ = relay.frontend.from_onnx(m, shape={"s": [(2,), (4,)], "x": (3,)})
    assert [p.name_hint for p in mod["main"].params] == ["s_0", "s_1", "x"]
    with pytest.raises(ImportError_, match="'s' is sequence-typed: pass shape="):
        relay.frontend.from_onnx(m, shape={"x": (3,)})


def test_sequence_output_from_the_compiled_graph_executor():
    """relay.build flattens a tuple output; the backend nests it back as the model's types."""
    nodes = [helper.make_node("SplitToSequence", ["x"], ["s"], axis=0),
             helper.make_node("Relu", ["x"], ["r"])]
    m = model(nodes, [vi("x", F, (3, 2))], [seq_vi("s"), "r"])
    check(m, {"x": rng.standard_normal((3, 2)).astype("float32")}, kind="graph")


def test_sequence_map_converts_the_body_per_element():
    body = helper.make_graph([helper.make_node("Mul", ["e", "t"], ["o"])], "body",
                             [vi("e", F, None), vi("t", F, None)], [vi("o", F, None)])
    nodes = [helper.make_node("SplitToSequence", ["x"], ["s"], axis=0),
             helper.make_node("SequenceMap", ["s", "w"], ["m"], body=body),
             helper.make_node("ConcatFromSequence", ["m"], ["y"], axis=0)]
    m = model(nodes, [vi("x", F, (3, 4)), vi("w", F, (1, 4))], ["y"])
    check(m, {"x": rng.standard_normal((3, 4)).astype("float32"),
              "w": rng.standard_normal((1, 4)).astype("float32")})


def test_optionals():
    nodes = [helper.make_node("Optional", ["x"], ["o"]),
             helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("OptionalGetElement", ["o"], ["v"]),
             helper.make_node("Optional", [], ["none"],
                              type=helper.make_tensor_type_proto(F, (2,))),
             helper.make_node("OptionalHasElement", ["none"], ["has_none"]),
             helper.make_node("Neg", ["v"], ["y"])]
    m = model(nodes, [vi("x", F, (2,))], ["has", "has_none", "y"])
    check(m, {"x": rng.standard_normal(2).astype("float32")})
    empty = model([helper.make_node("Optional", [], ["none"],
                                    type=helper.make_tensor_type_proto(F, (2,))),
                   helper.make_node("OptionalGetElement", ["none"], ["y"])], [], ["y"])
    with pytest.raises(ImportError_, match="OptionalGetElement.*the optional input is empty"):
        relay.frontend.from_onnx(empty)


def test_a_sequence_fed_to_a_tensor_op_is_a_clear_error():
    nodes = [helper.make_node("SequenceConstruct", ["x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"], name="act")]
    m = model(nodes, [vi("x", F, (2,))], ["y"])
    with pytest.raises(ImportError_, match="Relu node 'act': input 's' is a sequence, but "
                                           "Relu takes tensors"):
        relay.frontend.from_onnx(m)


def test_if_with_sequence_branches_and_a_run_time_condition():
    def branch(name, scale):
        return helper.make_graph(
            [helper.make_node("Mul", ["x", name + "k"], [name + "y"]),
             helper.make_node("SequenceConstruct", [name + "y", "x"], [name + "s"])],
            name, [], [seq_vi(name + "s")],
            initializer=[numpy_helper.from_array(np.array(scale, "float32"), name + "k")])

    node = helper.make_node("If", ["c"], ["s"], then_branch=branch("t", 2.0),
                            else_branch=branch("e", -1.0))
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["c"]), node,
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)]
    m = model(nodes, [vi("x", F, (3,))], ["y"], {"zero": np.array(0.0, "float32")})
    mod, _ = relay.frontend.from_onnx(m)
    assert "if (" in mod.astext()  # one Relay If over the flattened sequence
    x = rng.standard_normal(3).astype("float32")
    for v in (np.abs(x), -np.abs(x)):
        check(m, {"x": v})
        check(m, {"x": v}, kind="graph")  # the If runs on the Relay VM


# ------------------------------------------------------------------------ run-time loops
def _range_loop_model():
    """Range written as a Loop whose trip count is computed from the data (as ONNX's Range
    function body does): ceil((limit - start) / delta) iterations."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["prev", "delta"], ["cur"]),
         helper.make_node("Identity", ["prev"], ["scan"])],
        "body", [vi("i", I64, ()), vi("c_in", B, ()), vi("prev", F, ())],
        [vi("c_out", B, ()), vi("cur", F, ()), vi("scan", F, ())])
    nodes = [helper.make_node("Sub", ["limit", "start"], ["d"]),
             helper.make_node("Div", ["d", "delta"], ["q"]),
             helper.make_node("Ceil", ["q"], ["qc"]),
             helper.make_node("Relu", ["qc"], ["qr"]),
             helper.make_node("Cast", ["qr"], ["M"], to=I64),
             helper.make_node("Loop", ["M", "", "start"], ["last", "values"], body=body)]
    return model(nodes, [vi("start", F, ()), vi("limit", F, ()), vi("delta", F, ())],
                 ["last", "values"])


def test_loop_with_a_run_time_trip_count_is_a_recursive_function():
    m = _range_loop_model()
    mod, _ = relay.frontend.from_onnx(m)
    text = mod.astext()
    assert "%while_loop" in text and "Tensor[(?), float32]" in text
    run = relay.create_executor("debug", mod=mod).evaluate()
    for start, limit, delta in ((1.0, 5.0, 1.5), (10.0, 2.0, -3.0), (0.0, -1.0, 1.0)):
        feeds = {"start": np.array(start, "float32"), "limit": np.array(limit, "float32"),
                 "delta": np.array(delta, "float32")}
        out = run(*feeds.values())  # one import serves every trip count
        assert_same([out[0].numpy(), out[1].numpy()], ort_run(m, feeds))
        # compiled: the backend picks the Relay VM (recursion, a dynamic scan length)
        check(m, feeds, kind="graph")


def test_loop_with_a_run_time_condition():
    """A while loop: double x until its sum passes a limit (the condition is data)."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_in", "two"], ["x_out"]),
         helper.make_node("ReduceSum", ["x_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "lim"], ["c_out"]),
         helper.make_node("Identity", ["s"], ["scan"])],
        "body", [vi("i", I64, ()), vi("c_in", B, ()), vi("x_in", F, (3,))],
        [vi("c_out", B, ()), vi("x_out", F, (3,)), vi("scan", F, ())],
        initializer=[numpy_helper.from_array(np.array(2.0, "float32"), "two")])
    nodes = [helper.make_node("Loop", ["", "c0", "x"], ["y", "sums"], body=body)]
    m = model(nodes, [vi("x", F, (3,)), vi("lim", F, ())], ["y", "sums"],
              {"c0": np.array(True)})
    for lim in (10.0, 1000.0):
        check(m, {"x": np.array([0.5, 1.0, 0.25], "float32"),
                  "lim": np.array(lim, "float32")})


def test_run_time_loop_that_cannot_be_expressed_is_a_clear_error():
    # the body carries a sequence and the trip count is computed: neither unrolls nor runs
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("SequenceInsert", ["s_in", "x"], ["s_out"])],
        "body", [vi("i", I64, ()), vi("c_in", B, ()), seq_vi("s_in")],
        [vi("c_out", B, ()), seq_vi("s_out")])
    nodes = [helper.make_node("ReduceSum", ["x"], ["t"], keepdims=0),
             helper.make_node("Cast", ["t"], ["M"], to=I64),
             helper.make_node("SequenceEmpty", [], ["s0"]),
             helper.make_node("Loop", ["M", "", "s0"], ["s"], body=body, name="grow"),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)]
    m = model(nodes, [vi("x", F, (2,))], ["y"])
    with pytest.raises(ImportError_, match="Loop node 'grow'.*only known at run time.*"
                                           "loop-carried value 0 is a sequence"):
        relay.frontend.from_onnx(m)
    # a trip count that is a graph input can still be bound and unrolled
    m2 = model(nodes[2:], [vi("M", I64, ()), vi("x", F, (2,))], ["y"])
    with pytest.raises(NeedsConstantInput, match="trip count"):
        relay.frontend.from_onnx(m2)
    check(m2, {"M": np.array(3, "int64"), "x": rng.standard_normal(2).astype("float32")})


# ----------------------------------------------------------------------- operator gaps
def test_conv_transpose_3d_compiled():
    x = rng.standard_normal((1, 4, 3, 4, 5)).astype("float32")
    w = rng.standard_normal((4, 3, 2, 3, 2)).astype("float32")
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 1, 2],
                            pads=[1, 0, 0, 0, 1, 1], group=2, dilations=[1, 2, 1])
    m = model([node], [vi("x", F, x.shape)], ["y"],
              {"w": w, "b": rng.standard_normal(6).astype("float32")})
    mod, params = relay.frontend.from_onnx(m)
    assert "nn.conv3d_transpose" in mod.astext()
    check(m, {"x": x})
    check(m, {"x": x}, kind="graph")


@pytest.mark.parametrize("pads", [[1, 2, 3, 0], [0, -1, 2, 5]])
def test_pad_wrap(pads):
    m = model([helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")], [vi("x", F, (3, 4))],
              ["y"], {"p": np.array(pads, "int64")})
    x = rng.standard_normal((3, 4)).astype("float32")
    ref = np.pad(x[:, 1:] if pads[1] < 0 else x,
                 [(pads[0], pads[2]), (max(pads[1], 0), pads[3])], mode="wrap")
    got = MinitvmBackend.prepare(m, kind="graph").run({"x": x})[0]
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("mode,scales", [("linear", [1.0, 1.0, 0.6, 0.45]),
                                         ("cubic", [1.0, 1.0, 0.5, 0.8]),
                                         ("linear", [1.0, 1.0, 1.5, 0.7])])
def test_resize_antialias(mode, scales):
    m = model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode, antialias=1)],
              [vi("x", F, (1, 2, 9, 11))], ["y"], {"s": np.array(scales, "float32")})
    check(m, {"x": rng.standard_normal((1, 2, 9, 11)).astype("float32")})


@pytest.mark.parametrize("scales,materialized", [([1.0, 1.0, 0.6, 0.45], 2),  # 4 and 6 taps
                                                 ([1.0, 1.0, 1.5, 0.7], 1)])  # 2 and 4 taps
def test_resize_antialias_materializes_wide_passes(scales, materialized):
    """A pass of more than two taps reads its input materialized (stop_fusion), so it does not
    recompute the previous axis's pass once per tap; the upscale's 2-tap pass reads fused. The
    graph executor's result still matches ONNX Runtime."""
    m = model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear", antialias=1)],
              [vi("x", F, (1, 2, 9, 11))], ["y"], {"s": np.array(scales, "float32")})
    mod, _ = relay.frontend.from_onnx(m, {"x": (1, 2, 9, 11)})
    assert mod.astext().count("annotation.stop_fusion(") == materialized
    check(m, {"x": rng.standard_normal((1, 2, 9, 11)).astype("float32")}, kind="graph")


def test_lp_normalization_of_a_zero_vector_is_zero():
    m = model([helper.make_node("LpNormalization", ["x"], ["y"], axis=0, p=2)],
              [vi("x", F, (2, 3))], ["y"], opset=13)
    x = np.array([[0.0, 3.0, 1.0], [0.0, 4.0, -1.0]], "float32")
    got = MinitvmBackend.prepare(m, kind="graph").run({"x": x})[0]
    np.testing.assert_allclose(got, [[0.0, 0.6, 2 ** -0.5], [0.0, 0.8, -2 ** -0.5]],
                               rtol=1e-6)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_out_of_range_shifts_everything_out(direction):
    m = model([helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)],
              [vi("x", TensorProto.INT32, (4,)), vi("y", TensorProto.INT32, (4,))], ["z"])
    x = np.array([-8, 4, -1, 7], "int32")
    y = np.array([32, 33, -1, 2], "int32")
    want = [0, 0, 0, 28] if direction == "LEFT" else [-1, 0, -1, 1]
    for kind in ("debug", "graph"):
        got = MinitvmBackend.prepare(m, kind=kind).run({"x": x, "y": y})[0]
        np.testing.assert_array_equal(got, want)


def test_seeded_training_dropout_matches_the_onnx_reference():
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=3)
    m = model([node], [vi("x", F, (4, 5))], ["y", "mask"],
              {"r": np.array(0.4, "float32"), "t": np.array(True)})
    x = rng.standard_normal((4, 5)).astype("float32")
    ref = ReferenceEvaluator(m).run(None, {"x": x})
    with transform.PassContext(opt_level=3):
        got = MinitvmBackend.prepare(m, kind="graph").run({"x": x})
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6)
    unseeded = model([helper.make_node("Dropout", ["x", "r", "t"], ["y"])],
                     [vi("x", F, (4, 5))], ["y"],
                     {"r": np.array(0.4, "float32"), "t": np.array(True)})
    with pytest.raises(ImportError_, match="ratio 0.4 is random .it has no seed attribute"):
        relay.frontend.from_onnx(unseeded)
