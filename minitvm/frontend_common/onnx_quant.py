"""What the Relay and Relax ONNX importers share for integer (quantized) products: the value
ranges of the quantized dtypes, and the plan that takes an 8-bit integer matmul or
convolution exactly with float32 kernels (the fast ones) by splitting its reduction axis.

Pure numpy over values known at import time; each dialect builds the ops itself."""

from __future__ import annotations

import numpy as np

QRANGE = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535),
          "int16": (-32768, 32767), "int32": (-2**31, 2**31 - 1)}

# a NaN quantizes to its dtype's lowest value (as onnxruntime's QuantizeLinear does; ONNX leaves
# it open): what a quantized causal mask gives, whose -inf made quantize_static's scale inf, so
# its DequantizeLinear is 0 * inf, and the softmax after it NaN
NAN_QUANTIZES_TO = {k: lo for k, (lo, _) in QRANGE.items()}

UNKNOWN = object()  # a zero point that exists but is not known at import time


def scalar_qparams(scale, zp, block: int):
    """(scale, zero point) as a float32 and an int of a QuantizeLinear / DequantizeLinear with
    a known scalar ``scale`` and zero point (``zp``: its value, None when absent), else None
    (per axis, blocked, or not known at import)."""
    if block or scale is None or np.size(scale) != 1 or (zp is not None and np.size(zp) != 1):
        return None
    s = np.asarray(scale)
    if s.dtype != np.float32:
        return None
    return np.float32(s.reshape(())), 0 if zp is None else int(np.asarray(zp).reshape(()))


def fake_quant_bounds(q_dtype: str, quantize, dequantize):
    """The DequantizeLinear of a QuantizeLinear's output (the Q / DQ pair around every
    activation of a QDQ model), both with the same scalar scale s and zero point z
    (``scalar_qparams``' pairs): it is ``clip(round(x / s), lo - z, hi - z) * s``, a NaN giving
    ``lo - z`` (the same values, without adding z, the 8-bit cast and back, and subtracting
    z: five operations of each elementwise epilogue they end). Returns (s, lo - z, hi - z),
    or None when the pair differs."""
    if quantize is None or dequantize is None or quantize != dequantize:
        return None
    s, z = quantize
    lo, hi = QRANGE[q_dtype]
    return s, float(lo - z), float(hi - z)

# ORT's QLinear ops that compute a float op between dequantized inputs and a quantized output:
# (op, the float op, its quantized inputs)
QLINEAR_FLOAT_OPS = (("com.microsoft.QLinearAdd", "Add", 2),
                     ("com.microsoft.QLinearMul", "Mul", 2),
                     ("com.microsoft.QLinearGlobalAveragePool", "GlobalAveragePool", 1),
                     ("com.microsoft.QLinearAveragePool", "AveragePool", 1),
                     ("com.microsoft.QLinearSigmoid", "Sigmoid", 1),
                     ("com.microsoft.QLinearLeakyRelu", "LeakyRelu", 1),
                     ("com.microsoft.QLinearSoftmax", "Softmax", 1))


def qlinear_float_attrs(attrs: dict, ndim: int) -> tuple[dict, str | None]:
    """The float op's attributes of a ``QLINEAR_FLOAT_OPS`` node (its QLinear-only ones
    dropped: ``channels_last``, and QLinearSoftmax's ``opset``, the Softmax semantics it was
    made from), and an error message where they cannot be kept (None): channels_last=1, or a
    Softmax of opset < 13 (a softmax of the input flattened to 2-D at ``axis``) along an axis
    other than the last (the same operation only there)."""
    if attrs.get("channels_last", 0):
        return attrs, "channels_last=1 is not supported"
    opset = int(attrs.get("opset", 13))
    if opset < 13 and int(attrs.get("axis", 1)) % max(ndim, 1) != max(ndim, 1) - 1:
        return attrs, "QLinearSoftmax of opset < 13 is supported along the last axis only"
    return {k: v for k, v in attrs.items() if k not in ("channels_last", "opset")}, None


EXACT = 2**24  # float32 adds integers below this exactly
MAX_PIECES = 8


def int_span(dtype: str, zp) -> int:
    """The largest |q - zero point| over the values of an 8-bit input: ``zp`` its constant
    zero point (numpy), None when absent, ``UNKNOWN`` when not known at import."""
    lo, hi = shifted_range(dtype, zp)
    return max(-lo, hi)


def shifted_range(dtype: str, zp) -> tuple[int, int]:
    """(lowest, highest) q - zero point over the values of ``dtype`` (lowest <= 0 <= highest,
    a zero point being one of the values); ``zp`` as for ``int_span``, a 1-D one its widest."""
    lo, hi = QRANGE[dtype]
    if zp is UNKNOWN:
        return lo - hi, hi - lo
    z = np.zeros(1, "int64") if zp is None else np.asarray(zp, "int64").reshape(-1)
    return int(lo - z.max()), int(hi - z.min())


