"""A quantized TFLite tensor's parameters (``QTensor``) as the quantized converters check and use
them: dequantize / quantize / requantize in Relay, the fused activation's bounds, and the dtype
predicates that pick a converter."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op
from .importer import (
    _TENSOR_TYPES,
    quant_params,
)

EIGHT_BIT = ("int8", "uint8")  # the weight dtypes of the integer products


ACTIVATION = ("int8", "uint8", "int16")  # int16: the "16x8" models (int8 weights)


# fused activation code -> float bounds (TANH is not a clamp: those ops take the float path)
_ACT_BOUNDS = {0: (None, None), 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


class QTensor:
    """A tensor's quantization as the importer uses it: dtype, scale(s), zero point(s) and
    quantized dimension, and its name for errors."""

    __slots__ = ("name", "dtype", "scale", "zp", "dim")

    def __init__(self, name: str, dtype: str, q):
        self.name, self.dtype = name, dtype
        self.scale, self.zp, self.dim = q

    def same(self, other: QTensor) -> bool:
        return self.dtype == other.dtype and np.array_equal(self.scale, other.scale) and \
            np.array_equal(self.zp, other.zp)

    @property
    def s(self) -> float:
        return float(self.scale.reshape(-1)[0])

    @property
    def z(self) -> int:
        return int(self.zp.reshape(-1)[0])


def qtensor(ctx, idx: int) -> QTensor | None:
    """Tensor ``idx``'s quantization, None when it has none."""
    if idx < 0:
        return None
    t = ctx.importer.subgraph.Tensors(idx)
    q = quant_params(t)
    if q is None:
        return None
    return QTensor((t.Name() or b"").decode(), _TENSOR_TYPES.get(t.Type(), "?"), q)


def is_quantized(ctx) -> bool:
    """Does this operator compute on quantized activations (a non-constant quantized input, or
    a quantized 8/16-bit output)? Dynamic-range models' float ops with int8 weights do not."""
    outs = [qtensor(ctx, int(i)) for i in ctx.op.OutputsAsNumpy()]
    if any(q is not None and q.dtype in ("int8", "uint8", "int16") for q in outs):
        return True
    return any(qtensor(ctx, i) is not None and not isinstance(e, _expr.Constant)
               for i, e in zip(ctx.input_ids, ctx.inputs, strict=True))


def _activation_q(ctx, q: QTensor, role: str) -> QTensor:
    """Check an activation tensor's quantization: int8/uint8/int16, one scale and zero
    point."""
    if q.dtype not in ACTIVATION:
        raise ctx.fail(f"{role} tensor {q.name!r} is {q.dtype}: quantized operators take int8, "
                       "uint8 or int16 activations")
    if q.scale.size != 1 or q.zp.size > 1:
        raise ctx.fail(f"{role} tensor {q.name!r} has per-channel quantization; activations "
                       "must have one scale and zero point")
    return q


def _out_q(ctx, k: int = 0) -> QTensor:
    q = qtensor(ctx, int(ctx.op.Outputs(k)))
    if q is None:
        raise ctx.fail("the output of an operator on quantized inputs has no quantization "
                       "parameters")
    return _activation_q(ctx, q, "output")


def _in_q(ctx, k: int) -> QTensor:
    q = qtensor(ctx, ctx.input_ids[k])
    if q is None:
        t = ctx.importer.subgraph.Tensors(ctx.input_ids[k])
        raise ctx.fail(f"input tensor {(t.Name() or b'').decode()!r} of an operator on "
                       "quantized tensors has no quantization parameters")
    return _activation_q(ctx, q, "input")


def dequantize(x, q: QTensor):
    """(x - zero_point) * scale in float32 (per tensor)."""
    xf = _op.cast(x, "float32")
    if q.z:
        xf = _op.subtract(xf, _expr.const(np.array(q.z, "float32")))
    return _op.multiply(xf, _expr.const(np.array(q.s, "float32")))


def quantize(x, q: QTensor, lo: float | None = None, hi: float | None = None):
    """round(x / scale) + zero_point saturated to the dtype's range, or to the quantized
    ``[lo, hi]`` (float bounds) inside it (a fused activation)."""
    v = _op.round(_op.multiply(x, _expr.const(np.array(1.0 / q.s, "float32"))))
    return _saturate(v, q, lo, hi)


def _saturate(v, q: QTensor, lo, hi):
    """float32 ``v`` (rounded, zero point not yet added) + zero point, clamped, cast."""
    if q.z:
        v = _op.add(v, _expr.const(np.array(q.z, "float32")))
    qlo, qhi = clamp_range(q, lo, hi)
    return _op.cast(_op.clip(v, float(qlo), float(qhi)), q.dtype)


