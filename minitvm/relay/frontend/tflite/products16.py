"""A 16x8 product (int16 activations, int8 weights) as one op on the int16 activations: the
exact sums for ``quantized``'s 16x8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED, where they
ran the 8-bit kernels twice, on the activations' high and low bytes (``_wide_sums``).

- a conv of one group and FULLY_CONNECTED: an int32 ``nn.conv2d`` / ``nn.dense`` of the int16
  data and the int8 weight, which ``schedule/conv_vnni`` / ``gemm_vnni`` run on words of two
  int16 (``vpdpwssd``; ``vpmaddwd`` without VNNI), where the weights bound every sum below
  2**31 (exact in int32) and the host runs those kernels (``conv_vnni.pairs_available``);
- a depthwise conv: a float32 conv of the int16 data, widened as the depthwise schedule copies
  it (``depthwise.widened_data``), where the weights bound every sum below 2**24 (exact in
  float32; the depthwise kernels have no integer form); past that bound (a 3x3 filter whose
  taps sum past 512 in magnitude), each filter split in two, ``w = SPLIT * high + low`` with
  ``low = w mod SPLIT``: two output channels of the one float32 conv (the data read once),
  each exact (``split``: up to 32 taps), combined in int32.

A conv's sums come as int32, which ``quantized`` requantizes in int32 where it can.

Either only without zero points (LiteRT's int16 activations and int8 weights are symmetric).
A 16x8 MobileNetV2-like: see benchmarks/bench_tflite_16x8.py."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from .tensor_data import infer_shape

# one op where ``sums_dtype`` allows (False: always the byte split; the benchmark's baseline)
ONE_PASS = True
INT16_SPAN = 32768  # the largest |value| of an int16 activation
SPLIT = 16  # (a depthwise filter's high part: |w // 16| <= 8; low part 0..15)


def sums_dtype(x_zp: int, w: np.ndarray, w_zp: np.ndarray, depthwise: bool) -> str | None:
    """The dtype of the one op's exact sums of int16 activations (zero point ``x_zp``) times
    the weight ``w`` (output channels first; zero points ``w_zp``): "int32" (a conv of one
    group or a dense), "float32" or "split" (a depthwise conv: its filters as they are, or
    split in two), or None (the byte split: zero points, a bound past the dtype's exact
    range, or a host without the int16 kernels)."""
    from ....schedule import conv_vnni

    if not ONE_PASS or x_zp or np.any(w_zp):
        return None
    bound = _bound(w)
    if depthwise:
        if bound < 2**24:
            return "float32"
        high, low = np.divmod(w.astype("int64"), SPLIT)
        return "split" if max(_bound(high), _bound(low)) < 2**24 else None
    return "int32" if bound < 2**31 and conv_vnni.pairs_available() else None


def channel_weight_span(w: np.ndarray, zp=0) -> int:
    """The largest sum over one output channel (``w``'s first axis) of ``|w - zp|`` (``zp``:
    a scalar or one zero point per channel): times an activation's largest magnitude, the
    largest |sum| that channel's products can reach."""
    zp = np.asarray(zp, "int64").reshape(-1, 1)
    per_channel = np.abs(w.reshape(w.shape[0], -1).astype("int64") - zp).sum(axis=1)
    return int(per_channel.max(initial=0))


def _bound(w: np.ndarray) -> int:
    """The largest |sum| of int16 activations times one output channel's weights."""
    return channel_weight_span(w) * INT16_SPAN


def conv_sums(x_nchw, w_oihw: np.ndarray, dtype: str, strides, pads, dilation, groups: int):
    """The int32 sums of ``sums_dtype``'s conv (each bounded below 2**31; float32 ones cast,
    exactly): ``x_nchw`` (int16) with the constant weight ``[O, I, KH, KW]`` (int8 for int32
    sums, else float32), pads (top, left, bottom, right)."""
    o, _, kh, kw = w_oihw.shape
    if dtype == "split":  # (output channel 2k: filter k's high part, 2k + 1 its low part)
        high, low = np.divmod(w_oihw.astype("int64"), SPLIT)
        w_oihw = np.stack([high, low], axis=1).reshape(2 * o, *w_oihw.shape[1:])
    wc = np.ascontiguousarray(w_oihw.astype("int8" if dtype == "int32" else "float32"))
    acc = _op.nn.conv2d(x_nchw, _expr.const(wc), strides=tuple(strides), padding=tuple(pads),
                        dilation=tuple(dilation), groups=groups, channels=wc.shape[0],
                        kernel_size=(kh, kw), out_dtype="int32" if dtype == "int32" else
                        "float32")
    if dtype != "split":
        return acc if dtype == "int32" else _op.cast(acc, "int32")
    n, _, oh, ow = infer_shape(acc)
    pairs = _op.reshape(acc, (-1 if n is None else n, o, 2, oh, ow))

    def part(k):
        return _op.cast(_op.squeeze(_op.strided_slice(pairs, [k], [k + 1], axes=[2]), [2]),
                        "int32")

    return _op.add(_op.multiply(part(0), _expr.const(np.array(SPLIT, "int32"), "int32")),
                   part(1))


def dense_sums(x, w: np.ndarray):
    """The float64 sums of ``sums_dtype``'s dense: rows ``x`` (int16) times the int8 weight
    ``[units, K]``."""
    wc = _expr.const(np.ascontiguousarray(w.astype("int8")))
    return _op.cast(_op.nn.dense(x, wc, out_dtype="int32"), "float64")
