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

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op
from ..common import ImportError_, const_value, infer_dtype, infer_shape
from ..onnx.ops_extra import add_to_product, int_conv, int_matmul
from . import (
    exact_binary,
    exact_div,
    exact_l2norm,
    exact_lut16,
    exact_sigmoid16,
    exact_softmax16,
    exact_spatial,
    exact_unary,
    fixed_point,
    products16,
)
from .importer import (
    _TENSOR_TYPES,
    CONVERTERS,
    _conv_pads,
    _per_axis,
    dequantize_array,
    pool_window,
    quant_params,
    transpose_conv_window,
)

EIGHT_BIT = ("int8", "uint8")  # the weight dtypes of the integer products
ACTIVATION = ("int8", "uint8", "int16")  # int16: the "16x8" models (int8 weights)

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

# elementwise transcendental functions of one input: on 8-bit values, a table of the 256
# results (one gather: 0.05 ms on 128x1024 int8, where GELU computed in float took 0.10, TANH
# 0.08, LOGISTIC 0.061, LOG 0.097, SIN 0.093, ELU 0.057, EXP 0.051; HARD_SWISH 0.033, SQRT
# 0.027 and RSQRT 0.040 stay cheaper in float)
TABLE_OPS = frozenset({"LOGISTIC", "TANH", "GELU", "ELU", "EXP", "LOG", "SIN", "COS"})

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


# ------------------------------------------------------------------ integer products
class _IntContext:
    """What ``int_conv`` / ``int_matmul`` ask of a converter context, for this importer."""

    error = ImportError_

    def __init__(self, ctx):
        self.fold, self.name = ctx.importer.fold, ctx.name

    shape = staticmethod(infer_shape)
    dtype = staticmethod(infer_dtype)

    @staticmethod
    def ndim(e) -> int:
        return len(infer_shape(e))

    def maybe_value(self, e):
        return None if e is None else const_value(self.fold(e))

    @staticmethod
    def const(value, dtype: str | None = None):
        arr = np.asarray(value, dtype=dtype)
        return _expr.const(arr, str(arr.dtype))

    def fail(self, detail: str) -> ImportError_:
        return ImportError_(f"{self.name}: {detail}")


def _weight(ctx, k: int, out_axis: int):
    """(value, QTensor) of the constant 8-bit weight input ``k``, whose output channels are
    ``out_axis`` of the TFLite layout; clear errors otherwise."""
    q = qtensor(ctx, ctx.input_ids[k])
    e = ctx.importer.fold(ctx.inputs[k])
    if q is None or not isinstance(e, _expr.Constant):
        raise ctx.fail("the weight must be a constant quantized tensor")
    if q.dtype not in EIGHT_BIT:
        raise ctx.fail(f"weight tensor {q.name!r} is {q.dtype}: int8 or uint8 weights are "
                       "supported")
    if q.scale.size > 1 and q.dim != out_axis:
        raise ctx.fail(f"weight tensor {q.name!r} is quantized along axis {q.dim}; per-channel "
                       f"weights must be quantized along the output channels (axis {out_axis})")
    return e.data.numpy(), q


def _bias(ctx, k: int, wide: bool = False):
    """The constant bias input ``k`` as int64 (None without one): int32, or with ``wide`` (16x8
    operators) int32 or int64."""
    if len(ctx.inputs) <= k or ctx.inputs[k] is None:
        return None
    v = ctx.value(k, "the bias")
    if v.dtype != np.int32 and not (wide and v.dtype == np.int64):
        raise ctx.fail(f"a quantized operator's bias must be int32{' or int64' if wide else ''}"
                       f", got {v.dtype}")
    return v.astype("int64")


def _zp_expr(zp: np.ndarray, dtype: str):
    """A zero point for ``int_conv``: None when all zero, else a scalar or per-channel const."""
    if not np.any(zp):
        return None
    v = zp.reshape(-1)
    return _expr.const((v[:1].reshape(()) if v.size == 1 else v).astype(dtype))


