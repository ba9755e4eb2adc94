"""Quantized data movement, clamps and QUANTIZE of a quantized tensor: the op on the stored
values (requantized to the output's parameters where LiteRT's kernels do), and LiteRT's
fixed-point Requantize."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op
from . import (
    fixed_point,
)
from .importer import (
    CONVERTERS,
    pool_window,
)
from .quantized_tensor import _data_inputs, _fused_bounds, _in_q, _out_q, clamp_range, requantize

# ops that only move or select values: computed on the quantized values themselves
MOVE_OPS = frozenset({
    "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "STRIDED_SLICE", "SLICE", "SPLIT",
    "SPLIT_V", "PACK", "UNPACK", "GATHER", "GATHER_ND", "TILE", "BROADCAST_TO",
    "RESIZE_NEAREST_NEIGHBOR", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "MAX_POOL_2D", "REDUCE_MAX",
    "REDUCE_MIN", "CONCATENATION", "PAD", "PADV2", "MIRROR_PAD", "REVERSE_V2", "SPACE_TO_BATCH_ND",
    "BATCH_TO_SPACE_ND", "MAXIMUM", "MINIMUM"})


# clamps: the input requantized to the output's parameters, then clamped (float bounds)
CLAMPS = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0),
          "RELU_0_TO_1": (0.0, 1.0)}


# moves whose LiteRT kernels copy the stored values whatever the parameters of their inputs
# and output (checked one by one against LiteRT with differing ones: every moved value was up
# to 59 steps off when rescaled); the other moves' kernels require equal parameters (but
# uint8 CONCATENATION, which rescales each input as ``requantize`` does)
RAW_MOVES = frozenset({
    "RESHAPE", "SQUEEZE", "TRANSPOSE", "STRIDED_SLICE", "SLICE", "SPLIT", "SPLIT_V", "GATHER",
    "GATHER_ND", "TILE", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "PAD", "REVERSE_V2", "MAX_POOL_2D",
    "MAXIMUM", "MINIMUM", "RESIZE_NEAREST_NEIGHBOR"})


def _move(ctx):
    """The op on quantized values, each data input requantized to the output's parameters
    (but for ``RAW_MOVES``, as LiteRT); a fused activation (MAX_POOL_2D) clamps to its range
    in the output's parameters, as LiteRT's CalculateActivationRangeQuantized."""
    qo = _out_q(ctx)
    for k in _data_inputs(ctx):
        if ctx.name not in RAW_MOVES:
            ctx.inputs[k] = requantize(ctx.inputs[k], _in_q(ctx, k), qo)
    if ctx.name == "PAD":
        pads = ctx.value(1, "the paddings").astype("int64")
        return _op.nn.pad(ctx.inputs[0], [tuple(p) for p in pads],
                          pad_value=_expr.const(np.array(qo.z, qo.dtype)))
    bounds = _fused_bounds(ctx)
    if bounds == (None, None):
        return CONVERTERS[ctx.name](ctx)
    qlo, qhi = clamp_range(qo, *bounds)
    return _op.clip(pool_window(ctx, "max"), float(qlo), float(qhi))


def _clamp(ctx):
    lo, hi = CLAMPS[ctx.name]
    return requantize(ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx), lo, hi)


def _requantize_op(ctx):
    """QUANTIZE of an already quantized tensor: a rescale between two quantizations, exactly
    as LiteRT's Requantize computes it: (x - zero point) times in_scale / out_scale in fixed
    point + the output's zero point, saturated; its vectorized loop (NEON, 16 values at a
    time) rounds the final shift half up, the scalar tail half away from zero (through
    gemmlowp's rounding everywhere, 38-203 of 3072 values were a step off)."""
    q_in, q_out = _in_q(ctx, 0), _out_q(ctx)
    if q_in.same(q_out):
        return ctx.inputs[0]
    v = _op.cast(ctx.inputs[0], "int64")
    if q_in.z:
        v = _op.subtract(v, _expr.const(np.array(q_in.z, "int64"), "int64"))
    m0, shift = fixed_point.quantize_multiplier(np.float64(q_in.s) / np.float64(q_out.s))
    # (from int16, LiteRT's loop is scalar: half away from zero everywhere; 6 of 4042 int16
    # -> int8 values a step off with the 8-bit NEON blocks)
    blocks = None if q_in.dtype == "int16" else _neon_blocks(ctx)
    v = fixed_point.multiply_expr(v, m0, shift, blocks)
    if q_out.z:
        v = _op.add(v, _expr.const(np.array(q_out.z, "int64"), "int64"))
    qlo, qhi = QRANGE[q_out.dtype]
    return _op.cast(_op.clip(v, float(qlo), float(qhi)), q_out.dtype)


def _neon_blocks(ctx):
    """Which values of input 0 LiteRT's NEON loops cover (the first ``size // 16 * 16`` in
    the model's own NHWC order): True for all, None for none, else an int64 0/1 mask laid out
    as ``ctx.inputs[0]`` (NCHW where ``layout.convert_in_nchw`` moved it)."""
    shape = [int(d) for d in ctx.importer.subgraph.Tensors(ctx.input_ids[0]).ShapeAsNumpy()]
    size = int(np.prod(shape))
    covered = size // fixed_point.NEON_BLOCK * fixed_point.NEON_BLOCK
    if covered == size:
        return True
    if not covered:
        return None
    mask = (np.arange(size) < covered).astype("int64").reshape(shape)
    if ctx.layout == "NCHW" and mask.ndim == 4:
        mask = mask.transpose(0, 3, 1, 2)
    return _expr.const(np.ascontiguousarray(mask), "int64")
