"""A quantized Conv1d (QLinearConv over ``[1, C, L]``, imported as the 2-D conv of one row)
through Relax on a host with AVX-512 VNNI: its requantizing epilogue, whose int32 bias Relax's
broadcast reads at the output's unit row axis, runs on the tile's channel vectors before the
transpose (``conv_vnni._row_store``: one output row reads no plane), as Relay's does; an
epilogue that reads an operand per output element (the input zero point's border sums) still
runs after it. A QLinearGlobalAveragePool after it pools the 4-D row (no squeeze of the whole
row between the conv and the mean). All equal ONNX Runtime exactly."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx import TensorProto as P  # noqa: E402
from onnx_quant_cases import inits_of, ort_run, single, vi  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402
from minitvm.tir import stmt as S  # noqa: E402
from minitvm.tir.stmt_functor import walk_stmts  # noqa: E402

needs_vnni = pytest.mark.skipif(not conv_vnni.available(),
                                reason="the host has no AVX-512 VNNI (vpdpbusd)")


def _conv1d(x_zp: int, c: int = 32, o: int = 64, length: int = 50):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, (1, c, length)).astype("uint8")
    inits = inits_of(xs=np.array(0.02, "float32"), xz=np.array(x_zp, "uint8"),
                     w=rng.integers(-128, 128, (o, c, 3)).astype("int8"),
                     ws=(rng.random(o) * 0.01 + 0.002).astype("float32"),
                     wz=np.zeros(o, "int8"), ys=np.array(0.3, "float32"),
                     yz=np.array(0, "uint8"), b=rng.integers(-2000, 2000, o).astype("int32"))
    model = single("QLinearConv", [vi("x", P.UINT8, list(x.shape)), "xs", "xz", "w", "ws", "wz",
                                   "ys", "yz", "b"], [vi("y", P.UINT8, None)], inits,
                   kernel_shape=[3], pads=[1, 1])
    model.ir_version = 8
    return model, {"x": x}


def _tile_source_dtypes(ex) -> set:
    """The dtypes of the VNNI conv tiles' ``vr_src`` (the epilogue's output dtype where it runs
    before the transpose, int32 where it runs after)."""
    return {str(s.buffer.dtype) for rec, _ in ex.kernels.values()
            for s in walk_stmts(rec.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "vr_src"}


@needs_vnni
@pytest.mark.parametrize("x_zp, before", [(0, True), (7, False)])
def test_conv1d_epilogue_on_channel_vectors(x_zp, before):
    model, feeds = _conv1d(x_zp)
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(from_onnx(model, shape_dict={"x": feeds["x"].shape}), "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(feeds["x"])).numpy()
    np.testing.assert_array_equal(got, ort_run(model, feeds)[0])
    assert _tile_source_dtypes(ex) == ({"uint8"} if before else {"int32"})


def _conv1d_then_pool():
    """QLinearConv (1-D, 16 -> 24, uint8) then com.microsoft QLinearGlobalAveragePool."""
    from onnx import helper

    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (1, 16, 30)).astype("uint8")
    inits = inits_of(xs=np.array(0.02, "float32"), xz=np.array(0, "uint8"),
                     w=rng.integers(-128, 128, (24, 16, 3)).astype("int8"),
                     ws=np.array(0.004, "float32"), wz=np.array(0, "int8"),
                     ys=np.array(0.2, "float32"), yz=np.array(3, "uint8"),
                     b=rng.integers(-900, 900, 24).astype("int32"),
                     ps=np.array(0.1, "float32"), pz=np.array(5, "uint8"))
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                              ["c"], kernel_shape=[3], pads=[1, 1]),
             helper.make_node("QLinearGlobalAveragePool", ["c", "ys", "yz", "ps", "pz"], ["y"],
                              domain="com.microsoft", channels_last=0)]
    graph = helper.make_graph(nodes, "conv1d_pool", [vi("x", P.UINT8, list(x.shape))],
                              [vi("y", P.UINT8, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model, {"x": x}


def test_conv1d_global_average_pool_reads_the_row():
    """QLinearGlobalAveragePool of a 1-D QLinearConv's output pools the conv's 4-D row (its
    dequantize then fuses into the conv): the squeeze that remains is of the pooled
    ``[1, C, 1, 1]``, not of the row. Equals ONNX Runtime."""
    model, feeds = _conv1d_then_pool()
    mod = relax.transform.DeadCodeElimination()(
        from_onnx(model, shape_dict={"x": feeds["x"].shape}))
    squeezes = [b.value.args[0].struct_info.shape for block in mod["main"].body.blocks
                for b in block.bindings
                if getattr(getattr(b.value, "op", None), "name", "") == "relax.squeeze"]
    assert [tuple(int(d) for d in s) for s in squeezes] == [(1, 24, 1, 1)]
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(feeds["x"])).numpy()
    np.testing.assert_array_equal(got, ort_run(model, feeds)[0])