def quantize_multiplier(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's QuantizeMultiplier, elementwise: ``m = m0 * 2**(shift - 31)`` with ``m0`` an
    int32 in [2**30, 2**31) (the fraction rounded half away from zero), as int64 arrays."""
    q, shift = np.frexp(np.asarray(m, "float64"))
    m0 = np.floor(q * 2.0**31 + 0.5).astype("int64")
    top = m0 == 2**31
    m0, shift = np.where(top, m0 // 2, m0), np.where(top, shift + 1, shift).astype("int64")
    tiny = shift < -31
    return np.where(tiny, 0, m0), np.where(tiny, 0, shift)


def fixed_point_multiply(acc, mult: np.ndarray, axis: int, nd: int, half_up=False):
    """TFLite's MultiplyByQuantizedMultiplier of the integers ``acc`` (int32, or float32
    holding integers) by ``mult`` (per tensor or along ``axis``), in int64: the doubling high
    multiply by m0 (rounding half up, (p + 2**30) >> 31), then the rounding right shift
    (half away from zero: + 2**(s-1) - 1 for negatives, >> s; where ``half_up`` (True, or a
    bool per multiplier), as NEON's rounding shift: + 2**(s-1), >> s)."""
    m0, shift = quantize_multiplier(mult)
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)

    def c(v):
        return _per_axis(np.asarray(v, "int64"), axis, nd, "int64")

    v = _op.cast(acc, "int64")
    if left.any():
        v = _op.left_shift(v, c(left))
    h = _op.right_shift(_op.add(_op.multiply(v, c(m0)), c(2**30)), c(31))
    if not right.any():
        return h
    half = np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0)
    away = (right > 0) & np.logical_not(np.broadcast_to(half_up, right.shape))
    if not away.any():
        return _op.right_shift(_op.add(h, c(half)), c(right))
    sign = _op.right_shift(h, c(63))  # -1 for negatives, else 0
    if not away.all():  # (no rounding where the shift is 0; half up where asked)
        sign = _op.multiply(sign, c(away.astype("int64")))
    return _op.right_shift(_op.add(_op.add(h, c(half)), sign), c(right))


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


def _requantize_acc(ctx, acc, acc_dt: str, bias, mult: np.ndarray, axis: int, q_out: QTensor,
                    ties_away: bool = False):
    """round((acc + bias) * mult) + zero point, clamped to the fused activation's range;
    ``mult`` per tensor or per channel along ``axis``. float32 and Relay's round (half to
    even), not TFLite's fixed point (``fixed_point_multiply``): that costs 1.47x on a uint8
    MobileNetV2 (int64 products in every conv's epilogue) for one-step differences."""
    nd = len(infer_shape(acc))
    if bias is not None:
        b = _per_axis(bias.astype(acc_dt), axis, nd, acc_dt)
        acc = add_to_product(acc, b, b.data.numpy())
    v = _op.cast(acc, "float32") if acc_dt != "float32" else acc
    v = _op.multiply(v, _per_axis(mult.astype("float32"), axis, nd, "float32"))
    bounds = _activation_bounds(ctx)
    if DOUBLE_ROUNDING:
        e = _per_axis(double_rounding_offset(mult), axis, nd, "float32")
        if ties_away:  # (gemmlowp's second rounding: half away from zero, so - e below 0)
            e = _op.where(_op.less(v, _expr.const(np.array(0.0, "float32"))), _op.negative(e), e)
        v = _op.add(v, e)
    return _saturate(_op.round(v), q_out, *bounds)


# add TFLite's double-rounding offset before the conv requantization's round (see below)
DOUBLE_ROUNDING = True
# 16x8 convs requantize their int32 sums in int32 (``fixed_point.multiply_wide_int32_expr``)
# where the bounds allow, else in float64 (False: always float64; the benchmark's baseline)
INT32_REQUANTIZE = True


def double_rounding_offset(mult: np.ndarray) -> np.ndarray:
    """e (float32, per multiplier) with ``round(acc * m + e)`` TFLite's requantization of the
    integer ``acc`` but for float32's own error at the boundary and exact ties.

    TFLite's int8 conv and fully connected kernels (ruy's multiplier) round twice, both times
    half up: for the multiplier m0 * 2**-(31+r), h = floor(acc * m0 / 2**31 + 1/2), then
    floor((h + 2**(r-1)) / 2**r); nested floors of integers make that floor(acc * m + 1/2 +
    e), e = 2**-(r+1). (BATCH_MATMUL's gemmlowp rounding shift rounds half away from zero:
    floor(acc * m + 1/2 - e) below zero.) So a value up to e under a half rounds up where one
    rounding (``round(acc * m)``) rounds it down: 12404 of 4.4M conv outputs and 5461 of 2.3M depthwise outputs a step off on an int8
    MobileNetV2 against LiteRT's kernels, 448 and 1 with e (one more add in the epilogue)."""
    _, shift = quantize_multiplier(np.asarray(mult).reshape(-1))
    return np.where(shift < 0, np.ldexp(1.0, np.minimum(shift, 0) - 1), 0.0).astype("float32")


