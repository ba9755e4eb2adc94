"""The Relax ONNX importer brings Resize in as one ``image.resize2d`` wherever it samples as the
ONNX taps do (the decision Relay's importer shares), else as per-axis ``take`` taps; both match
ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx_resize_cases import RESIZES  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402


def _called_ops(mod) -> set[str]:
    names = set()
    relax.analysis.post_order_visit(
        mod["main"], lambda e: names.add(e.op.name) if isinstance(e, relax.Call)
        and hasattr(e.op, "name") else None)
    return names


@pytest.mark.parametrize("name", sorted(RESIZES))
def test_resize_imports_as_resize2d_where_it_samples_the_same(name):
    (model, x), as_resize2d = RESIZES[name]
    mod = from_onnx(model)
    ops = _called_ops(mod)
    assert ("relax.image.resize2d" in ops) == as_resize2d
    assert ("relax.take" in ops) != as_resize2d
    (ref,) = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, {"x": x})
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](x).numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def _batch_free_resize(mode: str, how: str, extra: dict):
    """A 5-D Resize of an input with a symbolic batch: sizes as Shape(x)[:2] + constants (what
    torch.onnx.export writes for F.interpolate(size=...) under a dynamic batch), or scales."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 4, 5, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    const = [helper.make_node("Constant", [], [n], value=helper.make_tensor(
        n, TensorProto.INT64, [len(v)], v)) for n, v in
        (("starts", [0]), ("ends", [2]), ("tail", [8, 3, 9]))]
    if how == "sizes":
        nodes = const + [helper.make_node("Shape", ["x"], ["shape"]),
                         helper.make_node("Slice", ["shape", "starts", "ends"], ["lead"]),
                         helper.make_node("Concat", ["lead", "tail"], ["sizes"], axis=0),
                         helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode,
                                          **extra)]
        inits = []
    else:
        nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode, **extra)]
        inits = [helper.make_tensor("scales", TensorProto.FLOAT, [5],
                                    [1.0, 1.0, 2.0, 0.6, 1.5])]
    graph = helper.make_graph(nodes, "resize5d", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("mode,how,extra", [
    ("linear", "sizes", {"coordinate_transformation_mode": "half_pixel"}),
    ("linear", "scales", {"coordinate_transformation_mode": "align_corners"}),
    ("nearest", "sizes", {"coordinate_transformation_mode": "asymmetric",
                          "nearest_mode": "floor"}),
])
def test_resize_5d_with_symbolic_batch(mode, how, extra):
    """The symbolic batch keeps its size, so the static axes take taps as with static shapes
    (this Resize needed static input dims before); one build runs at batch 1 and 3."""
    model = _batch_free_resize(mode, how, extra)
    mod = from_onnx(model)
    assert "relax.take" in _called_ops(mod)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 4, 5, 6)).astype("float32")
        (ref,) = sess.run(None, {"x": x})
        got = vm["main"](x).numpy()
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_resize_of_a_symbolic_axis_is_refused():
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 4, 5, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [5], [2.0, 1.0, 2.0, 1.0, 1.0])
    graph = helper.make_graph([helper.make_node("Resize", ["x", "", "scales"], ["y"])],
                              "resize_batch", [x], [y], [scales])
    with pytest.raises(Exception, match="resizes a symbolic axis"):
        from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
