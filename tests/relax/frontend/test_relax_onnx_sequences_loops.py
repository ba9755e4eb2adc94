"""ONNX sequences and optionals, run-time If and Loop (private Relax functions called from
``main``), and the operator gaps closed with them (3-D ConvTranspose, Pad 'wrap', antialiased
Resize, out-of-range BitShift, seeded training-mode Dropout, AveragePool's ceil-mode count)
through relax.frontend.onnx.from_onnx, relax.build and the VM, against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402
from minitvm.relax.frontend.onnx.backend import RelaxBackend  # noqa: E402
from minitvm.testing.onnx_graphs import assert_same, model, ort_run, seq_vi, vi  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
rng = np.random.default_rng(11)


def check(m, feeds):
    assert_same(list(RelaxBackend.prepare(m).run(feeds)), ort_run(m, feeds))


def test_sequence_ops_and_a_sequence_output():
    nodes = [helper.make_node("SplitToSequence", ["x", "split"], ["s"], axis=1),
             helper.make_node("SequenceInsert", ["s", "y", "zero"], ["s1"]),
             helper.make_node("SequenceLength", ["s1"], ["n"]),
             helper.make_node("ConcatFromSequence", ["s1"], ["cat"], axis=1)]
    m = model(nodes, [vi("x", F, (2, 5)), vi("y", F, (2, 1))], ["n", "cat", seq_vi("s1")],
              {"split": np.array([2, 3], "int64"), "zero": np.array(0, "int64")})
    feeds = {"x": rng.standard_normal((2, 5)).astype("float32"),
             "y": rng.standard_normal((2, 1)).astype("float32")}
    got = RelaxBackend.prepare(m).run(feeds)
    assert isinstance(got[2], list) and [g.shape for g in got[2]] == [(2, 1), (2, 2), (2, 3)]
    check(m, feeds)


def test_sequence_input_is_one_parameter_per_element():
    m = model([helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=1)],
              [seq_vi("s")], ["y"])
    mod = from_onnx(m, shape_dict={"s": [(3,), (3,)]})
    assert [p.name_hint for p in mod["main"].params] == ["s_0", "s_1"]
    check(m, {"s": [rng.standard_normal(3).astype("float32") for _ in range(2)]})
    with pytest.raises(ONNXImportError, match="'s' is sequence-typed: pass shape_dict="):
        from_onnx(m)


def test_optional_and_clear_error_for_a_sequence_into_a_tensor_op():
    nodes = [helper.make_node("Optional", ["x"], ["o"]),
             helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("OptionalGetElement", ["o"], ["y"])]
    check(model(nodes, [vi("x", F, (2,))], ["has", "y"]),
          {"x": rng.standard_normal(2).astype("float32")})
    bad = [helper.make_node("SequenceConstruct", ["x"], ["s"]),
           helper.make_node("Exp", ["s"], ["y"], name="e")]
    with pytest.raises(ONNXImportError, match="Exp node 'e': input 's' is a sequence"):
        from_onnx(model(bad, [vi("x", F, (2,))], ["y"]))


def _if_model():
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [vi("t", F, (3,))])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [vi("e", F, (3,))])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    return model(nodes, [vi("x", F, (3,))], ["y"], {"zero": np.array(0.0, "float32")})


def test_run_time_if_is_a_private_function_holding_a_relax_if():
    mod = from_onnx(_if_model())
    names = sorted(gv.name_hint for gv in mod.functions if gv.name_hint != "main")
    assert names == ["onnx_if"]
    fn = mod[mod.get_global_var("onnx_if")]
    assert isinstance(fn.body.body, relax.Var)  # the result of a binding to a Relax If
    assert any(isinstance(b.value, relax.If) for blk in fn.body.blocks for b in blk.bindings)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = rng.standard_normal(3).astype("float32")
    for v in (np.abs(x), -np.abs(x)):  # one build, both branches
        np.testing.assert_allclose(vm["main"](v).numpy(), ort_run(_if_model(), {"x": v})[0],
                                   rtol=1e-6)


def _range_loop_model():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["prev", "delta"], ["cur"]),
         helper.make_node("Mul", ["prev", "prev"], ["sq"])],
        "body", [vi("i", I64, ()), vi("c_in", B, ()), vi("prev", F, ())],
        [vi("c_out", B, ()), vi("cur", F, ()), vi("sq", F, ())])
    nodes = [helper.make_node("Sub", ["limit", "start"], ["d"]),
             helper.make_node("Div", ["d", "delta"], ["q"]),
             helper.make_node("Ceil", ["q"], ["qc"]),
             helper.make_node("Relu", ["qc"], ["qr"]),
             helper.make_node("Cast", ["qr"], ["M"], to=I64),
             helper.make_node("Loop", ["M", "", "start"], ["last", "squares"], body=body)]
    return model(nodes, [vi("start", F, ()), vi("limit", F, ()), vi("delta", F, ())],
                 ["last", "squares"])


def test_run_time_loop_is_a_recursive_private_function():
    m = _range_loop_model()
    mod = from_onnx(m)
    loops = [gv for gv in mod.functions if gv.name_hint.startswith("onnx_loop")]
    assert len(loops) == 1
    assert "onnx_loop" in mod[loops[0]].script()  # it calls itself
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for start, limit, delta in ((1.0, 5.0, 1.5), (10.0, 2.0, -3.0), (0.0, -1.0, 1.0)):
        feeds = {"start": np.array(start, "float32"), "limit": np.array(limit, "float32"),
                 "delta": np.array(delta, "float32")}
        out = vm["main"](*feeds.values())  # one build serves every trip count
        assert_same([out[0].numpy(), out[1].numpy()], ort_run(m, feeds))


def test_run_time_loop_reads_outer_values_and_a_data_condition():
    """A while loop: x doubles until its sum passes ``lim`` (read from the outer graph)."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_in", "two"], ["x_out"]),
         helper.make_node("ReduceSum", ["x_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "lim"], ["c_out"]),
         helper.make_node("Identity", ["s"], ["scan"])],
        "body", [vi("i", I64, ()), vi("c_in", B, ()), vi("x_in", F, (3,))],
        [vi("c_out", B, ()), vi("x_out", F, (3,)), vi("scan", F, ())],
        initializer=[numpy_helper.from_array(np.array(2.0, "float32"), "two")])
    m = model([helper.make_node("Loop", ["", "c0", "x"], ["y", "sums"], body=body)],
              [vi("x", F, (3,)), vi("lim", F, ())], ["y", "sums"], {"c0": np.array(True)})
    for lim in (10.0, 1000.0):
        check(m, {"x": np.array([0.5, 1.0, 0.25], "float32"),
                  "lim": np.array(lim, "float32")})