def float_pieces(x_dtype: str, x_zp, w_dtype: str, w_shape, w, w_zp, out_axis: int,
                 k_axis: int, batch_axes=()):
    """The ranges of the weight's ``k_axis`` to sum separately so that every partial sum of
    products in a piece is provably at most 2**24 in magnitude (float32 then sums the integers
    exactly; the pieces are added in int32). ``w`` is the weight's value (numpy) or None when
    unknown, ``x_zp`` / ``w_zp`` as for ``int_span``.

    A product (x - x_zp) * v, the input shifted into [lo, hi] (lo <= 0 <= hi), lies between a
    most negative and a most positive value; any partial sum lies between the sum of the
    negative ends and the sum of the positive ends, so the bound is the larger of the two sums,
    not the sum of the largest magnitudes (half of it for a uint8 input with zero point 0,
    e.g. after a relu). The bound uses the weights' own values when known, else the dtype's
    widest. None when more than ``MAX_PIECES`` pieces would be needed: accumulate in int32
    instead."""
    lo_x, hi_x = shifted_range(x_dtype, x_zp)
    shape = [int(d) for d in w_shape]
    nd, k_axis, out_axis = len(shape), k_axis % len(shape), out_axis % len(shape)
    if w is None or w_zp is UNKNOWN:  # any 8-bit weights: both signs at their widest
        span = int_span(w_dtype, w_zp)
        up = np.full(shape, span * max(hi_x, -lo_x), "int64")
        down = up
    else:
        v = np.asarray(w, "int64")
        zv = np.zeros(1, "int64") if w_zp is None else np.asarray(w_zp, "int64").reshape(-1)
        if zv.size > 1:
            zshape = [1] * nd
            zshape[out_axis] = -1
            zv = zv.reshape(zshape)
        v = v - zv
        pos, neg = np.maximum(v, 0), np.maximum(-v, 0)
        up = hi_x * pos - lo_x * neg  # the product's most positive value
        down = -lo_x * pos + hi_x * neg  # minus its most negative one
    up_k = _per_output_k(up, shape, out_axis, k_axis, batch_axes)
    down_k = _per_output_k(down, shape, out_axis, k_axis, batch_axes)
    kn = up_k.shape[1]
    for pieces in range(1, min(MAX_PIECES, kn) + 1):
        bounds = np.linspace(0, kn, pieces + 1).round().astype(int)
        ranges = list(zip(bounds[:-1], bounds[1:], strict=True))
        if all(max(int(up_k[:, lo:hi].sum(axis=1).max(initial=0)),
                   int(down_k[:, lo:hi].sum(axis=1).max(initial=0))) <= EXACT
               for lo, hi in ranges):
            return [(int(lo), int(hi)) for lo, hi in ranges]
    return None


def _per_output_k(d, shape, out_axis: int, k_axis: int, batch_axes):
    """A per-weight-element bound summed over the axes other than the output and reduction
    ones (the worst over ``batch_axes``: separate products): an (outputs, K) array."""
    nd = len(shape)
    if batch_axes:
        d = d.max(axis=tuple(batch_axes), keepdims=True)
    rest = tuple(i for i in range(nd) if i not in (out_axis, k_axis))
    d = d.sum(axis=rest)
    return d.reshape(shape[k_axis], shape[out_axis]).T if out_axis > k_axis else \
        d.reshape(shape[out_axis], shape[k_axis])


def row_conv_attrs(attrs: dict) -> dict:
    """A 1-D ConvInteger / QLinearConv's attributes for the 2-D conv over one row that it is
    (input ``[N, C, 1, L]``, weight ``[O, C, 1, K]``; the integer conv paths, VNNI's among
    them, are 2-D)."""
    out = dict(attrs)
    for key, first in (("kernel_shape", 1), ("strides", 1), ("dilations", 1)):
        if key in attrs:
            out[key] = [first] + [int(v) for v in attrs[key]]
    if "pads" in attrs:
        b, e = (int(v) for v in attrs["pads"])
        out["pads"] = [0, b, 0, e]
    return out


def keeps_int8_weight(w_dtype: str, w, w_zp, groups: int, kernel) -> bool:
    """May a float32 conv (of integers it sums exactly: ``float_pieces`` gave one piece; or of
    dequantized values) read its weight as it is, int8, which the conv schedules widen as they
    load it (a quarter of the weight bytes to stream)? A constant (``w`` its value, None when
    unknown) int8 weight with no zero point or zero ones (``w_zp`` as for ``int_span``), one
    group, and a filter of more than one tap (a 1x1 conv's own schedule reads float32
    weights)."""
    if w_dtype != "int8" or w is None or w_zp is UNKNOWN or groups != 1:
        return False
    if w_zp is not None and np.any(np.asarray(w_zp)):
        return False
    return int(np.prod(kernel)) > 1


