"""QuantizeLinear / DequantizeLinear as TVM's ONNX importer writes them: ``qnn.quantize`` /
``qnn.dequantize`` calls (``from_onnx(..., convert_config={"qdq_as_qnn": True})``), so that
``relay.transform.FakeQuantizationToInteger`` can rewrite the float ops between the pairs into
integer (qnn) ops. The default import writes each pair as float arithmetic equal to ONNX
Runtime's reference kernels instead (``ops_extra``)."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...qnn import op as _qnn
from .registry import onnx_dtype


def _zero_point(ctx, zp, default_dtype: str):
    """(the zero point as int32, the 8-bit dtype it names)."""
    if zp is None:
        return ctx.const(np.array(0, "int32")), default_dtype
    return _op.cast(zp, "int32"), ctx.dtype(zp)


def _axis(ctx, x, scale, attrs) -> int:
    if int(attrs.get("block_size", 0)):
        raise ctx.fail("blocked quantization (block_size) has no qnn form; import without "
                       "convert_config qdq_as_qnn")
    axis = int(attrs.get("axis", 1))
    return axis % len(ctx.shape(x)) if len(ctx.shape(scale)) == 1 and ctx.shape(x) else axis


def quantize_linear(ctx, ins, attrs):
    """``qnn.quantize`` to the zero point's dtype (uint8 without one, as ONNX says)."""
    x, scale = ins[0], ins[1]
    zp, out_dtype = _zero_point(ctx, ins[2] if len(ins) > 2 else None, "uint8")
    if attrs.get("output_dtype"):
        out_dtype = onnx_dtype(int(attrs["output_dtype"]))
    if out_dtype not in ("int8", "uint8", "int16", "uint16", "int32"):
        raise ctx.fail(f"qnn.quantize to {out_dtype} is not supported")
    return _qnn.quantize(x, scale, zp, axis=_axis(ctx, x, scale, attrs), out_dtype=out_dtype)


def dequantize_linear(ctx, ins, attrs):
    """``qnn.dequantize`` to the scale's float dtype."""
    x, scale = ins[0], ins[1]
    zp, _ = _zero_point(ctx, ins[2] if len(ins) > 2 else None, ctx.dtype(x))
    return _qnn.dequantize(x, scale, zp, axis=_axis(ctx, x, scale, attrs),
                           out_dtype=ctx.dtype(scale))