def _conv(ctx, depthwise: bool):
    x = ctx.inputs[0]
    qx, qo = _in_q(ctx, 0), _out_q(ctx)
    opt = ctx.options()
    _, h, wd, c = infer_shape(x)
    w, qw = _weight(ctx, 1, 3 if depthwise else 0)
    if depthwise:  # (1, kh, kw, C*M) -> (C*M, 1, kh, kw)
        w_oihw, groups = w.transpose(3, 0, 1, 2), c
    else:  # (O, kh, kw, I) -> (O, I, kh, kw)
        w_oihw = w.transpose(0, 3, 1, 2)
        if c % w.shape[3]:
            raise ctx.fail(f"input channels {c} do not match the filter's {w.shape[3]}")
        groups = c // w.shape[3]
    o, _, kh, kw = w_oihw.shape
    sh, sw = opt.StrideH(), opt.StrideW()
    dh, dw = opt.DilationHFactor(), opt.DilationWFactor()
    pads = _conv_pads(opt.Padding(), h, wd, kh, kw, sh, sw, dh, dw)
    attrs = {"kernel_shape": [kh, kw], "strides": [sh, sw], "dilations": [dh, dw],
             "pads": list(pads), "group": groups}
    ictx = _IntContext(ctx)
    if qx.dtype == "int16":  # (16x8: int64 sums, LiteRT's 64-bit requantization)
        one = products16.sums_dtype(qx.z, w_oihw, qw.zp, depthwise) \
            if depthwise or groups == 1 else None
        if one is not None:  # (one op on the int16 data)
            acc = products16.conv_sums(_op.transpose(x, (0, 3, 1, 2)), w_oihw, one, (sh, sw),
                                       pads, (dh, dw), groups)
        else:  # (the 8-bit kernels on the high and low bytes)
            wc = _expr.const(np.ascontiguousarray(w_oihw))
            acc = _wide_sums(lambda part: int_conv(ictx, part, None, wc, _zp_expr(
                qw.zp, qw.dtype), attrs), _op.transpose(x, (0, 3, 1, 2)), qx, w_oihw, qw)
        out = _wide_requantize(ctx, acc, _bias(ctx, 2, wide=True), qx, qw, qo, 1, 4, w_oihw)
        return _op.transpose(out, (0, 2, 3, 1))
    acc, acc_dt = int_conv(ictx, _op.transpose(x, (0, 3, 1, 2)), _zp_expr(qx.zp, qx.dtype),
                           _expr.const(np.ascontiguousarray(w_oihw)),
                           _zp_expr(qw.zp, qw.dtype), attrs)
    mult = (qx.s * qw.scale.astype("float64") / qo.s).reshape(-1)
    # LiteRT's uint8 depthwise kernel (uint8 weights) rounds its final shift half away from
    # zero (gemmlowp), its other convs half up (14 of 6912 uint8 depthwise outputs a step off,
    # 0 now); uint8 activations with int8 weights, which LiteRT does not run, stay half up
    away = depthwise and qx.dtype == "uint8" and qw.dtype == "uint8"
    out = _requantize_acc(ctx, acc, acc_dt, _bias(ctx, 2), mult, 1, qo, ties_away=away)
    return _op.transpose(out, (0, 2, 3, 1))


