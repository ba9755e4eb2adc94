"""Integer matmuls through Relax's ONNX importer on a host with AVX-512 VNNI, as Relay's
importer takes them (``relax/frontend/onnx/qdq_vnni``): MatMulInteger, QLinearMatMul, QGemm, a
QDQ MatMul / Gemm and quantize_dynamic's form become an int32 ``matmul`` of the 8-bit rows and
the constant int8 weight, which relax.build lowers to ``schedule/gemm_vnni`` with the weight
packed once, at build time (``relax/vm/const_prepack``). Results equal ONNX Runtime's (a QDQ
product within one step); without VNNI the float32 products stay, as exact."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx_quant_cases import (  # noqa: E402
    VNNI_MATMUL_CASES,
    VNNI_MATMUL_OPS,
    WEIGHT_ZP_MATMUL_CASES,
    dynamic_matmul_model,
    int_matmul_model,
    ort_run,
    weight_zp_matmul_model,
)

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.relax.struct_info import TensorStructInfo  # noqa: E402
from minitvm.schedule import conv_vnni, gemm_vnni  # noqa: E402


def _int32_matmuls(mod) -> int:
    """The matmul bindings of ``main`` whose result is int32 (the VNNI form's)."""
    n = 0
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            if getattr(getattr(b.value, "op", None), "name", "") == "relax.matmul":
                s = b.var.struct_info
                n += isinstance(s, TensorStructInfo) and str(s.dtype) == "int32"
    return n


def _run(model, feeds, exact: bool):
    mod = from_onnx(model, shape_dict={k: v.shape for k, v in feeds.items()})
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](
        *[tvm.nd.array(v) for v in feeds.values()]).numpy()
    want = ort_run(model, feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
        assert np.mean(got == want) >= 0.97
    return mod, ex


@pytest.mark.parametrize("op", VNNI_MATMUL_OPS)
@pytest.mark.parametrize("a_shape, n, a_dtype, a_zp", VNNI_MATMUL_CASES)
def test_int_matmul_equals_onnxruntime(op, a_shape, n, a_dtype, a_zp):
    rng = np.random.default_rng(n + a_shape[-1])
    model, feeds = int_matmul_model(op, a_shape, n, a_dtype, a_zp, rng)
    mod, _ = _run(model, feeds, exact=not op.startswith("qdq"))
    assert _int32_matmuls(mod) == int(conv_vnni.products_available())


def test_dynamic_quantize_matmul():
    """quantize_dynamic's form: the zero point known only at run time."""
    model, feeds = dynamic_matmul_model(np.random.default_rng(4))
    mod = from_onnx(model, shape_dict={"x": feeds["x"].shape})
    assert _int32_matmuls(mod) == int(conv_vnni.products_available())
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(feeds["x"])).numpy()
    np.testing.assert_allclose(got, ort_run(model, feeds)[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op, w_dtype, w_zp", WEIGHT_ZP_MATMUL_CASES)
def test_weight_zero_point_matmul(op, w_dtype, w_zp):
    """A weight with a zero point (weight_type=QUInt8, or int8 with zero points): the VNNI
    product less ``z_b * row sums of A``, ORT's result exactly (quantize_dynamic's rescale
    within float rounding)."""
    model, feeds = weight_zp_matmul_model(op, w_dtype, w_zp)
    mod = from_onnx(model, shape_dict={k: v.shape for k, v in feeds.items()})
    assert _int32_matmuls(mod) == int(conv_vnni.products_available())
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](
        *[tvm.nd.array(v) for v in feeds.values()]).numpy()
    want = ort_run(model, feeds)[0]
    if op == "dynamic":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def test_weight_packed_once_at_build():
    """The VM holds the weight in gemm_vnni's packed layout ([N/16, K/4, 16, 4] int8, made at
    build time) and not the [K, N] one; no kernel packs it per call."""
    if not conv_vnni.available():
        pytest.skip("the host has no AVX-512 VNNI")
    rng = np.random.default_rng(6)
    model, feeds = int_matmul_model("QLinearMatMul", (7, 13), 21, "uint8", 9, rng)
    _, ex = _run(model, feeds, exact=True)
    w = next(onnx.numpy_helper.to_array(i) for i in model.graph.initializer if i.name == "w")
    packed = gemm_vnni.PackWeight(21, 13, False)(w)
    consts = [c for c in ex.constants if isinstance(c, np.ndarray) and c.dtype == np.int8]
    assert any(c.shape == packed.shape and np.array_equal(c, packed) for c in consts)
    assert not any(c.shape == w.shape for c in consts)
    kernels = [str(rec.prim_func) for rec, _ in ex.kernels.values()]
    assert any("vg_acc" in k for k in kernels) and not any("w_vnni" in k for k in kernels)


@pytest.mark.parametrize("op", ["QLinearMatMul", "qdq_MatMul"])
def test_without_vnni_float_products_stay(monkeypatch, op):
    """A host without VNNI nor int16 pairs: no int32 matmul, and the results still equal
    ORT's."""
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)  # (AVX2's int16 pairs)
    model, feeds = int_matmul_model(op, (2, 5, 40), 48, "uint8", 7, np.random.default_rng(3))
    mod, _ = _run(model, feeds, exact=op != "qdq_MatMul")
    assert _int32_matmuls(mod) == 0
