"""ONNX LRN through the Relax importer: one ``relax.nn.lrn`` (odd sizes, against ONNX
Runtime), ONNX's window for even sizes (which ONNX Runtime rejects; against numpy), and the
importer's errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax

rng = np.random.default_rng(7)


def lrn_ref(x, size, axis, bias, alpha, beta, lo):
    """numpy LRN in float64 over the window ``[c - lo, c - lo + size - 1]``, zeros outside."""
    sq = np.moveaxis(x.astype("float64") ** 2, axis, 0)
    acc = np.zeros_like(sq)
    for c in range(sq.shape[0]):
        acc[c] = sq[max(0, c - lo):max(0, c - lo + size)].sum(axis=0)
    return x / (bias + alpha / size * np.moveaxis(acc, 0, axis)) ** beta


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*args).numpy()


onnx = pytest.importorskip("onnx", reason="the ONNX importer tests need the `onnx` package")
from onnx import TensorProto, helper  # noqa: E402


def _lrn_model(shape, **attrs):
    node = helper.make_node("LRN", ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("shape,attrs", [
    ((2, 10, 6, 5), {"size": 5}),
    ((1, 16, 7, 7), {"size": 3, "alpha": 2e-2, "beta": 0.5, "bias": 2.0}),
    ((1, 3, 4, 4), {"size": 7, "alpha": 1e-1, "beta": 1.0}),
])
def test_onnx_lrn_against_onnxruntime(shape, attrs):
    ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
    from minitvm.relax.frontend.onnx import from_onnx

    model = _lrn_model(shape, **attrs)
    mod = from_onnx(model)
    assert _ops(mod) == ["relax.nn.lrn"]
    x = (3 * rng.standard_normal(shape)).astype("float32")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(_run(mod, tvm.nd.array(x)), ref, rtol=1e-5, atol=1e-6)


def _ops(mod):
    return [b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
            if isinstance(b.value, relax.Call)]


@pytest.mark.parametrize("shape,size", [((1, 9, 4, 4), 4), ((2, 5, 11), 2), ((1, 3, 2, 2), 6)])
def test_onnx_lrn_even_size_uses_the_onnx_window(shape, size):
    """ORT accepts odd sizes only; ONNX's window for an even size starts at c - (size-1)//2."""
    from minitvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(_lrn_model(shape, size=size, alpha=0.3, beta=0.75, bias=1.5))
    assert _ops(mod) == ["relax.flip", "relax.nn.lrn", "relax.flip"]
    x = (3 * rng.standard_normal(shape)).astype("float32")
    ref = lrn_ref(x, size, 1, 1.5, 0.3, 0.75, lo=(size - 1) // 2)
    np.testing.assert_allclose(_run(mod, tvm.nd.array(x)), ref, rtol=1e-5, atol=1e-6)


def test_onnx_lrn_errors():
    from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx

    with pytest.raises(ONNXImportError, match=r"LRN needs an \(N, C, D1, ...\) input, got 2"):
        from_onnx(_lrn_model((4, 6), size=3))
    with pytest.raises(ONNXImportError, match="LRN needs its 'size' attribute"):
        from_onnx(_lrn_model((1, 4, 3, 3)))
    with pytest.raises(ValueError, match="relax.nn.lrn: size must be a positive"):
        from_onnx(_lrn_model((1, 4, 3, 3), size=0))