def dequantized_weight_scale(q, q_dtype: str, scale, zp, axis: int, block: int):
    """The scales (float32) of a DequantizeLinear over a constant int8 tensor ``q`` (numpy;
    None when unknown) with constant ``scale`` and no zero point or zero ones (``zp``: None
    when absent, else its value, None-valued when unknown: pass ``UNKNOWN``) that a Conv or
    MatMul reading ``q`` as its weight may apply to its output instead (``conv(x, q * s) ==
    conv(x, q) * s`` per output channel): shaped ``(1,)`` for one scale, ``(n,)`` for one per
    index of axis 0 (a conv's output channels, a transposed Gemm weight's columns), and
    ``(1, n)`` for one per index of axis 1 of a 2-D ``q`` (what per_channel=True gives a
    MatMul's [K, N] weight: one per column); None otherwise."""
    if block or q_dtype != "int8" or q is None or scale is None or zp is UNKNOWN:
        return None
    s = np.asarray(scale)
    if s.dtype != np.float32 or (zp is not None and np.any(np.asarray(zp))):
        return None
    nd = np.ndim(q)
    if s.size == 1:
        return s.reshape(-1)
    if s.ndim != 1 or nd == 0 or s.size != np.shape(q)[axis % nd]:
        return None
    if axis % nd == 0:
        return s.reshape(-1)
    return s.reshape(1, -1) if nd == 2 else None  # (per column of a 2-D weight)


def dequantized_zero_point_weight(q, q_dtype: str, scale, zp, axis: int, block: int):
    """``(scales, zero points)`` of a DequantizeLinear that ``dequantized_weight_scale``
    declines for its weight's zero point or dtype: a constant 2-D 8-bit ``q`` (a MatMul's
    weight under weight_type=QUInt8), or a 3-D / 4-D one (a Conv's: ``vnni_conv`` with
    ``weight_zero_points``), with constant float32 scales and known zero points, one or one
    per index of an axis (axis 0 for a conv's), both shaped as ``dequantized_weight_scale`` shapes scales
    (``(1,)``, ``(n,)`` along axis 0, ``(1, n)`` along axis 1) for ``qdq_matmul_operands``;
    None otherwise."""
    if block or q_dtype not in ("uint8", "int8") or q is None or scale is None or \
            zp is None or zp is UNKNOWN or np.ndim(q) not in (2, 3, 4):
        return None
    if np.ndim(q) > 2 and np.size(scale) > 1 and axis % np.ndim(q):
        return None  # (a conv weight: one scale, or one per output channel)
    s = dequantized_weight_scale(np.asarray(q).astype("int8"), "int8", scale, None, axis, 0)
    z = np.asarray(zp, "int64")
    if s is None or z.size != s.size:
        return None
    return s, z.reshape(s.shape)


def qdq_weight_operands(ctx):
    """``qdq_operands`` for a MatMul / Gemm: ((8-bit x, its scale, its zero point), (8-bit
    weight, its scale, its zero point: None for ``ctx.int8_weights``' int8 ones, else
    ``ctx.zp_weights``' value)), else None."""
    ins = ctx.node.input
    act = ctx.act_inputs.get(ins[0]) if ins else None
    if act is None or len(ins) < 2:
        return None
    if ins[1] in ctx.int8_weights:
        return act, (*ctx.int8_weights[ins[1]], None)
    wgt = ctx.zp_weights.get(ins[1])
    return None if wgt is None else (act, wgt)


def conv_output_scale(s, channels: int):
    """``dequantized_weight_scale``'s scales shaped to multiply an NCHW conv's output."""
    return s.reshape(()) if s.size == 1 else s.reshape(1, channels, 1, 1)


# convs of fewer input channels, or (with two or more taps) fewer input channels x taps, keep
# the float32 conv, which measured faster (bench_quantized's resnet18 QOperator convs, one
# thread, us, float / VNNI): the 3 -> 16 7x7/2 stem at 64x64 31.4 / 67.5, 3x3 16 -> 16 at 16x16
# 9.5 / 7.8, 64 -> 128 at 4x4 5.0 / 3.5. 1x1 convs of 16 or more input channels take VNNI since
# stop 41, when its 1x1 convs put the pixels in the lanes (``conv_vnni.pixel_lanes``) and
# depthwise convs learned to read 8-bit data (``depthwise_data``), so the convs around them
# exchange 8-bit tensors (in one process, the model's ms, 1x1 convs float / VNNI from 32 / from
# 16 channels: benchmarks/bench_tflite.py's quantized MobileNetV2-like model at 64x64
# 0.202 / 0.250 / 0.140 -- the middle rule before pixel lanes --, at 112x112 x2 1.975 / 1.345 /
# about 0.93 with pixel lanes; bench_quantized's MobileNetV2 QOperator 0.137 / 0.123 / 0.116;
# outputs identical)
VNNI_MIN_CHANNELS = 16
VNNI_MIN_REDUCTION = 64
# Output channels a multiple of this (the VNNI conv's last tile computes a whole vector of them
# and stores the rest). MobileNetV2's 24-channel 1x1 convs at 28x28 (96 -> 24, 144 -> 24 + the
# residual add) stayed float32 convs of the dequantized input with 16: see the report numbers
# in ``schedule/conv_vnni`` (PackWeight's zero rows)
VNNI_CHANNEL_STEP = 8


def qdq_operands(ctx):
    """The current node's ((8-bit x, its scale, its zero point), (int8 weight, its scale)) when
    its input 0 and input 1 are DequantizeLinear outputs the importer noted (``ctx.act_inputs``,
    ``ctx.int8_weights``, by ONNX tensor name; both dialects' importers keep them), else
    None."""
    ins = ctx.node.input
    act = ctx.act_inputs.get(ins[0]) if ins else None
    wgt = ctx.int8_weights.get(ins[1]) if len(ins) > 1 else None
    return None if act is None or wgt is None else (act, wgt)


