"""Relax's grid-sample kernel reads its image at 4 or 8 taps a sample, so the importers
materialize the image (``R.stop_fusion``) rather than fuse its producer in: chained volumetric
samplings (VoxelMorph's scaling and squaring, v <- v + grid_sample(v, id + v)) nested 8^k copies
of the first step into one kernel and never finished building. Checked against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from ONNX Runtime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402

SIZE, STEPS = 4, 4


def _squaring_model():
    ax = np.linspace(-1.0, 1.0, SIZE, dtype="float32")
    z, y, x = np.meshgrid(ax, ax, ax, indexing="ij")
    ident = numpy_helper.from_array(np.stack([x, y, z], -1)[None], "ident")  # (1, D, H, W, 3)
    nodes, v = [], "v"
    for i in range(STEPS):
        nodes += [helper.make_node("Transpose", [v], [f"t{i}"], perm=[0, 2, 3, 4, 1]),
                  helper.make_node("Add", ["ident", f"t{i}"], [f"g{i}"]),
                  helper.make_node("GridSample", [v, f"g{i}"], [f"s{i}"], mode="linear",
                                   padding_mode="border", align_corners=1),
                  helper.make_node("Add", [v, f"s{i}"], [f"v{i}"])]
        v = f"v{i}"
    shape = [1, 3, SIZE, SIZE, SIZE]
    graph = helper.make_graph(nodes, "squaring",
                              [helper.make_tensor_value_info("v", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(v, TensorProto.FLOAT, shape)],
                              [ident])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def test_each_fused_group_holds_one_sampling():
    mod = relax.frontend.onnx.from_onnx(_squaring_model())
    mod = relax.transform.LegalizeOps()(mod)
    mod = relax.transform.FuseOps()(relax.transform.AnnotateTIROpPattern()(mod))
    calls = [line for line in mod["main"].script().splitlines() if "grid_sample" in line]
    assert len(calls) == STEPS                      # one fused call a step, not one for all
    fused = [f for gv, f in mod.functions.items()
             if isinstance(f, relax.Function) and gv.name_hint != "main"]
    assert fused
    for f in fused:                                 # the grid's transpose + add fuse in still
        body = f.script()
        assert body.count("R.call_tir(grid_sample,") == 1 and "R.call_tir(transpose," in body


def test_squaring_chain_matches_onnxruntime():
    model = _squaring_model()
    v = (np.random.default_rng(0).standard_normal((1, 3, SIZE, SIZE, SIZE)) * 0.2)
    v = v.astype("float32")
    vm = relax.VirtualMachine(relax.build(relax.frontend.onnx.from_onnx(model), "llvm"),
                              tvm.cpu())
    got = vm["main"](tvm.nd.array(v)).numpy()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, sess.run(None, {"v": v})[0], rtol=1e-4, atol=1e-5)
