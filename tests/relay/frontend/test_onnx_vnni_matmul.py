"""Integer matmuls (MatMulInteger, QLinearMatMul, com.microsoft QGemm, a QDQ MatMul / Gemm and
quantize_dynamic's DynamicQuantizeLinear + MatMulInteger) on a host with AVX-512 VNNI: the
importer passes the 8-bit rows (an int8 A shifted into uint8) and the constant int8 weight to
an int32 ``nn.dense`` (``schedule/gemm_vnni``), less the zero point times the weight's column
sums (``onnx_quant.vnni_matmul``). The integer ops' results equal ONNX Runtime's exactly; a
QDQ product is within one step of ORT's. Without VNNI the exact float32 products stay."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from frontend_models import build_and_run  # noqa: E402
from onnx_quant_cases import (  # noqa: E402
    VNNI_MATMUL_CASES,
    VNNI_MATMUL_OPS,
    WEIGHT_ZP_MATMUL_CASES,
    dynamic_matmul_model,
    int_matmul_model,
    ort_run,
    weight_zp_matmul_model,
)

from minitvm import relay  # noqa: E402
from minitvm.frontend_common import onnx_quant  # noqa: E402
from minitvm.relay.analysis import post_order_visit  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _int32_denses(mod) -> int:
    found = []
    post_order_visit(mod["main"], lambda e: found.append(e) if isinstance(e, relay.Call) and
                     getattr(e.op, "name", "") == "nn.dense" and
                     e.checked_type.dtype == "int32" else None)
    return len(found)


def _check(model, feeds, exact: bool):
    mod, params = relay.frontend.from_onnx(model, shape={k: v.shape for k, v in feeds.items()})
    n = _int32_denses(relay.transform.InferType()(mod))
    got = build_and_run(mod, params, feeds)[0]
    want = ort_run(model, feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(got, want)
    else:  # (a QDQ product: ORT's integer kernel rounds once, the float graph twice)
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
        assert np.mean(got == want) >= 0.97
    return n


@pytest.mark.parametrize("op", VNNI_MATMUL_OPS)
@pytest.mark.parametrize("a_shape, n, a_dtype, a_zp", VNNI_MATMUL_CASES)
def test_int_matmul_equals_onnxruntime(op, a_shape, n, a_dtype, a_zp):
    rng = np.random.default_rng(n + a_shape[-1])
    model, feeds = int_matmul_model(op, a_shape, n, a_dtype, a_zp, rng)
    n_int = _check(model, feeds, exact=not op.startswith("qdq"))
    assert n_int == int(conv_vnni.products_available())


def test_dynamic_quantize_matmul():
    """quantize_dynamic's form: the zero point known only at run time (its share multiplied
    then, in the product's epilogue)."""
    model, feeds = dynamic_matmul_model(np.random.default_rng(4))
    mod, params = relay.frontend.from_onnx(model, shape={"x": feeds["x"].shape})
    assert _int32_denses(relay.transform.InferType()(mod)) == \
        int(conv_vnni.products_available())
    got = build_and_run(mod, params, feeds)[0]
    np.testing.assert_allclose(got, ort_run(model, feeds)[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["MatMulInteger", "QGemm", "qdq_Gemm"])
def test_without_vnni_float_products_stay(monkeypatch, op):
    """A host without VNNI nor int16 pairs: no int32 dense, and the results still equal
    ORT's."""
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)  # (AVX2's int16 pairs)
    model, feeds = int_matmul_model(op, (7, 13), 21, "uint8", 200, np.random.default_rng(2))
    assert _check(model, feeds, exact=op != "qdq_Gemm") == 0