def vnni_conv(x_dtype: str, x_zp, w_dtype: str, w, w_zp, groups: int, channels: int,
              weight_zero_points: bool = False) -> bool:
    """May an integer conv of ``x - x_zp`` (NCHW) and ``w - w_zp`` run as an int32 conv of the
    uint8 input itself and the int8 weight on the host's VNNI instructions
    (``schedule/conv_vnni``), the zero point's share subtracted after (``zero_point_sums``)?
    (An int8 input runs as the uint8 ``x + 128``, its zero point 128 more.)
    Where the host has them: an 8-bit input with a constant scalar zero point (or none), a
    constant int8 weight without (nonzero) zero points -- or, for a caller that builds
    ``VnniConvPlan``'s window sums (``weight_zero_points``), a constant 8-bit weight with known
    zero points, one or one per output channel --, one group, a multiple of
    ``VNNI_CHANNEL_STEP`` output channels, at least ``VNNI_MIN_CHANNELS`` input channels and
    (a filter of two or more taps) ``VNNI_MIN_REDUCTION`` input channels x taps. Elsewhere, or
    otherwise, the float32 convs stay. On an AVX2 host without VNNI too, where ``conv_vnni``
    widens the bytes to int16 pairs (``conv_vnni.row_words``: ``vpmaddwd``)."""
    from ..schedule.conv_vnni import products_available

    w_dtypes = ("int8", "uint8") if weight_zero_points else ("int8",)
    if x_dtype not in ("uint8", "int8") or w_dtype not in w_dtypes or w is None or \
            groups != 1 or channels % VNNI_CHANNEL_STEP or x_zp is UNKNOWN or \
            w_zp is UNKNOWN or np.ndim(w) != 4:
        return False
    c, taps = np.shape(w)[1], int(np.prod(np.shape(w)[2:]))
    if c < VNNI_MIN_CHANNELS or (taps > 1 and c * taps < VNNI_MIN_REDUCTION):
        return False
    if x_zp is not None and np.size(x_zp) != 1:
        return False
    if w_zp is not None and np.any(np.asarray(w_zp)):
        if not weight_zero_points or np.size(w_zp) not in (1, np.shape(w)[0]):
            return False
    return products_available()


def int8_conv_weight(w, w_dtype: str, w_zp) -> tuple[np.ndarray, np.ndarray]:
    """``(w8, z8)``: an int8 weight ``w8`` ``[O, ...]`` and int64 zero points ``z8`` ``(O,)``
    with ``w - w_zp == w8 - z8`` per output channel, for an 8-bit ``w`` of ``w_dtype`` and its
    zero point (None, one, or one per output channel). Each channel is shifted by the offset
    closest to its zero point that keeps its values in int8: the zero point itself where
    ``w - w_zp`` fits (``z8`` 0 there: no window sums for it), else what a uint8 weight
    spanning 0..255 needs (128)."""
    v = np.asarray(w, "int64")
    o = v.shape[0]
    z = np.zeros(o, "int64") if w_zp is None else \
        np.broadcast_to(np.asarray(w_zp, "int64").reshape(-1), (o,))
    flat = v.reshape(o, -1)
    # offsets d keeping w - d in [-128, 127]: max - 127 <= d <= min + 128
    d = np.clip(z, flat.max(axis=1) - 127, flat.min(axis=1) + 128)
    w8 = (v - d.reshape((o,) + (1,) * (v.ndim - 1))).astype("int8")
    return w8, z - d


def depthwise_data(x_dtype: str, x_zp, groups: int, w_shape) -> str | None:
    """How a depthwise conv (one input channel a group) whose float32 sums of ``x - x_zp``
    are exact (``float_pieces`` gave one piece) may read its 8-bit input as it is, widened by
    the depthwise schedule as it copies each plane (``schedule/depthwise.widened_data``: a
    quarter of the bytes of a float32 input, which its producer then stores as 8-bit too):
    ``"as_is"`` when the zero point is 0 (or absent: the conv's zero padding is the zero
    point's), ``"shift"`` for an int8 input with zero point -128 (a ReLU's output in an int8
    model), which ``x + 128`` as uint8 with zero point 0 is; None otherwise (the input is
    cast and shifted in float32)."""
    if x_dtype not in ("uint8", "int8") or x_zp is UNKNOWN or len(w_shape) != 4 or \
            groups < 2 or int(w_shape[1]) != 1 or int(w_shape[0]) % groups:
        return None
    z = np.zeros(1, "int64") if x_zp is None else np.asarray(x_zp, "int64").reshape(-1)
    if z.size != 1:
        return None
    if int(z[0]) == 0:
        return "as_is"
    return "shift" if x_dtype == "int8" and int(z[0]) == -128 else None


def zero_point_sums(w, x_zp) -> np.ndarray:
    """``x_zp * sum(w)`` per output channel of an ``[O, C, KH, KW]`` weight, int32 shaped
    ``(1, O, 1, 1)``: conv(x - x_zp, w) = conv(x, w) - this, when x is padded with x_zp."""
    zp = 0 if x_zp is None else int(np.asarray(x_zp).reshape(-1)[0])
    s = np.asarray(w, "int64").sum(axis=(1, 2, 3)) * zp
    return s.astype("int32").reshape(1, -1, 1, 1)