def _fully_connected(ctx):
    x = ctx.inputs[0]
    qx, qo = _in_q(ctx, 0), _out_q(ctx)
    w, qw = _weight(ctx, 1, 0)
    units, k = w.shape
    xs = infer_shape(x)
    flat = x if len(xs) == 2 else _op.reshape(x, (-1, k))
    if qx.dtype == "int16":  # (16x8: int64 sums, LiteRT's 64-bit requantization)
        if products16.sums_dtype(qx.z, w, qw.zp, False) is not None:  # (one op)
            acc = products16.dense_sums(flat, w)
        else:  # (the 8-bit kernels on the high and low bytes)
            wc = _expr.const(np.ascontiguousarray(w.T))
            acc = _wide_sums(lambda part: int_matmul(_IntContext(ctx), part, None, wc,
                                                     _zp_expr(qw.zp, qw.dtype)), flat, qx, w, qw)
        out = _wide_requantize(ctx, acc, _bias(ctx, 2, wide=True), qx, qw, qo, 1, 2, w)
    else:
        acc, acc_dt = int_matmul(_IntContext(ctx), flat, _zp_expr(qx.zp, qx.dtype),
                                 _expr.const(np.ascontiguousarray(w.T)),
                                 _zp_expr(qw.zp, qw.dtype))
        mult = (qx.s * qw.scale.astype("float64") / qo.s).reshape(-1)
        out = _requantize_acc(ctx, acc, acc_dt, _bias(ctx, 2), mult, 1, qo)
    opt = ctx.options()
    if opt is not None and opt.KeepNumDims() and len(xs) != 2:
        out = _op.reshape(out, xs[:-1] + (units,))
    return out


def _wide_sums(product, x, qx: QTensor, w: np.ndarray, qw: QTensor):
    """The exact sums of int16 activations ``x`` times 8-bit weights, float64, where
    ``products16`` takes no one op (zero points, sums past its bounds): ``product`` (an
    8-bit integer product of one data expression: (sums, their dtype)) of the high bytes (int8)
    and of the low bytes (uint8), 256 * high + low; the 8-bit kernels (VNNI, or float32 pieces
    exact by construction) compute both. (float64 products were 15x slower on a 16x8
    MobileNetV2.) A zero point (LiteRT takes none) is subtracted first, in int32 pieces of
    the same split. ``w``: the weights, output channels first, to bound the sums."""
    v = x if not qx.z else _op.subtract(_op.cast(x, "int32"), _expr.const(
        np.array(qx.z, "int32"), "int32"))
    dt = "int16" if not qx.z else "int32"
    high = _op.cast(_op.right_shift(v, _expr.const(np.array(8, dt), dt)), "int8" if not qx.z
                    else "int16")
    low = _op.cast(_op.bitwise_and(v, _expr.const(np.array(255, dt), dt)), "uint8")
    if qx.z:  # (x - zp in [-65535, 65535]: its high part past int8, split once more)
        top = _op.cast(_op.right_shift(high, _expr.const(np.array(8, "int16"), "int16")),
                       "int8")
        mid = _op.cast(_op.bitwise_and(high, _expr.const(np.array(255, "int16"), "int16")),
                       "uint8")
        parts = [(top, 65536), (mid, 256), (low, 1)]
    else:
        parts = [(high, 256), (low, 1)]
    # int32 where every partial sum fits (the parts' products stay int32 in memory: in
    # float64 the materialized one cost 2.2x its conv), else float64 (exact below 2**53)
    span = products16.channel_weight_span(w, qw.zp)
    narrow = not qx.z and span * (32768 + 255) < 2**31
    dt = "int32" if narrow else "float64"
    acc = None
    for part, weight in parts:
        s, _ = product(part)
        s = _op.cast(s, dt)
        if weight != 1:
            s = _op.multiply(s, _expr.const(np.array(weight, dt), dt))
        acc = s if acc is None else _op.add(acc, s)
    return _op.cast(acc, "float64") if narrow else acc