@pytest.mark.parametrize("op, w_dtype, w_zp", WEIGHT_ZP_MATMUL_CASES)
def test_weight_zero_point_matmul(op, w_dtype, w_zp):
    """A weight with a zero point (weight_type=QUInt8, or int8 with zero points) takes the
    VNNI product too, its share ``z_b * row sums of A`` subtracted: ORT's result exactly (a
    QLinearMatMul's requantization, and quantize_dynamic's float rescale, as ORT's)."""
    model, feeds = weight_zp_matmul_model(op, w_dtype, w_zp)
    mod, params = relay.frontend.from_onnx(model, shape={k: v.shape for k, v in feeds.items()})
    assert _int32_denses(relay.transform.InferType()(mod)) == \
        int(conv_vnni.products_available())
    got = build_and_run(mod, params, feeds)[0]
    want = ort_run(model, feeds)[0]
    if op == "dynamic":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def test_vnni_matmul_choice():
    """Only 8-bit rows with no zero point or a scalar one (known or not) and constant 2-D int8
    weights without nonzero zero points."""
    w = np.ones((40, 32), "int8")
    ok = conv_vnni.products_available()
    assert onnx_quant.vnni_matmul("uint8", np.uint8(3), True, "int8", w, None) == ok
    assert onnx_quant.vnni_matmul("int8", onnx_quant.UNKNOWN, True, "int8", w,
                                  np.zeros(32, "int8")) == ok
    assert not onnx_quant.vnni_matmul("uint8", np.arange(4, dtype="uint8"), False, "int8", w,
                                      None)  # (a zero point per row)
    assert onnx_quant.vnni_matmul("uint8", None, True, "uint8", w, np.uint8(3)) == ok
    assert not onnx_quant.vnni_matmul("int16", None, True, "int8", w, None)
    assert not onnx_quant.vnni_matmul("uint8", None, True, "int8", None, None)
    assert onnx_quant.vnni_matmul("uint8", None, True, "int8", w, np.ones(32, "int8")) == ok
    assert not onnx_quant.vnni_matmul("uint8", None, True, "int8", w, np.ones(5, "int8"))
    assert not onnx_quant.vnni_matmul("uint8", None, True, "int8", w, onnx_quant.UNKNOWN)
    assert not onnx_quant.vnni_matmul("uint8", None, True, "int8", np.ones((2, 4, 4), "int8"),
                                      None)
    plan = onnx_quant.MatmulVnniPlan("int8", np.int8(-3), np.full((2, 3), -2, "int8"))
    assert plan.shift and plan.weight_t.shape == (3, 2)
    np.testing.assert_array_equal(plan.column_sums, [-4, -4, -4])
    np.testing.assert_array_equal(plan.constant_correction, [-500, -500, -500])  # 125 * -4
    assert onnx_quant.MatmulVnniPlan("uint8", None, w).constant_correction is None
    assert onnx_quant.MatmulVnniPlan("uint8", None, w).row_sum_weight is None
    # a uint8 weight (zero point 130) runs as the int8 b - 128 (zero point 2): K * 2 less
    plan = onnx_quant.MatmulVnniPlan("uint8", np.uint8(5), np.full((4, 3), 200, "uint8"),
                                     "uint8", np.uint8(130))
    np.testing.assert_array_equal(plan.weight, np.full((4, 3), 72, "int8"))
    np.testing.assert_array_equal(plan.row_sum_weight, [2, 2, 2])
    np.testing.assert_array_equal(plan.column_sums, [280, 280, 280])  # 4 * 72 - 4 * 2
    np.testing.assert_array_equal(plan.constant_correction, [1400, 1400, 1400])
    assert onnx_quant.MatmulVnniPlan("uint8", onnx_quant.UNKNOWN, w).runtime_zero_point
    # a QDQ weight's scale per index of K is no factor of the product's columns
    assert onnx_quant.qdq_matmul_operands("uint8", None, w, np.ones(40, "float32"),
                                          np.float32(0.1), False) is None
    # one per column (DequantizeLinear axis=1 of the [K, N] weight) is, scaled by x's scale
    s = onnx_quant.dequantized_weight_scale(w, "int8", np.full(32, 0.5, "float32"), None, 1, 0)
    assert s.shape == (1, 32)
    found = onnx_quant.qdq_matmul_operands("uint8", None, w, s, np.float32(0.1), False)
    assert (found is not None) == ok
    if ok:
        np.testing.assert_allclose(found[1], np.full(32, 0.05, "float32"))
    # and per row of a transposed ([N, K]) weight's axis 1 is per K again: not taken
    assert onnx_quant.qdq_matmul_operands("uint8", None, w.T, s[:, :1].repeat(40, 1),
                                          np.float32(0.1), True) is None