def activation_qparams(q_dtype: str, scale, zp, block: int):
    """(scale, zero point) of a DequantizeLinear over an 8-bit activation that a ``vnni_conv``
    may read as it is: a float32 scalar ``scale`` (numpy; None when unknown) and no zero
    point (None) or a known scalar one (``zp``: its value, ``UNKNOWN`` when not known); the
    scale as a float32 scalar and the zero point as given. None otherwise."""
    if q_dtype not in ("uint8", "int8") or block or scale is None or zp is UNKNOWN:
        return None
    s = np.asarray(scale)
    if s.dtype != np.float32 or s.size != 1 or (zp is not None and np.size(zp) != 1):
        return None
    return np.float32(s.reshape(())), zp


class VnniConvPlan:
    """How a dialect builds ``vnni_conv``'s form of conv(x - x_zp, w - w_zp) for an 8-bit input
    of ``x_dtype`` with zero point ``x_zp`` (None or a scalar value), a constant 8-bit weight
    ``w`` of ``w_dtype`` with zero point ``w_zp`` (None, one, or one per output channel) and
    ONNX-ordered ``pads`` (top, left, bottom, right). With x' the uint8 input padded with its
    zero point z (shifted) and ``int8_conv_weight``'s w8 - z8 = w - w_zp, the conv is
    ``conv(x', w8) - z * (sum(w8) - K * z8) - z8 * window_sums(x')`` (K: input channels x
    taps), the window sums being conv(x', ones) (one plane, shared by the output channels):

    - ``shift``: an int8 input is shifted into uint8 first (``x + 128``, as int16, cast back;
      its zero point 128 more: the difference is the same);
    - ``pad_value``: not None when the input is padded explicitly with its (shifted) zero point
      (``nn.pad``) because the conv itself pads with zero bytes; ``conv_pads`` the conv's own.
      Given the ``geometry`` ((H, W) of the input, strides, dilation) of a small output, the
      conv pads with zero bytes instead and ``zero_point_sums`` is one per output element
      (``border_zero_point_sums``);
    - ``weight``: w8, int8;
    - ``zero_point_sums``: the int32 ``(1, O, 1, 1)`` (or ``(1, O, OH, OW)``) to subtract from
      the conv (None when the input's zero point is 0);
    - ``window_weight``: z8 as int32 ``(1, O, 1, 1)``, which times the window sums is
      subtracted too; None when every channel's ``w - w_zp`` fits int8 (an int8 weight without
      zero points among them)."""

    def __init__(self, x_dtype: str, x_zp, w, pads, w_dtype: str = "int8", w_zp=None,
                 geometry=None):
        zp = 0 if x_zp is None else int(np.asarray(x_zp).reshape(-1)[0])
        self.shift = x_dtype == "int8"
        zp += 128 if self.shift else 0
        self.zero_point = zp
        pads = tuple(int(p) for p in pads)
        if w_dtype == "int8" and (w_zp is None or not np.any(np.asarray(w_zp))):
            w8, z8 = np.asarray(w, "int8"), np.zeros(np.shape(w)[0], "int64")
        else:
            w8, z8 = int8_conv_weight(w, w_dtype, w_zp)
        self.weight = np.ascontiguousarray(w8)
        self.window_weight = z8.astype("int32").reshape(1, -1, 1, 1) if np.any(z8) else None
        self.pads = pads  # (what the input's explicit pad, or the conv, applies)
        border = border_zero_point_sums(w8, z8, zp, pads, *geometry) \
            if zp and any(pads) and geometry is not None else None
        self.pad_value = zp if zp and any(pads) and border is None else None
        self.conv_pads = (0, 0, 0, 0) if self.pad_value is not None else pads
        o, k = w8.shape[0], int(np.prod(w8.shape[1:]))
        sums = (w8.reshape(o, -1).astype("int64").sum(axis=1) - k * z8) * zp
        self.zero_point_sums = border if border is not None else \
            sums.astype("int32").reshape(1, -1, 1, 1) if zp else None


# Output elements (O x OH x OW) up to which a conv of an input with a nonzero zero point pads
# with zero bytes (the VNNI conv's own) and subtracts the zero point's share of each output
# element (``border_zero_point_sums``), where an explicit ``nn.pad`` with the zero point would
# cost a kernel of its own (or turn the elementwise kernel before it into one with a bounds
# test per element). The audio net's first Conv1d (an int8 input, zero point -6; 40 -> 64,
# 5 taps, stride 2, 200 samples): the quantize + shift + pad kernel 7.4 us, 2.9 us without the
# pad (one thread, Zen 4).
BORDER_MAX_OUTPUTS = 1 << 15