def _wide_requantize(ctx, acc, bias, qx: QTensor, qw: QTensor, qo: QTensor, axis: int,
                     nd: int, w: np.ndarray):
    """A 16x8 product's exact sums ``acc`` (float64; a conv's int32) + the bias as LiteRT's
    int16 kernels finish them, per channel along ``axis``: the convs through the 64-bit
    MultiplyByQuantizedMultiplier (a Q15 multiplier, one rounding half up:
    ``fixed_point.multiply_wide``), FULLY_CONNECTED in double (the sum times the real
    multiplier, rounded half away from zero: 0 of 1.44M values off LiteRT; the Q15 form was
    off on 5%, Q31 fixed point on 0.15%); + the zero point, clamped to the fused activation's
    range. (float32, as the 8-bit products take it, was a step off on 2-4% of the outputs.)

    In float64, exactly: the Q15 multiplier times 2**-shift is a float64, and its product
    with a sum below 2**38 (bounded here from the weights ``w``, output channels first) is
    exact, so ``floor(acc * m + 1/2)`` is the integer form's result (a 16x8 MobileNetV2 1.07
    -> 1.00 ms against int64); past the bound, int64. A conv's int32 sums (``products16``)
    bounded below 2**31 with the bias take the integer form in int32 alone
    (``fixed_point.multiply_wide_int32_expr``: 16 lanes a vector where float64 has 8)."""
    mult = (np.float64(qx.s) * qw.scale.astype("float64") / np.float64(qo.s)).reshape(-1)
    bound = products16.channel_weight_span(w, qw.zp) * (32768 + abs(qx.z)) + (
        0 if bias is None else int(np.abs(bias).max(initial=0)))
    if infer_dtype(acc) == "int32":  # (a conv's int32 sums: ``products16``)
        m0, shift = quantize_multiplier(mult)
        if INT32_REQUANTIZE and ctx.name != "FULLY_CONNECTED" and bound < 2**31 and \
                fixed_point.int32_shifts(m0, shift):
            if bias is not None:
                acc = _op.add(acc, _per_axis(bias.astype("int32"), axis, nd, "int32"))
            v = fixed_point.multiply_wide_int32_expr(acc, m0, shift, axis, nd)
            if qo.z:
                v = _op.add(v, _expr.const(np.array(qo.z, "int32"), "int32"))
            return _clamp_fused(ctx, v, qo)
        acc = _op.cast(acc, "float64")
    if bias is not None:
        acc = _op.add(acc, _per_axis(bias.astype("float64"), axis, nd, "float64"))
    if ctx.name == "FULLY_CONNECTED":
        v = _op.multiply(acc, _per_axis(mult, axis, nd, "float64"))
        v = _op.multiply(_op.sign(v), _op.floor(_op.add(
            _op.abs(v), _expr.const(np.array(0.5, "float64"), "float64"))))
    elif bound < 2**38:
        reduced, total = fixed_point.reduced_multiplier(*quantize_multiplier(mult))
        m = np.ldexp(reduced.astype("float64"), -total)
        v = _op.floor(_op.add(_op.multiply(acc, _per_axis(m, axis, nd, "float64")),
                              _expr.const(np.array(0.5, "float64"), "float64")))
    else:
        v = fixed_point.multiply_wide_expr(_op.cast(acc, "int64"), *quantize_multiplier(mult),
                                           axis, nd)
        v = _op.cast(v, "float64")
    if qo.z:
        v = _op.add(v, _expr.const(np.array(qo.z, "float64"), "float64"))
    return _clamp_fused(ctx, v, qo)


