"""Fully-quantized TFLite operators (int8 / uint8 activations: what post-training full-integer
quantization writes, and the classic ``*_quant.tflite`` uint8 models; int16 activations with
int8 weights, the "16x8" models), lowered to plain Relay.

By what the op computes:

- integer products (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV; BATCH_MATMUL
  of two 8-bit activations): the exact sums of (x - x_zp) * (w - w_zp) as the ONNX importer takes them
  (``onnx.ops_extra.int_conv`` / ``int_matmul``: the int32 VNNI conv where
  ``frontend_common.onnx_quant.vnni_conv`` allows, else float32 convs that sum the integers
  exactly), the int32 bias added, then requantized with in_scale * w_scale / out_scale; a
  fused activation is a clamp in the quantized domain. The conv runs NCHW between two
  transposes (consecutive ones cancel in SimplifyExpr, so a chain of convs stays NCHW). With
  int16 activations (16x8) the sums of their high and low bytes' 8-bit products, exact,
  requantized as LiteRT's int16 kernels (``_wide_requantize``);
- ADD, SUB, MUL (and int8 SQUARED_DIFFERENCE) of 8-bit tensors: TFLite's integer results on
  every input pair (``exact_binary``: a float32 form checked at import against TFLite's
  fixed point on all 256 x 256 pairs, else that fixed point itself); int16 ADD / SUB in that
  fixed point (same-shape ADD rounding each input once, as LiteRT's elementwise kernel);
  8-bit DIV a lookup in its 256 x 256 results (``exact_div``); PRELU in fixed point;
- data movement (RESHAPE, TRANSPOSE, PAD, MAX_POOL_2D, CONCATENATION, ...): the op on the
  quantized values themselves, copied as stored whatever the output's parameters where
  LiteRT's kernels copy them (``RAW_MOVES``), else (uint8 CONCATENATION) each input first
  requantized to the output's parameters where they differ, PAD padding with the zero point;
- elementwise ops of one input: a table of all 256 results built at import, as TFLite's
  LUT kernels (LOGISTIC, TANH, GELU, EXP, ...) or its integer kernels (``exact_unary``:
  LEAKY_RELU, HARD_SWISH, int8 ABS / SQRT / NEG / RSQRT); int16 ones a table of 65536
  (``exact_unary``, and ``exact_lut16`` for LiteRT's interpolated 16-bit tables);
- QUANTIZE of a quantized tensor: TFLite's Requantize in its fixed point, exactly;
- pools, reductions, resize and L2_NORMALIZATION as LiteRT's kernels (``exact_spatial``,
  ``exact_l2norm``);
- int16 SOFTMAX, LOGISTIC and TANH as LiteRT's integer kernels (``exact_softmax16``,
  ``exact_sigmoid16``);
- the rest (8-bit SOFTMAX, the detection head, ...): dequantize the inputs (constant weights and
  biases at import, per channel where they are so quantized), the float op's own converter,
  quantize the result (a step off TFLite's own fixed point on some values).

Rounding: the integer products' requantization is float32, ``round(acc * m + e)`` with e
TFLite's double-rounding offset (``double_rounding_offset``): TFLite's fixed-point result but
for float32's own error beside a boundary (7 of 4.4M conv outputs of an int8 MobileNetV2 a
step off LiteRT's kernels); ``fixed_point_multiply`` computes it exactly, but in every conv's
epilogue it cost 1.47x on a uint8 MobileNetV2, the offset's add 1.00-1.03x."""

from __future__ import annotations

from ... import expr as _expr
from ..common import infer_dtype
from . import (
    exact_binary,
    exact_lut16,
    exact_sigmoid16,
    exact_unary,
)
from .importer import (
    CONVERTERS,
    dequantize_array,
    quant_params,
)

# the converters by op family (sibling modules); the names this module held before it was split
# stay importable from it
from .quantized_binary import (
    _div,
    _exact_binary,
    _exact_binary_applies,
    _int16_add,
    _int16_add_applies,
    _prelu,
    _prelu_applies,
)
from .quantized_moves import (  # noqa: F401
    CLAMPS,
    MOVE_OPS,
    RAW_MOVES,
    _clamp,
    _move,
    _requantize_op,
)
from .quantized_products import (  # noqa: F401
    INTEGER_OPS,
    _batch_matmul,
    _batch_matmul_applies,
    _conv,
    _integer_product_applies,
    _transpose_conv,
    _transpose_conv_applies,
)