def test_conv_transpose_3d_and_pad_wrap():
    x = rng.standard_normal((1, 2, 3, 4, 3)).astype("float32")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[1, 2, 2],
                            pads=[0, 1, 0, 1, 0, 1])
    check(model([node], [vi("x", F, x.shape)], ["y"],
                {"w": rng.standard_normal((2, 3, 2, 2, 3)).astype("float32")}), {"x": x})
    pad = model([helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")],
                [vi("x", F, (3, 4))], ["y"], {"p": np.array([0, -1, 2, 5], "int64")})
    check(pad, {"x": rng.standard_normal((3, 4)).astype("float32")})


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_antialias(mode):
    m = model([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode=mode, antialias=1)],
              [vi("x", F, (1, 1, 10, 7))], ["y"], {"sz": np.array([1, 1, 4, 5], "int64")})
    check(m, {"x": rng.standard_normal((1, 1, 10, 7)).astype("float32")})


def test_bit_shift_out_of_range_and_seeded_dropout():
    m = model([helper.make_node("BitShift", ["x", "y"], ["z"], direction="RIGHT")],
              [vi("x", TensorProto.INT32, (4,)), vi("y", TensorProto.INT32, (4,))], ["z"])
    got = RelaxBackend.prepare(m).run({"x": np.array([-8, 4, -1, 7], "int32"),
                                       "y": np.array([32, 33, -1, 2], "int32")})[0]
    np.testing.assert_array_equal(got, [-1, 0, -1, 1])
    from onnx.reference import ReferenceEvaluator

    d = model([helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=5)],
              [vi("x", F, (3, 4))], ["y", "mask"],
              {"r": np.array(0.5, "float32"), "t": np.array(True)})
    x = rng.standard_normal((3, 4)).astype("float32")
    got = RelaxBackend.prepare(d).run({"x": x})
    ref = ReferenceEvaluator(d).run(None, {"x": x})
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6)


def test_average_pool_ceil_mode_counts_pads_but_not_the_overhang():
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 0, 1, 0], ceil_mode=1, count_include_pad=1)
    check(model([node], [vi("x", F, (1, 2, 6, 6))], ["y"], opset=19),
          {"x": rng.standard_normal((1, 2, 6, 6)).astype("float32")})
