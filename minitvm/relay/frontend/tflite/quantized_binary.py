"""Quantized binary ops as LiteRT's integer kernels: 8-bit ADD / SUB / MUL / SQUARED_DIFFERENCE
(``exact_binary``), DIV (``exact_div``), int16 ADD / SUB, and PRELU in fixed point."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op
from . import (
    exact_binary,
    exact_div,
    fixed_point,
)
from .quantized_tensor import EIGHT_BIT, _fused_bounds, _in_q, _out_q, clamp_range, qtensor
from .tensor_data import infer_shape


def _prelu(ctx):
    """8-bit PRELU as LiteRT's integer kernel: x - zero point rescaled by in_scale / out_scale
    where >= 0, else its product with alpha - alpha's zero point rescaled by in_scale *
    alpha_scale / out_scale (each a float32 quotient made a Q31 multiplier, TFLite's
    MultiplyByQuantizedMultiplier in int64), + the output's zero point, saturated. Through
    float 509 of 16384 values were a step off LiteRT."""
    qx, qa, qo = _in_q(ctx, 0), qtensor(ctx, ctx.input_ids[1]), _out_q(ctx)

    def i64(v):
        return _expr.const(np.asarray(v, "int64"), "int64")

    v = _op.subtract(_op.cast(ctx.inputs[0], "int64"), i64(qx.z))
    a = _op.subtract(_op.cast(ctx.inputs[1], "int64"), i64(qa.z))
    f32 = np.float32
    pos = fixed_point.multiply_expr(v, *fixed_point.quantize_multiplier(
        float(f32(qx.s) / f32(qo.s))))
    neg = fixed_point.multiply_expr(_op.multiply(v, a), *fixed_point.quantize_multiplier(
        float(f32(qx.s) * f32(qa.s) / f32(qo.s))))
    out = _op.add(_op.where(_op.greater_equal(v, i64(0)), pos, neg), i64(qo.z))
    qlo, qhi = QRANGE[qo.dtype]
    return _op.cast(_op.clip(out, float(qlo), float(qhi)), qo.dtype)


def _prelu_applies(ctx) -> bool:
    """Input, alpha and output quantized per tensor in one 8-bit dtype."""
    qs = [qtensor(ctx, i) for i in [*ctx.input_ids[:2], int(ctx.op.Outputs(0))]]
    return len(ctx.inputs) == 2 and all(
        q is not None and q.dtype in EIGHT_BIT and q.dtype == qs[-1].dtype and
        q.scale.size == 1 and q.zp.size <= 1 for q in qs)


def _div(ctx):
    """8-bit DIV as LiteRT's integer kernel: a lookup in its 256 x 256 results
    (``exact_div``)."""
    q1, q2, qo = _in_q(ctx, 0), _in_q(ctx, 1), _out_q(ctx)
    qlo, qhi = clamp_range(qo, *_fused_bounds(ctx))
    values = exact_div.table(qo.dtype, (q1.s, q1.z), (q2.s, q2.z), (qo.s, qo.z), qlo, qhi)
    return exact_div.lookup(ctx.inputs[0], ctx.inputs[1], values, qo.dtype)


def _exact_binary(ctx):
    """ADD / SUB / MUL of two 8-bit tensors with TFLite's integer results
    (``exact_binary``)."""
    q1, q2, qo = _in_q(ctx, 0), _in_q(ctx, 1), _out_q(ctx)
    qlo, qhi = clamp_range(qo, *_fused_bounds(ctx))
    return exact_binary.convert(ctx.name, ctx.inputs[0], ctx.inputs[1], (q1.s, q1.z),
                                (q2.s, q2.z), (qo.s, qo.z), qo.dtype, qlo, qhi)


def _exact_binary_applies(ctx) -> bool:
    """Two inputs and the output quantized per tensor in one 8-bit dtype, and a clamp (or
    no) fused activation."""
    if len(ctx.inputs) != 2 or _fused_bounds(ctx) is None:
        return False
    qs = [qtensor(ctx, i) for i in [*ctx.input_ids, int(ctx.op.Outputs(0))]]
    if ctx.name == "SQUARED_DIFFERENCE" and (qs[-1] is None or qs[-1].dtype != "int8"):
        return False  # (TFLite's integer kernel is int8 only)
    return all(q is not None and q.dtype in EIGHT_BIT and q.dtype == qs[-1].dtype and
               q.scale.size == 1 and q.zp.size <= 1 for q in qs)


def _int16_add(ctx):
    """int16 ADD / SUB as LiteRT's general-scale kernel: TFLite's fixed point with 15 bits of
    headroom (``exact_binary.integer_form``, int64). Through float 11-16 of 1024 values were a
    step off. ADD of two same-shape tensors takes LiteRT's elementwise kernel, which rounds
    each input once (``shift_folded``; its broadcast kernel and SUB round twice): 4 of 1.03M
    values were a step off with twice-rounded inputs (sweep_tflite_int16 ADD)."""
    q1, q2, qo = _in_q(ctx, 0), _in_q(ctx, 1), _out_q(ctx)
    qlo, qhi = clamp_range(qo, *_fused_bounds(ctx))
    folded = ctx.name == "ADD" and _same_extended_shape(*ctx.inputs)
    return exact_binary.integer_form(ctx.name, ctx.inputs[0], ctx.inputs[1], (q1.s, q1.z),
                                     (q2.s, q2.z), (qo.s, qo.z), "int16", qlo, qhi,
                                     shift_folded=folded)


def _same_extended_shape(x1, x2) -> bool:
    """Whether LiteRT runs a binary op elementwise, not broadcast: both shapes equal once the
    shorter is padded with leading ones (a dynamic dim, None, equal to one in the same place:
    both carry the batch)."""
    s1, s2 = (list(infer_shape(x)) for x in (x1, x2))
    n = max(len(s1), len(s2))
    return [1] * (n - len(s1)) + s1 == [1] * (n - len(s2)) + s2


def _int16_add_applies(ctx) -> bool:
    """Two inputs and the output quantized per tensor in int16, a clamp (or no) fused
    activation, and the general-scale kernel: the options' pot_scale_int16 off or absent, or
    (as LiteRT falls back) set where a scale is not a power of two."""
    if len(ctx.inputs) != 2 or _fused_bounds(ctx) is None:
        return False
    qs = [qtensor(ctx, i) for i in [*ctx.input_ids, int(ctx.op.Outputs(0))]]
    if not all(q is not None and q.dtype == "int16" and q.scale.size == 1 and q.zp.size <= 1
               for q in qs):
        return False
    opt = ctx.options()
    pot = opt is not None and hasattr(opt, "PotScaleInt16") and opt.PotScaleInt16()
    return not pot or not all(fixed_point.checked_log2(q.s)[0] for q in qs)