def border_zero_point_sums(w8, z8, zp: int, pads, in_hw, strides, dil):
    """The int32 ``(1, O, OH, OW)`` share of the input's zero point ``zp`` in each output
    element of conv(x' - zp, w8 - z8) where x' is padded with zero bytes (the conv's own
    padding) instead of ``zp``: over the taps that fall inside the input only, ``zp * (sum of
    w8 there - z8 * their count)`` (the padded taps then read 0 - 0). None past
    ``BORDER_MAX_OUTPUTS`` outputs (an explicit pad with the zero point instead)."""
    o, c, kh, kw = w8.shape
    h, wd = (int(v) for v in in_hw)
    t, left, b, r = (int(p) for p in pads)
    (sh, sw), (dh, dw) = strides, dil
    oh = (h + t + b - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + left + r - (kw - 1) * dw - 1) // sw + 1
    if oh < 1 or ow < 1 or o * oh * ow > BORDER_MAX_OUTPUTS:
        return None
    # in_y[ky, i]: does tap row ky of output row i read inside the input (likewise columns)
    in_y = ((np.arange(oh)[None, :] * sh + np.arange(kh)[:, None] * dh - t) >= 0) & \
        ((np.arange(oh)[None, :] * sh + np.arange(kh)[:, None] * dh - t) < h)
    in_x = ((np.arange(ow)[None, :] * sw + np.arange(kw)[:, None] * dw - left) >= 0) & \
        ((np.arange(ow)[None, :] * sw + np.arange(kw)[:, None] * dw - left) < wd)
    taps = np.asarray(w8, np.int64).sum(axis=1)  # (O, KH, KW)
    inside = np.einsum("oyx,yi,xj->oij", taps, in_y.astype(np.int64), in_x.astype(np.int64))
    count = c * np.einsum("yi,xj->ij", in_y.astype(np.int64), in_x.astype(np.int64))
    sums = zp * (inside - np.asarray(z8, np.int64).reshape(-1, 1, 1) * count[None])
    return sums.astype("int32")[None]


def vnni_matmul(a_dtype: str, a_zp, a_zp_scalar: bool, b_dtype: str, b, b_zp) -> bool:
    """May an integer matmul of ``a - a_zp`` (..., M, K) and ``b - b_zp`` (K, N) run as an int32
    product of the 8-bit rows themselves and an int8 weight on the host's VNNI instructions
    (``schedule/gemm_vnni``), the zero points' shares subtracted after (``MatmulVnniPlan``)?
    (An int8 A runs as the uint8 ``a + 128``, its zero point 128 more; a uint8 B as the int8
    ``b - 128``, its zero point 128 less.) Where the host has them: an 8-bit A with no zero
    point or a scalar one (``a_zp_scalar``; known or not: the correction is ``a_zp * column
    sums``), a constant 2-D 8-bit weight with no zero point or a known one, scalar or one per
    column (its share is ``b_zp * row sums of A``: what weight_type=QUInt8 writes); on an AVX2
    host without VNNI too, where ``gemm_vnni`` widens the bytes to int16 pairs
    (``conv_vnni.row_words``: ``vpmaddwd``, faster than the float32 product there). Elsewhere
    the exact float32 products stay."""
    from ..schedule.conv_vnni import products_available

    if a_dtype not in ("uint8", "int8") or b_dtype not in ("uint8", "int8") or b is None or \
            np.ndim(b) != 2:
        return False
    if a_zp is not None and not a_zp_scalar:
        return False
    if b_zp is UNKNOWN or (b_zp is not None and np.size(b_zp) not in (1, np.shape(b)[1])):
        return False
    return products_available()


class MatmulVnniPlan:
    """How a dialect builds ``vnni_matmul``'s form of (a - a_zp) @ (b - b_zp) for an 8-bit A
    of ``a_dtype`` and constant 8-bit ``b`` (K, N) of ``b_dtype`` with zero point ``b_zp``
    (None, or a known scalar or one per column). With A' the uint8 rows (``a + 128`` for an
    int8 A; zero point z_a' = a_zp + ``zero_point_offset``) and W the int8 weight (``b - 128``
    for a uint8 B; zero point z_b' = b_zp - 128), the product is
    ``A' @ W - z_a' * (colsum(W) - K * z_b') - z_b' * rowsum(A')``:

    - ``shift``: an int8 A is shifted into uint8 first (``a + 128``, as int16, cast back);
    - ``weight``: W as int8 (K, N); ``weight_t`` as (N, K) (Relay's dense);
    - ``column_sums``: int32 (N,) ``colsum(W) - K * z_b'``, which times z_a' is subtracted
      from the product;
    - ``constant_correction``: that share as an int32 (N,) constant when the zero point is
      known (None when it is 0), else None and the dialect multiplies at run time
      (``runtime_zero_point``);
    - ``row_sum_weight``: z_b' as int32 (N,), which times the row sums of A' (int32, summed
      at run time) is subtracted too; None when it is 0 (an int8 weight without zero
      point)."""

    def __init__(self, a_dtype: str, a_zp, b, b_dtype: str = "int8", b_zp=None):
        self.shift = a_dtype == "int8"
        self.zero_point_offset = 128 if self.shift else 0
        b = np.asarray(b, "int64")
        k, n = b.shape
        zb = np.zeros(n, "int64") if b_zp is None else \
            np.broadcast_to(np.asarray(b_zp, "int64").reshape(-1), (n,))
        if b_dtype == "uint8":
            b, zb = b - 128, zb - 128
        self.weight = np.ascontiguousarray(b, "int8")
        self.weight_t = np.ascontiguousarray(self.weight.T)
        self.column_sums = (b.sum(axis=0) - k * zb).astype("int32")
        self.row_sum_weight = zb.astype("int32") if np.any(zb) else None
        self.constant_correction = None
        if a_zp is not UNKNOWN:
            zp = (0 if a_zp is None else int(np.asarray(a_zp).reshape(-1)[0])) + \
                self.zero_point_offset
            if zp:
                self.constant_correction = (self.column_sums.astype("int64") * zp).astype(
                    "int32")
        self.runtime_zero_point = a_zp is UNKNOWN