def _transpose_conv(ctx):
    """8-bit TRANSPOSE_CONV as LiteRT's integer kernel: the exact sums of (x - x_zp) *
    (w - w_zp) (float32 transposed conv of integers: exact while below 2**24, checked at
    import from the shapes; else float64), the int32 bias added, then each channel's
    MultiplyByQuantizedMultiplier (in_scale * w_scale / out_scale, exactly:
    ``fixed_point_multiply``; the final shift rounds half up where LiteRT's vectorized
    requantization does, else half away from zero), + zero point, clamped. Through float it was 5-10 of 5184 values a step off."""
    x = ctx.inputs[2]
    qx, qo = _in_q(ctx, 2), _out_q(ctx)
    w, qw = _weight(ctx, 1, 0)
    o, kh, kw, i = w.shape
    strides = ctx.options().StrideH(), ctx.options().StrideW()
    taps = -(-kh // strides[0]) * -(-kw // strides[1]) * i
    big = max(abs(v) for v in QRANGE[qx.dtype]) + abs(qx.z)
    wmax = int(np.abs(w.astype("int64") - qw.zp.reshape(-1, 1, 1, 1)).max(initial=0))
    bias = _bias(ctx, 3)
    bound = taps * big * wmax + (0 if bias is None else int(np.abs(bias).max(initial=0)))
    acc_dt = "float32" if bound < 2**24 else "float64"
    wz = (w.astype("int64") - qw.zp.reshape(-1, 1, 1, 1)).astype(acc_dt)
    xf = _op.cast(x, acc_dt)
    if qx.z:
        xf = _op.subtract(xf, _expr.const(np.array(qx.z, acc_dt)))
    ctx.inputs[1], ctx.inputs[2] = _expr.const(wz), xf
    acc = transpose_conv_window(ctx)
    if bias is not None:
        acc = _op.add(acc, _expr.const(bias.astype(acc_dt)))
    mult = (np.float64(qx.s) * qw.scale.astype("float64") / np.float64(qo.s)).reshape(-1)
    # LiteRT rounds half up in its vectorized loops: uint8's everywhere, int8's per-channel
    # one on blocks of 8 channels, the channels past the last block half away from zero
    half_up = True if qx.dtype == "uint8" else np.arange(o) < o // 8 * 8
    v = fixed_point_multiply(acc, np.resize(mult, o), 3, 4, half_up)
    if qo.z:
        v = _op.add(v, _expr.const(np.array(qo.z, "int64"), "int64"))
    return _clamp_fused(ctx, v, qo)


def _integer_product_applies(ctx) -> bool:
    """8-bit input and output, or (16x8) both int16: LiteRT's integer kernels take one dtype
    in and out (an int16 product to an 8-bit output goes through float)."""
    qs = [qtensor(ctx, i) for i in (ctx.input_ids[0], int(ctx.op.Outputs(0)))]
    if any(q is None for q in qs):
        return True  # (the converter names what is missing)
    wide = [q.dtype == "int16" for q in qs]
    return all(wide) or not any(wide)


INTEGER_OPS = {"CONV_2D": lambda ctx: _conv(ctx, False),
               "DEPTHWISE_CONV_2D": lambda ctx: _conv(ctx, True),
               "FULLY_CONNECTED": _fully_connected}


# ------------------------------------------------------------------ the other kinds
def _data_inputs(ctx, constants: bool = False) -> list[int]:
    """The inputs holding quantized 8/16-bit values (not shapes, axes, paddings); with
    ``constants``, also quantized int32/int64 constants (biases)."""
    wide = ("int32", "int64") if constants else ()
    return [k for k, i in enumerate(ctx.input_ids)
            if ctx.inputs[k] is not None and qtensor(ctx, i) is not None and
            (qtensor(ctx, i).dtype in ACTIVATION or qtensor(ctx, i).dtype in wide and
             isinstance(ctx.importer.fold(ctx.inputs[k]), _expr.Constant))]


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


def _table(ctx):
    """An elementwise op on 8-bit values as TFLite computes its LUT kernels: the float
    converter evaluated at import on every value of the input's dtype (dequantized), each
    result quantized to the output as LiteRT's LUT builder does it (the float32 result times
    the float32 inverse of the output scale, rounded half away from zero; NaN -> the zero
    point: dividing in float64 put int8 ELU's exact halves a step off); the op is then one
    ``take`` from that 256-entry table."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    lo, hi = QRANGE[qx.dtype]
    levels = ((np.arange(lo, hi + 1) - qx.z) * np.float64(qx.s)).astype("float32")
    ctx.inputs[0] = _expr.const(levels, "float32")
    values = ctx.importer.fold(CONVERTERS[ctx.name](ctx))
    if not isinstance(values, _expr.Constant):
        raise ctx.fail("the lookup table did not fold to a constant")
    inverse = np.float32(1.0) / np.float32(qo.s)
    f = np.nan_to_num(values.data.numpy().astype("float32") * inverse, nan=0.0).astype("float64")
    olo, ohi = QRANGE[qo.dtype]
    table = np.clip(np.sign(f) * np.floor(np.abs(f) + 0.5) + qo.z, olo, ohi).astype(qo.dtype)
    return exact_unary.lookup(x, table, qx.dtype)


def _integer_table(ctx):
    """LEAKY_RELU / HARD_SWISH as TFLite's integer kernels compute them (``exact_unary``):
    a lookup in their 256 results."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    t = exact_unary.table(ctx.name, qx.dtype, (qx.s, qx.z), (qo.s, qo.z), ctx.options())
    return exact_unary.lookup(x, t, qx.dtype)


def _int16_lut(ctx):
    """int16 LOG / EXP / GELU as LiteRT's interpolated 16-bit tables (``exact_lut16``): one
    lookup in the 65536 results."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    opt = ctx.options()
    approximate = bool(opt.Approximate()) if opt is not None and hasattr(
        opt, "Approximate") else False
    t = exact_lut16.table(ctx.name, (qx.s, qx.z), (qo.s, qo.z), approximate)
    return exact_unary.lookup(x, t, "int16")


def _int16_unit_output(ctx) -> bool:
    """int16 in and out with the parameters LiteRT's int16 SOFTMAX / LOGISTIC / TANH require
    (zero points 0, the output quantized 1 / 32768); other parameters, which LiteRT rejects,
    go through float."""
    if not _int16_to_int16(ctx):
        return False
    qx, qo = _in_q(ctx, 0), _out_q(ctx)
    return not qx.z and not qo.z and qo.s == np.float32(1 / 32768)


def _int16_softmax(ctx):
    """int16 SOFTMAX as LiteRT's integer kernel (``exact_softmax16``)."""
    qx = _in_q(ctx, 0)
    opt = ctx.options()
    beta = float(opt.Beta()) if opt is not None else 1.0
    return exact_softmax16.softmax(ctx.inputs[0], qx.s, beta)


def _int16_sigmoid(ctx):
    """int16 LOGISTIC / TANH as LiteRT's kernels (``exact_sigmoid16``): one lookup in the
    65536 results."""
    qx = _in_q(ctx, 0)
    return exact_unary.lookup(ctx.inputs[0], exact_sigmoid16.results(ctx.name, qx.s), "int16")


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


def _batch_matmul(ctx):
    """BATCH_MATMUL of two 8-bit activations as TFLite's integer kernel: the products of the
    inputs less their zero points summed (in float32, exact while the sums stay below 2**24:
    a contraction of up to 258), then requantized as the convs (``_requantize_acc``: the
    multiplier in_scale1 * in_scale2 / out_scale, TFLite's double-rounding offset). Through
    float (dequantized inputs) it was a step off on 467 of 196608 outputs of the int8
    transformer encoder against LiteRT."""
    q1, q2, qo = _in_q(ctx, 0), _in_q(ctx, 1), _out_q(ctx)
    for k, q in ((0, q1), (1, q2)):
        v = _op.cast(ctx.inputs[k], "float32")
        ctx.inputs[k] = v if not q.z else _op.subtract(v, _expr.const(np.array(q.z, "float32")))
    acc = CONVERTERS[ctx.name](ctx)
    mult = np.array([np.float64(q1.s) * np.float64(q2.s) / np.float64(qo.s)])
    return _requantize_acc(ctx, acc, "float32", None, mult, 0, qo, ties_away=True)


def _batch_matmul_applies(ctx) -> bool:
    """Two non-constant inputs and the output quantized per tensor in 8 bits."""
    qs = [qtensor(ctx, i) for i in [*ctx.input_ids[:2], int(ctx.op.Outputs(0))]]
    return len(ctx.inputs) == 2 and all(
        not isinstance(ctx.importer.fold(e), _expr.Constant) for e in ctx.inputs) and all(
        q is not None and q.dtype in EIGHT_BIT and q.scale.size == 1 and q.zp.size <= 1
        for q in qs)


def _transpose_conv_applies(ctx) -> bool:
    """8-bit per-tensor input and output of one dtype, constant 8-bit weights."""
    qs = [qtensor(ctx, ctx.input_ids[2]), qtensor(ctx, int(ctx.op.Outputs(0))),
          qtensor(ctx, ctx.input_ids[1])]
    return all(q is not None and q.dtype in EIGHT_BIT for q in qs) and \
        qs[0].scale.size == 1 and qs[1].scale.size == 1 and qs[0].dtype == qs[1].dtype and \
        isinstance(ctx.importer.fold(ctx.inputs[1]), _expr.Constant)


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
    """Whether LiteRT runs a binary op elementwise, not broadcast: both static shapes equal
    once the shorter is padded with leading ones."""
    s1, s2 = (list(infer_shape(x)) for x in (x1, x2))
    if not all(isinstance(d, int) for d in s1 + s2):
        return False
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


# ------------------------------------------------------------------ pools, reductions, resize
def _average_pool(ctx):
    """AVERAGE_POOL_2D as TFLite's integer kernel (``exact_spatial.average_pool``)."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    opt = ctx.options()
    shape = infer_shape(x)
    h, w = (shape[1], shape[2]) if ctx.layout == "NHWC" else (shape[2], shape[3])
    kh, kw, sh, sw = opt.FilterHeight(), opt.FilterWidth(), opt.StrideH(), opt.StrideW()
    pads = _conv_pads(opt.Padding(), h, w, kh, kw, sh, sw, 1, 1)
    qlo, qhi = clamp_range(qo, *_fused_bounds(ctx))
    return exact_spatial.average_pool(x, qx.dtype, ctx.layout, (kh, kw), (sh, sw), pads, qlo,
                                      qhi)


def _reduction(ctx):
    """MEAN / SUM as TFLite's kernels (``exact_spatial``). The path LiteRT takes depends on
    the model's own (NHWC) shape and axes, read from the flatbuffer: ``ctx.inputs`` may be the
    NCHW form (``layout.convert_in_nchw``)."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    nd = len(infer_shape(x))
    axes = sorted({int(a) % nd for a in ctx.value(1, "the reduction axes").reshape(-1)})
    opt = ctx.options()
    keep = bool(opt.KeepDims()) if opt is not None else False
    qi, qout = (qx.s, qx.z), (qo.s, qo.z)
    if ctx.name == "SUM":
        return exact_spatial.reduce_sum(x, axes, keep, qx.dtype, qi, qout)
    tfl_shape = [int(d) for d in ctx.importer.subgraph.Tensors(ctx.input_ids[0]).ShapeAsNumpy()]
    tfl_axes = const_value(ctx.importer.fold(ctx.importer.tensor_expr(ctx.input_ids[1])))
    fast = exact_spatial.is_fast_mean(tfl_shape, np.asarray(tfl_axes).reshape(-1), keep)
    channel_axis = 1 if ctx.layout == "NCHW" else nd - 1
    return exact_spatial.mean(x, axes, keep, qx.dtype, qi, qout, fast, channel_axis,
                              tfl_shape[-1])


def _resize_bilinear(ctx):
    """RESIZE_BILINEAR as TFLite's kernels (``exact_spatial.resize_bilinear``)."""
    qx = _in_q(ctx, 0)
    size = ctx.value(1, "the output size").reshape(-1)
    opt = ctx.options()
    align = bool(opt.AlignCorners()) if opt is not None else False
    half = bool(opt.HalfPixelCenters()) if opt is not None else False
    return exact_spatial.resize_bilinear(ctx.inputs[0], qx.dtype, (int(size[0]), int(size[1])),
                                         align, half)


SPATIAL = {"AVERAGE_POOL_2D": _average_pool, "MEAN": _reduction, "SUM": _reduction,
           "RESIZE_BILINEAR": _resize_bilinear}


def _spatial_applies(ctx) -> bool:
    """8-bit per-tensor input and output of one dtype (AVERAGE_POOL_2D: or int16), a clamp (or
    no) fused activation, and for the reductions constant axes."""
    if _fused_bounds(ctx) is None:
        return False
    if ctx.name == "AVERAGE_POOL_2D" and _int16_to_int16(ctx):
        return True
    if not (_eight_bit_to_eight_bit_first(ctx) and _same_dtype(ctx)):
        return False
    if ctx.name in ("MEAN", "SUM"):
        return const_value(ctx.importer.fold(ctx.inputs[1])) is not None
    return True


def _eight_bit_to_eight_bit_first(ctx) -> bool:
    """Input 0 and output 0 quantized per tensor in 8 bits."""
    qs = [qtensor(ctx, ctx.input_ids[0]), qtensor(ctx, int(ctx.op.Outputs(0)))]
    return all(q is not None and q.dtype in EIGHT_BIT and q.scale.size == 1 and q.zp.size <= 1
               for q in qs)


def _l2_normalize(ctx):
    """8-bit L2_NORMALIZATION as LiteRT's integer kernels (``exact_l2norm``)."""
    q = _in_q(ctx, 0)
    return exact_l2norm.l2_normalize(ctx.inputs[0], q.z, q.dtype)


def _l2_normalize_applies(ctx) -> bool:
    """8-bit in and out of one dtype, the output quantized as TFLite requires (1/128, zero
    point 128 for uint8, 0 for int8), no fused activation."""
    if not (_eight_bit_to_eight_bit_first(ctx) and _same_dtype(ctx) and
            _fused_bounds(ctx) == (None, None)):
        return False
    qo = qtensor(ctx, int(ctx.op.Outputs(0)))
    return qo.s == np.float32(1 / 128) and qo.z == (128 if qo.dtype == "uint8" else 0)


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
