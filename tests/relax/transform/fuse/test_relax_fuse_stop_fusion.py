"""``R.stop_fusion``, Relax's fusion barrier: FuseOps groups each side of it apart and then drops
it (no copy); RemoveStopFusion drops it where no FuseOps runs; the ONNX / torch importers place
it where Relay's importers place ``annotation.stop_fusion`` (grid sampling, col2im)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import transform as rt
from minitvm.relax.expr import Call, Function
from minitvm.script.parser import from_source


def _chain(barrier_as_output: bool = False):
    """main(x) = -(s * s), s = barrier(exp(x) + exp(x))."""
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.exp(x))
            b = bb.emit(relax.op.add(a, a))
            stop = relax.op.stop_fusion(b)
            s = bb.emit_output(stop) if barrier_as_output else bb.emit(stop)
            c = bb.emit(relax.op.multiply(s, s))
            d = bb.emit_output(relax.op.negative(c))
        bb.emit_func_output(d)
    return bb.get()


def _ref(x):
    s = np.exp(x) + np.exp(x)
    return -(s * s)


_EXPECTED = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(lv: T.Buffer((T.int64(4), T.int64(8)), "float32"), lv_1: T.Buffer((T.int64(4), T.int64(8)), "float32"), T_add: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for ax0, ax1 in T.grid(T.int64(4), T.int64(8)):
            with T.block("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(lv[v_ax0, v_ax1], lv_1[v_ax0, v_ax1])
                T.writes(T_add[v_ax0, v_ax1])
                T_add[v_ax0, v_ax1] = lv[v_ax0, v_ax1] + lv_1[v_ax0, v_ax1]

    @T.prim_func(private=True)
    def exp(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), compute: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i0, i1 in T.grid(T.int64(4), T.int64(8)):
            with T.block("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0, v_i1])
                T.writes(compute[v_i0, v_i1])
                compute[v_i0, v_i1] = T.exp(x[v_i0, v_i1])

    @T.prim_func(private=True)
    def multiply(lv2: T.Buffer((T.int64(4), T.int64(8)), "float32"), lv2_1: T.Buffer((T.int64(4), T.int64(8)), "float32"), T_multiply: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for ax0, ax1 in T.grid(T.int64(4), T.int64(8)):
            with T.block("T_multiply"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(lv2[v_ax0, v_ax1], lv2_1[v_ax0, v_ax1])
                T.writes(T_multiply[v_ax0, v_ax1])
                T_multiply[v_ax0, v_ax1] = lv2[v_ax0, v_ax1] * lv2_1[v_ax0, v_ax1]

    @T.prim_func(private=True)
    def negative(lv3: T.Buffer((T.int64(4), T.int64(8)), "float32"), compute: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i0, i1 in T.grid(T.int64(4), T.int64(8)):
            with T.block("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv3[v_i0, v_i1])
                T.writes(compute[v_i0, v_i1])
                compute[v_i0, v_i1] = lv3[v_i0, v_i1] * T.float32(-1.0)

    @R.function(private=True)
    def fused_exp_add(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.exp, (x,), out_sinfo=R.Tensor((4, 8), dtype="float32"))
            gv = R.call_tir(cls.add, (lv, lv), out_sinfo=R.Tensor((4, 8), dtype="float32"))
            R.output(gv)
        return gv

    @R.function(private=True)
    def fused_multiply_negative(lv2: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            lv3 = R.call_tir(cls.multiply, (lv2, lv2), out_sinfo=R.Tensor((4, 8), dtype="float32"))
            gv = R.call_tir(cls.negative, (lv3,), out_sinfo=R.Tensor((4, 8), dtype="float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((4, 8), dtype="float32") = cls.fused_exp_add(x)
            gv: R.Tensor((4, 8), dtype="float32") = cls.fused_multiply_negative(lv)
            R.output(gv)
        return gv
"""


def _fused(mod):
    return rt.FuseOps()(rt.AnnotateTIROpPattern()(rt.LegalizeOps()(mod)))


def _run(mod, x, pipeline="default_build"):
    vm = relax.VirtualMachine(relax.build(mod, "llvm", pipeline=pipeline), tvm.cpu())
    out = vm["main"](tvm.nd.array(x))
    return out.numpy()


def test_stop_fusion_is_its_input_and_round_trips_through_tvmscript():
    mod = _chain()
    text = mod.script()
    assert "R.stop_fusion(lv1)" in text
    tvm.ir.assert_structural_equal(from_source(text), mod)
    binding = mod["main"].body.blocks[0].bindings[2]
    assert binding.value.op.name == "relax.stop_fusion"
    tvm.ir.assert_structural_equal(binding.var.struct_info,
                                   relax.TensorStructInfo((4, 8), "float32"))