def int_batch_matmul_operands(ctx):
    """``[(q, scale, zero point)]`` of both inputs of the importer's current MatMul node when
    both are DequantizeLinear'd 8-bit activations (``ctx.act_inputs``) that
    ``vnni_batch_matmul`` takes as an int32 batch product, else None. ``ctx``: either
    importer's context (``node``, ``act_inputs``, ``dtype``, ``shape``)."""
    ins = ctx.node.input
    found = [ctx.act_inputs.get(i) for i in ins[:2]] if len(ins) > 1 else [None]
    if any(f is None for f in found):
        return None
    (qa, _, za), (qb, _, zb) = found
    if not vnni_batch_matmul(ctx.dtype(qa), za, ctx.shape(qa), ctx.dtype(qb), zb,
                             ctx.shape(qb)):
        return None
    return found


def vnni_batch_matmul(a_dtype: str, a_zp, a_shape, b_dtype: str, b_zp, b_shape) -> bool:
    """May an integer matmul of two 8-bit activations, ``a - a_zp`` (..., M, K) and ``b - b_zp``
    (..., K, N) (a quantized transformer's Q @ K^T and P @ V: QLinearMatMul, or a QDQ MatMul of
    two DequantizeLinear outputs), run as an int32 batch product on the host's VNNI
    instructions (``schedule/gemm_vnni``), the zero points' shares subtracted after
    (``BatchMatmulVnniPlan``)? Where the host has them: 8-bit operands with no zero point or a
    known scalar one, static shapes of one rank, 3 or more, with the same batch axes (a
    broadcast batch stays the exact float32 product)."""
    from ..schedule.conv_vnni import available

    if a_dtype not in ("uint8", "int8") or b_dtype not in ("uint8", "int8"):
        return False
    for zp in (a_zp, b_zp):
        if zp is UNKNOWN or (zp is not None and np.size(zp) != 1):
            return False
    if len(a_shape) < 3 or len(b_shape) != len(a_shape) or \
            not all(isinstance(d, (int, np.integer)) for d in (*a_shape, *b_shape)):
        return False
    if tuple(a_shape[:-2]) != tuple(b_shape[:-2]) or a_shape[-1] != b_shape[-2]:
        return False
    return available()


class BatchMatmulVnniPlan:
    """How a dialect builds ``vnni_batch_matmul``'s form of (a - a_zp) @ (b - b_zp), both
    8-bit activations with scalar zero points (values or None) and K the reduction length.
    With A' the uint8 rows (``a + 128`` for an int8 A, its zero point z_a' 128 more) and B' the
    int8 columns (``b - 128`` for a uint8 B, its zero point z_b' 128 less), the product is
    ``A' @ B' - z_b' * rowsum(A') - z_a' * colsum(B') + K * z_a' * z_b'`` (the sums, int32,
    at run time):

    - ``shift_a`` / ``shift_b``: shift A into uint8 / B into int8 first;
    - ``a_zero_point`` / ``b_zero_point``: z_a' / z_b' (the sums' multipliers; 0: none);
    - ``constant``: ``K * z_a' * z_b'`` (int32 arithmetic, wrapping as the sums do)."""

    def __init__(self, a_dtype: str, a_zp, b_dtype: str, b_zp, k: int):
        self.shift_a, self.shift_b = a_dtype == "int8", b_dtype == "uint8"
        za = 0 if a_zp is None else int(np.asarray(a_zp).reshape(-1)[0])
        zb = 0 if b_zp is None else int(np.asarray(b_zp).reshape(-1)[0])
        self.a_zero_point = za + (128 if self.shift_a else 0)
        self.b_zero_point = zb - (128 if self.shift_b else 0)
        self.constant = int(np.int64(k) * self.a_zero_point * self.b_zero_point)


def qdq_matmul_operands(x_dtype: str, x_zp, w, w_scale, x_scale, trans_b: bool,
                        w_dtype: str = "int8", w_zp=None):
    """A QDQ model's MatMul / Gemm of a DequantizeLinear'd 8-bit activation (``x_dtype``, known
    scalar zero point ``x_zp`` or None, scalar ``x_scale``: ``activation_qparams``) and a
    DequantizeLinear'd constant 8-bit weight ``w`` of ``w_dtype`` (``dequantized_weight_scale``'s
    ``w_scale``, and ``dequantized_zero_point_weight``'s ``w_zp``, shaped as the scale, or
    None; ``[N, K]`` when ``trans_b`` else ``[K, N]``) as ``vnni_matmul``'s int32 product scaled
    back: (the weight ``(K, N)``, the float32 output scale: a scalar or one per column, the
    weight's zero point: None, a scalar or one per column), or None where ``vnni_matmul``
    does not take it (a per-channel scale or zero point must be along N: axis 1 of a ``[K,
    N]`` weight, axis 0 of an ``[N, K]`` one)."""
    if w is None or np.ndim(w) != 2:
        return None
    s = np.asarray(w_scale, "float32")
    per_column = s.ndim == 2 if not trans_b else s.ndim == 1
    if s.size != 1 and not per_column:
        return None  # (per index of K: not a factor of the output)
    s = s.reshape(-1)
    zp = None if w_zp is None else np.asarray(w_zp).reshape(-1)
    b = np.asarray(w).T if trans_b else np.asarray(w)
    if not vnni_matmul(x_dtype, x_zp, True, w_dtype, b, zp):
        return None
    scale = (s * np.float32(x_scale)).astype("float32")
    return b, scale.reshape(()) if scale.size == 1 else scale, zp


