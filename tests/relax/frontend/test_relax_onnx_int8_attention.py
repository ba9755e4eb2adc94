"""A quantized transformer's attention products (both operands 8-bit activations) through
Relax's ONNX importer, as Relay's importer takes them (``relax/frontend/onnx/qdq_vnni``): on a
host with AVX-512 VNNI, QLinearMatMul of two activations and a QDQ MatMul of two
DequantizeLinear outputs become an int32 ``matmul`` of uint8 rows and int8 columns, which
relax.build raises to ``batch_matmul`` and lowers to ``schedule/gemm_vnni``, the zero points'
shares subtracted with run-time row and column sums. QLinearMatMul equals ONNX Runtime
exactly, a QDQ product is within one step; a broadcast batch or a host without VNNI keeps the
float32 product."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx_attention_quant_cases import (  # noqa: E402
    PRODUCT_CASES,
    attention_layer,
    output_step,
    qdq_product,
    qlinear_product,
)
from onnx_quant_cases import ort_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.relax.struct_info import TensorStructInfo  # noqa: E402
from minitvm.schedule import conv_vnni  # noqa: E402


def _int_matmuls(mod) -> int:
    """The matmul bindings of ``main`` of two activations whose result is int32."""
    n = 0
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            v = b.value
            if getattr(getattr(v, "op", None), "name", "") == "relax.matmul":
                s = b.var.struct_info
                n += isinstance(s, TensorStructInfo) and str(s.dtype) == "int32" and \
                    not isinstance(v.args[1], relax.Constant)
    return n


def _run(model, feeds):
    mod = from_onnx(model, shape_dict={k: v.shape for k, v in feeds.items()})
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](
        *[tvm.nd.array(v) for v in feeds.values()]).numpy()
    return _int_matmuls(mod), ex, got, ort_run(model, feeds)[0]


def _on_vnni(ex) -> bool:
    return any("vg_acc" in str(rec.prim_func) for rec, _ in ex.kernels.values())


@pytest.mark.parametrize("a_dtype, a_zp, b_dtype, b_zp", PRODUCT_CASES)
def test_qlinear_matmul_of_activations_equals_onnxruntime(a_dtype, a_zp, b_dtype, b_zp):
    n_int, ex, got, want = _run(*qlinear_product(a_dtype, a_zp, b_dtype, b_zp))
    assert n_int == int(conv_vnni.available()) == int(_on_vnni(ex))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("a_dtype, a_zp, b_dtype, b_zp", PRODUCT_CASES)
def test_qdq_matmul_of_activations_within_a_step(a_dtype, a_zp, b_dtype, b_zp):
    n_int, ex, got, want = _run(*qdq_product(a_dtype, a_zp, b_dtype, b_zp))
    assert n_int == int(conv_vnni.available()) == int(_on_vnni(ex))
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert np.mean(got == want) >= 0.97


def test_3d_product_and_ragged_sizes():
    n_int, _, got, want = _run(*qlinear_product("uint8", 9, "int8", -3, a_shape=(3, 6, 7), n=5))
    assert n_int == int(conv_vnni.available())
    np.testing.assert_array_equal(got, want)


def test_broadcast_batch_stays_float():
    n_int, ex, got, want = _run(*qlinear_product("uint8", 9, "int8", -3, b_batch=(1, 1)))
    assert n_int == 0 and not _on_vnni(ex)
    np.testing.assert_array_equal(got, want)


def test_without_vnni_float_products_stay(monkeypatch):
    monkeypatch.setattr(conv_vnni, "available", lambda: False)
    n_int, ex, got, want = _run(*qlinear_product("int8", 3, "int8", -5))
    assert n_int == 0 and not _on_vnni(ex)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt, activation", [("QDQ", "QInt8"), ("QOperator", "QUInt8")])
def test_quantized_attention_layer(tmp_path, fmt, activation):
    """onnxruntime's quantize_static of a small attention layer (as Relay's test): both
    products int32; QOperator equals ORT, QDQ is within two steps (as the float32 products)."""
    pytest.importorskip("torch", reason="the layer is exported from PyTorch")
    model, feeds = attention_layer(tmp_path, fmt, activation)
    n_int, _, got, want = _run(model, feeds)
    assert n_int == 2 * int(conv_vnni.available())
    if fmt == "QOperator":
        np.testing.assert_array_equal(got, want)
        return
    assert np.abs(got - want).max() <= 2.001 * output_step(model)
    assert np.mean(got == want) >= 0.7
