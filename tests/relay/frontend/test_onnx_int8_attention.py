"""A quantized transformer's attention products (Q @ K^T, P @ V: both operands 8-bit
activations) on a host with AVX-512 VNNI: QLinearMatMul of two activations, and a QDQ MatMul of
two DequantizeLinear outputs, import as an int32 ``nn.batch_matmul`` of the 8-bit values
(``schedule/gemm_vnni``; an int8 A shifted into uint8, a uint8 B into int8), the zero points'
shares subtracted with the run-time row and column sums (``onnx_quant.BatchMatmulVnniPlan``).
QLinearMatMul equals ONNX Runtime exactly; a QDQ product is within one step of ORT's (ORT
requantizes the integer product once). A broadcast batch, or a host without VNNI, keeps the
exact float32 product."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from frontend_models import build_and_run  # noqa: E402
from onnx_attention_quant_cases import (  # noqa: E402
    PRODUCT_CASES,
    attention_layer,
    output_step,
    qdq_product,
    qlinear_product,
)
from onnx_quant_cases import ort_run  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.frontend_common import onnx_quant  # noqa: E402
from minitvm.relay.analysis import post_order_visit  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _int_batch_matmuls(mod) -> int:
    found = []
    post_order_visit(relay.transform.InferType()(mod)["main"], lambda e: found.append(e) if (
        isinstance(e, relay.Call) and getattr(e.op, "name", "") == "nn.batch_matmul" and
        e.checked_type.dtype == "int32" and e.args[0].checked_type.dtype == "uint8" and
        e.args[1].checked_type.dtype == "int8") else None)
    return len(found)


def _run(model, feeds):
    mod, params = relay.frontend.from_onnx(model, shape={k: v.shape for k, v in feeds.items()})
    return _int_batch_matmuls(mod), build_and_run(mod, params, feeds)[0], ort_run(model, feeds)[0]


@pytest.mark.parametrize("a_dtype, a_zp, b_dtype, b_zp", PRODUCT_CASES)
def test_qlinear_matmul_of_activations_equals_onnxruntime(a_dtype, a_zp, b_dtype, b_zp):
    n_int, got, want = _run(*qlinear_product(a_dtype, a_zp, b_dtype, b_zp))
    assert n_int == int(conv_vnni.available())
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("a_dtype, a_zp, b_dtype, b_zp", PRODUCT_CASES)
def test_qdq_matmul_of_activations_within_a_step(a_dtype, a_zp, b_dtype, b_zp):
    n_int, got, want = _run(*qdq_product(a_dtype, a_zp, b_dtype, b_zp))
    assert n_int == int(conv_vnni.available())
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert np.mean(got == want) >= 0.97


def test_3d_product_and_ragged_sizes():
    """Rank 3 (no reshape), K of 7 and N of 5 (off the schedule's words and vectors)."""
    n_int, got, want = _run(*qlinear_product("uint8", 9, "int8", -3, a_shape=(3, 6, 7), n=5))
    assert n_int == int(conv_vnni.available())
    np.testing.assert_array_equal(got, want)


def test_broadcast_batch_stays_float():
    """One B for every batch (its batch axis 1) is not taken: the float32 product, exact."""
    n_int, got, want = _run(*qlinear_product("uint8", 9, "int8", -3, b_batch=(1, 1)))
    assert n_int == 0
    np.testing.assert_array_equal(got, want)


def test_without_vnni_float_products_stay(monkeypatch):
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    n_int, got, want = _run(*qlinear_product("int8", 3, "int8", -5))
    assert n_int == 0
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt, activation", [("QDQ", "QInt8"), ("QDQ", "QUInt8"),
                                             ("QOperator", "QUInt8")])
def test_quantized_attention_layer(tmp_path, fmt, activation):
    """onnxruntime's quantize_static of a small attention layer: both products int32 batch
    matmuls on VNNI. QOperator's output equals ORT's; QDQ's is within two steps of it, 70% or
    more equal (what the float32 products gave too: the QDQ graph's other ops round apart from
    ORT's fused integer kernels)."""
    pytest.importorskip("torch", reason="the layer is exported from PyTorch")
    model, feeds = attention_layer(tmp_path, fmt, activation)
    n_int, got, want = _run(model, feeds)
    assert n_int == 2 * int(conv_vnni.available())
    if fmt == "QOperator":
        np.testing.assert_array_equal(got, want)
        return
    step = output_step(model)
    assert step > 0
    assert np.abs(got - want).max() <= 2.001 * step
    assert np.mean(got == want) >= 0.7


def test_vnni_batch_matmul_choice():
    """8-bit operands with scalar known zero points (or none), one static rank of 3 or more,
    the same batch axes."""
    ok = conv_vnni.available()
    assert onnx_quant.vnni_batch_matmul("int8", 3, (1, 2, 4, 8), "uint8", None, (1, 2, 8, 5)) \
        == ok
    assert not onnx_quant.vnni_batch_matmul("int8", onnx_quant.UNKNOWN, (2, 4, 8), "int8", 0,
                                            (2, 8, 5))
    assert not onnx_quant.vnni_batch_matmul("int8", np.zeros(4, "int8"), (2, 4, 8), "int8", 0,
                                            (2, 8, 5))
    assert not onnx_quant.vnni_batch_matmul("int8", 0, (4, 8), "int8", 0, (8, 5))
    assert not onnx_quant.vnni_batch_matmul("int8", 0, (2, 4, 8), "int8", 0, (1, 8, 5))
    assert not onnx_quant.vnni_batch_matmul("int16", 0, (2, 4, 8), "int8", 0, (2, 8, 5))


def test_batch_matmul_plan():
    """The shifts and zero points of ``BatchMatmulVnniPlan``: (A' - z_a')(B' - z_b') is the
    product, K * z_a' * z_b' its constant."""
    p = onnx_quant.BatchMatmulVnniPlan("int8", -128, "uint8", 131, 64)
    assert (p.shift_a, p.shift_b, p.a_zero_point, p.b_zero_point) == (True, True, 0, 3)
    assert p.constant == 0
    p = onnx_quant.BatchMatmulVnniPlan("uint8", 120, "int8", -5, 12)
    assert (p.shift_a, p.shift_b, p.constant) == (False, False, 12 * 120 * -5)
    rng = np.random.default_rng(0)
    a, b = rng.integers(-128, 128, (3, 12)), rng.integers(0, 256, (12, 4))
    p = onnx_quant.BatchMatmulVnniPlan("int8", 7, "uint8", 200, 12)
    a2, b2 = a + 128, b - 128
    got = a2 @ b2 - p.b_zero_point * a2.sum(1, keepdims=True) - \
        p.a_zero_point * b2.sum(0, keepdims=True) + p.constant
    np.testing.assert_array_equal(got, (a - 7) @ (b - 200))