def _lstm_weight_parts(q, scale, zp, what: str, fail):
    """(q, scale, zero point) of a DynamicQuantizeLSTM weight checked (``q`` 3-D
    ``[directions, rows, 4 * hidden]``) and shaped ``[directions, 1, 1 or 4 * hidden]`` (the
    zero point float32, 0 when absent)."""
    if q is None or scale is None:
        raise fail(f"DynamicQuantizeLSTM's {what} and its scale must be constants")
    q = np.asarray(q)
    if q.ndim != 3:
        raise fail(f"DynamicQuantizeLSTM's {what} must be 3-D, got shape {q.shape}")
    dirs, gates = q.shape[0], q.shape[2]
    s = np.asarray(scale, "float32").reshape(dirs, 1, -1)
    z = np.zeros((dirs, 1, 1), "float32") if zp is None else \
        np.asarray(zp, "float32").reshape(dirs, 1, -1)
    if s.shape[2] not in (1, gates) or z.shape[2] not in (1, gates):
        raise fail(f"DynamicQuantizeLSTM's {what} scale / zero point must have one value per "
                   f"direction or per direction and gate row ({gates})")
    return q, s, z


def dequantized_lstm_weight(q, scale, zp, what: str, fail):
    """The float32 weight in ONNX LSTM's layout ``[directions, 4 * hidden, input]`` of a
    com.microsoft DynamicQuantizeLSTM's constant 8-bit ``W`` or ``R`` (``q``, numpy,
    ``[directions, input, 4 * hidden]``: transposed) with its scale and zero point (one per
    direction, or one per direction and gate row: ``[directions, 4 * hidden]``; ``zp`` None
    when absent). onnxruntime quantizes the LSTM's input and state at run time and sums their
    integer products (``dynamic_quantized_lstm_weights``); the float LSTM over these weights
    differs from it only by that rounding. ``fail(message)`` makes the error to raise when a
    value is not known."""
    q, s, z = _lstm_weight_parts(q, scale, zp, what, fail)
    w = (q.astype("float32") - z) * s
    return np.ascontiguousarray(w.transpose(0, 2, 1))


class DynamicQuantWeight:
    """One direction's constant 8-bit weight of a DynamicQuantizeLSTM run as onnxruntime runs
    it: the float rows (the whole input, or one step's state) quantized at run time to uint8
    over their range widened to hold 0 (scale ``(max - min) / 255``, zero point
    ``round(-min / scale)``: ``DynamicQuantizeLinear``), their int32 product with the weight on
    VNNI (``plan``: ``MatmulVnniPlan`` with the zero point known only at run time), scaled
    back by ``s_rows * scale``. ``scale`` is float32, scalar or one per column (``(N,)``);
    ``units`` is N, the product's columns (4 * hidden)."""

    __slots__ = ("plan", "scale", "units")

    def __init__(self, q, scale, zp, q_dtype: str):
        self.plan = MatmulVnniPlan("uint8", UNKNOWN, q, q_dtype, zp)
        s = np.asarray(scale, "float32").reshape(-1)
        self.scale = s.reshape(()) if s.size == 1 else s
        self.units = int(np.shape(q)[1])


def dynamic_quantized_lstm_weights(q, scale, zp, what: str,
                                   fail) -> list[DynamicQuantWeight] | None:
    """DynamicQuantizeLSTM's ``W`` or ``R`` (as for ``dequantized_lstm_weight``) as one
    ``DynamicQuantWeight`` per direction, when the host runs the int32 product on VNNI
    (``vnni_matmul``: the rows are uint8 with a run-time scalar zero point); else None (the
    caller runs the float LSTM over ``dequantized_lstm_weight``). Only on VNNI: the AVX2
    int16-pair products (``conv_vnni.products_available``) were not measured on the LSTM, and
    the float LSTM is the reference there (ORT's own saturates without VNNI)."""
    from ..schedule.conv_vnni import available

    q, s, _ = _lstm_weight_parts(q, scale, zp, what, fail)
    dirs = q.shape[0]
    z = None if zp is None else np.asarray(zp).reshape(dirs, -1)  # (its own 8-bit dtype)
    if not available() or not all(vnni_matmul("uint8", UNKNOWN, True, str(q.dtype), q[d],
                           None if z is None else z[d]) for d in range(dirs)):
        return None
    return [DynamicQuantWeight(q[d], s[d], None if z is None or not z[d].any() else z[d],
                               str(q.dtype)) for d in range(dirs)]