# (DOUBLE_ROUNDING and INT32_REQUANTIZE are switched in quantized_requantize, which reads them)
from .quantized_requantize import (  # noqa: F401
    DOUBLE_ROUNDING,
    INT32_REQUANTIZE,
    double_rounding_offset,
    fixed_point_multiply,
    quantize_multiplier,
)
from .quantized_spatial import (  # noqa: F401
    SPATIAL,
    _l2_normalize,
    _l2_normalize_applies,
    _spatial_applies,
)
from .quantized_tensor import (  # noqa: F401
    ACTIVATION,
    EIGHT_BIT,
    QTensor,
    _activation_q,
    _data_inputs,
    _eight_bit_to_eight_bit,
    _fused_bounds,
    _in_q,
    _int16_to_int16,
    _same_dtype,
    clamp_range,
    dequantize,
    is_quantized,
    qtensor,
    quantize,
    requantize,
)
from .quantized_unary import (  # noqa: F401
    TABLE_OPS,
    _int16_lut,
    _int16_sigmoid,
    _int16_softmax,
    _int16_unit_output,
    _integer_table,
    _table,
)


def _through_float(ctx):
    """Dequantize the quantized inputs, the float converter, quantize the (8/16-bit) outputs.
    Constant inputs (weights, biases) are dequantized at import, per channel where they are
    quantized so; activations per tensor."""
    for k in _data_inputs(ctx, constants=True):
        e = ctx.importer.fold(ctx.inputs[k])
        if isinstance(e, _expr.Constant):
            if e.data.dtype == "float32":  # (dequantized already: a float op's weights)
                continue
            q = quant_params(ctx.importer.subgraph.Tensors(ctx.input_ids[k]))
            ctx.inputs[k] = _expr.const(dequantize_array(e.data.numpy(), q))
        else:
            ctx.inputs[k] = dequantize(ctx.inputs[k], _in_q(ctx, k))
    out = CONVERTERS[ctx.name](ctx)
    outs = out if isinstance(out, list) else [out]
    res = []
    for k, e in enumerate(outs):
        q = qtensor(ctx, int(ctx.op.Outputs(k)))
        res.append(e if q is None or infer_dtype(e) != "float32" else
                   quantize(e, _activation_q(ctx, q, "output")))
    return res if isinstance(out, list) else res[0]


def converter(ctx):
    """The converter of an operator on quantized activations (by kind, see the module), or
    None for the float converters (float ops, dynamic-range models, DEQUANTIZE, QUANTIZE of
    a float tensor)."""
    if ctx.name == "DEQUANTIZE":
        return None
    if ctx.name == "QUANTIZE":
        q = qtensor(ctx, ctx.input_ids[0])
        return _requantize_op if q is not None and q.dtype != "float32" else None
    if not is_quantized(ctx):
        return None
    if ctx.name == "TRANSPOSE_CONV" and _transpose_conv_applies(ctx):
        return _transpose_conv
    if ctx.name in INTEGER_OPS:
        return INTEGER_OPS[ctx.name] if _integer_product_applies(ctx) else _through_float
    if ctx.name in exact_binary.OPS and _exact_binary_applies(ctx):
        return _exact_binary
    if ctx.name in ("ADD", "SUB") and _int16_add_applies(ctx):
        return _int16_add
    if ctx.name == "DIV" and _exact_binary_applies(ctx):
        return _div
    if ctx.name == "PRELU" and _prelu_applies(ctx):
        return _prelu
    if ctx.name == "BATCH_MATMUL" and _batch_matmul_applies(ctx):
        return _batch_matmul
    if ctx.name in CLAMPS:
        return _clamp
    if ctx.name in TABLE_OPS and _eight_bit_to_eight_bit(ctx):
        return _table
    if ctx.name in exact_unary.OPS and _eight_bit_to_eight_bit(ctx) and _same_dtype(ctx) and (
            ctx.name not in exact_unary.INT8_ONLY or _in_q(ctx, 0).dtype == "int8"):
        return _integer_table
    if ctx.name in exact_unary.INT16 and _int16_to_int16(ctx):
        return _integer_table
    if ctx.name in exact_lut16.OPS and _int16_to_int16(ctx):
        return _int16_lut
    if ctx.name == "SOFTMAX" and _int16_unit_output(ctx):
        return _int16_softmax
    if ctx.name in exact_sigmoid16.OPS and _int16_unit_output(ctx):
        return _int16_sigmoid
    if ctx.name in SPATIAL and _spatial_applies(ctx):
        return SPATIAL[ctx.name]
    if ctx.name == "L2_NORMALIZATION" and _l2_normalize_applies(ctx):
        return _l2_normalize
    if ctx.name in MOVE_OPS and (_fused_bounds(ctx) == (None, None) or
                                 ctx.name == "MAX_POOL_2D" and _fused_bounds(ctx) is not None):
        return _move
    return _through_float