def test_fuse_ops_groups_each_side_apart_and_drops_the_barrier():
    before = _chain()
    after = _fused(before)
    tvm.ir.assert_structural_equal(after, from_source(_EXPECTED))
    assert before["main"].body.blocks[0].bindings[2].value.op.name == "relax.stop_fusion"
    x = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
    np.testing.assert_allclose(_run(before, x), _ref(x), rtol=1e-5)


def test_without_the_barrier_the_chain_is_one_group():
    fused = _fused(rt.RemoveStopFusion()(_chain()))
    groups = [f for f in fused.functions.values()
              if isinstance(f, Function) and (f.attrs or {}).get("Primitive")]
    assert len(groups) == 1
    assert len(groups[0].body.blocks[0].bindings) == 4


def test_a_barrier_bound_to_a_block_output_keeps_its_name():
    before = _chain(barrier_as_output=True)
    stripped = rt.RemoveStopFusion()(before)
    bindings = stripped["main"].body.blocks[0].bindings
    kept = [b for b in bindings if b.var.name_hint == "gv"]
    assert len(kept) == 1 and isinstance(kept[0].value, relax.Var)  # gv = lv1
    assert not any(isinstance(b.value, Call) and getattr(b.value.op, "name", "") ==
                   "relax.stop_fusion" for b in bindings)
    x = np.random.default_rng(1).standard_normal((4, 8)).astype("float32")
    np.testing.assert_allclose(_run(before, x), _ref(x), rtol=1e-5)


def test_a_pipeline_without_fuse_ops_still_runs_it():
    pipeline = tvm.transform.Sequential([rt.LegalizeOps(), relax.pipeline.lowering_pipeline()])
    x = np.random.default_rng(2).standard_normal((4, 8)).astype("float32")
    np.testing.assert_allclose(_run(_chain(), x, pipeline), _ref(x), rtol=1e-5)


def test_legalize_ops_leaves_the_barrier_for_fuse_ops():
    legal = rt.LegalizeOps()(_chain())
    ops = [b.value.op.name for b in legal["main"].body.blocks[0].bindings
           if isinstance(b.value.op, tvm.ir.Op)]
    assert "relax.stop_fusion" in ops


def test_wrong_arity_is_a_clear_error():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with pytest.raises(Exception, match="stop_fusion.*expects one argument"):
        with bb.function("main", [x]):
            bb.emit(Call(tvm.ir.Op.get("relax.stop_fusion"), [x, x]))


def _calls_in(func) -> set:
    names = set()
    for block in func.body.blocks:
        for b in block.bindings:
            if isinstance(b.value, Call) and len(b.value.args) and \
                    isinstance(b.value.args[0], tvm.ir.GlobalVar):
                names.add(b.value.args[0].name_hint)
    return names


def test_grid_sample_import_materializes_the_pixel_rows():
    """The ONNX GridSample import: the image's pixel rows are one kernel (the transpose), and
    the gathers that read them do not recompute it."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("GridSample", ["r", "g"], ["y"], mode="linear",
                          padding_mode="border", align_corners=1)], "gs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 6]),
         helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, 4, 7, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 7])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    mod = relax.frontend.onnx.from_onnx(model)
    assert "R.stop_fusion(" in mod.script()
    fused = _fused(mod)
    names = [gv.name_hint for gv, f in fused.functions.items() if isinstance(f, Function)]
    # the rows (the ReLU'd image transposed to pixel rows) are one kernel; the gathers, which
    # read them at four corners per position, another: neither recomputes the other
    assert "fused_relu_reshape_transpose" in names, names
    gathers = [n for n in names if "gather_elements" in n]
    assert len(gathers) == 1 and "relu" not in gathers[0], gathers
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 5, 6)).astype("float32")
    g = rng.uniform(-1.1, 1.1, (1, 4, 7, 2)).astype("float32")
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x, "g": g})[0]
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x), tvm.nd.array(g)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_col2im_import_materializes_columns_and_image():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["s"]),
         helper.make_node("Col2Im", ["s", "size", "k"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])],
        "c2i",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2 * 9, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 7, 7])],
        [helper.make_tensor("size", TensorProto.INT64, [2], [7, 7]),
         helper.make_tensor("k", TensorProto.INT64, [2], [3, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    mod = relax.frontend.onnx.from_onnx(model)
    assert mod.script().count("R.stop_fusion(") == 3
    fused = relax.get_pipeline("zero")(mod)
    names = [gv.name_hint for gv in fused.functions]
    assert not any("sigmoid" in n and "take" in n for n in names), names
    x = np.random.default_rng(4).standard_normal((1, 18, 16)).astype("float32")
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(), want, rtol=1e-5,
                               atol=1e-5)