def clamp_range(q: QTensor, lo: float | None, hi: float | None) -> tuple[int, int]:
    """The quantized values of ``q``'s dtype within the float bounds ``[lo, hi]`` (None: open),
    as TFLite's CalculateActivationRangeQuantized takes them."""
    qlo, qhi = QRANGE[q.dtype]

    def level(f: float) -> int:  # (float32 quotient, rounded half away from zero)
        v = float(np.float32(f) / np.float32(q.s))
        return q.z + int(np.sign(v) * np.floor(abs(v) + 0.5))

    if lo is not None:
        qlo = max(qlo, level(lo))
    if hi is not None:
        qhi = min(qhi, level(hi))
    return qlo, qhi


def requantize(x, q_in: QTensor, q_out: QTensor, lo=None, hi=None):
    """``x`` (quantized as ``q_in``) in ``q_out``'s parameters; ``x`` itself when they are the
    same and no bounds narrow it."""
    if q_in.same(q_out) and lo is None and hi is None:
        return x
    if q_in.same(q_out):
        qlo, qhi = clamp_range(q_out, lo, hi)
        return _op.clip(x, float(qlo), float(qhi))
    v = _op.cast(x, "float32")
    if q_in.z:
        v = _op.subtract(v, _expr.const(np.array(q_in.z, "float32")))
    v = _op.round(_op.multiply(v, _expr.const(np.array(q_in.s / q_out.s, "float32"))))
    return _saturate(v, q_out, lo, hi)


def _fused_bounds(ctx):
    opt = ctx.options()
    code = opt.FusedActivationFunction() if opt is not None and hasattr(
        opt, "FusedActivationFunction") else 0
    if code not in _ACT_BOUNDS:
        return None
    return _ACT_BOUNDS[code]


def _activation_bounds(ctx):
    """The fused activation's (lo, hi) in real values, or a clear error for one LiteRT's
    quantized kernels do not take."""
    bounds = _fused_bounds(ctx)
    if bounds is None:
        raise ctx.fail("a quantized operator's fused activation must be none, RELU, "
                       "RELU_N1_TO_1 or RELU6")
    return bounds


def _clamp_fused(ctx, v, qo: QTensor):
    """``v`` (the requantized integers, any numeric dtype) clamped to the fused activation's
    range in ``qo``'s grid, cast to ``qo``'s dtype."""
    qlo, qhi = clamp_range(qo, *_activation_bounds(ctx))
    return _op.cast(_op.clip(v, float(qlo), float(qhi)), qo.dtype)


# ------------------------------------------------------------------ data inputs, dtype checks
def _data_inputs(ctx, constants: bool = False) -> list[int]:
    """The inputs holding quantized 8/16-bit values (not shapes, axes, paddings); with
    ``constants``, also quantized int32/int64 constants (biases)."""
    wide = ("int32", "int64") if constants else ()
    return [k for k, i in enumerate(ctx.input_ids)
            if ctx.inputs[k] is not None and qtensor(ctx, i) is not None and
            (qtensor(ctx, i).dtype in ACTIVATION or qtensor(ctx, i).dtype in wide and
             isinstance(ctx.importer.fold(ctx.inputs[k]), _expr.Constant))]


def _eight_bit_to_eight_bit(ctx) -> bool:
    """One input, 8-bit quantized, and an 8-bit quantized output."""
    qs = [qtensor(ctx, ctx.input_ids[0]) if len(ctx.input_ids) == 1 else None,
          qtensor(ctx, int(ctx.op.Outputs(0)))]
    return all(q is not None and q.dtype in EIGHT_BIT for q in qs)


def _int16_to_int16(ctx) -> bool:
    """One input and the output quantized per tensor in int16."""
    qs = [qtensor(ctx, ctx.input_ids[0]) if len(ctx.input_ids) == 1 else None,
          qtensor(ctx, int(ctx.op.Outputs(0)))]
    return all(q is not None and q.dtype == "int16" and q.scale.size == 1 for q in qs)


def _same_dtype(ctx) -> bool:
    """Input and output of one dtype (TFLite's integer kernels require it)."""
    return qtensor(ctx, ctx.input_ids[0]).dtype == qtensor(ctx, int(ctx.op.Outputs(0))).dtype


def _eight_bit_to_eight_bit_first(ctx) -> bool:
    """Input 0 and output 0 quantized per tensor in 8 bits."""
    qs = [qtensor(ctx, ctx.input_ids[0]), qtensor(ctx, int(ctx.op.Outputs(0)))]
    return all(q is not None and q.dtype in EIGHT_BIT and q.scale.size == 1 and q.zp.size <= 1
               for q in qs)
