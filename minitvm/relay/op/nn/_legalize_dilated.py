"""Legalize of a dilated 3x3 ``nn.conv2d`` on CPUs: one stride-1 conv over the dilation phases.

With dilation ``(dh, dw)`` and padding a multiple of it, output pixel ``(dh*q + r, dw*p + s)``
reads only input pixels of the same phase ``(r, s)``, one phase pixel apart. So the conv is the
undilated conv (padding divided by the dilation) of each ``H/dh x W/dw`` phase image: the
phases are gathered into the batch by a reshape and a transpose (TensorFlow's space-to-batch),
one conv of batch ``N*dh*dw`` runs, and a transpose puts its pixels back. The undilated 3x3
conv runs on the Winograd schedule, which a dilated conv cannot take. Measured on a Sapphire
Rapids Xeon, one thread, DeepLab's 256 -> 64 branches at 32x32 with bias and relu (ms, dilated
conv / phases, ONNX Runtime): dilation 2 1.67 / 0.99 (1.70), dilation 4 1.69 / 1.40 (1.67).
Phases smaller than ``MIN_PHASE`` pixels a side (dilation 6 at 32x32 is not even a whole number
of phases) keep the dilated conv, as do convs with fewer than ``MIN_CHANNELS`` channels.

Difference from TVM: TVM keeps the dilated conv (its ``FlattenAtrousConv`` goes the other way,
folding TensorFlow's space_to_batch_nd / batch_to_space_nd pair back into one).
"""

from __future__ import annotations

from ....ir.type import TensorType
from ....topi.utils import pad_tuple
from ..transform import reshape, transpose
from .nn import conv2d

MIN_PHASE = 8  # phase images at least this many pixels a side (Winograd needs a few tiles)
# (Tried: with row tiles in 16-channel blocks (conv_lanes.ROW_TILES_CHANNEL_BLOCK_BYTES) the
# dilated conv itself for dilation 4 and 2 at 32x32, DeepLab's 256 -> 64 + bias + relu, alone,
# one thread, Sapphire Rapids, ms, phases / dilated (ONNX Runtime): d4 1.36 / 1.66 (1.53), d2
# 0.99 / 1.73 (1.67). Not kept.)
MIN_CHANNELS = 16  # input and output channels (fewer: the Winograd transforms cost more)


def _static(t) -> tuple[int, ...] | None:
    """The static shape of tensor type ``t`` (None when a dimension is symbolic)."""
    if not isinstance(t, TensorType):
        return None
    try:
        return tuple(int(d) for d in t.shape)
    except TypeError:
        return None


def phase_plan(attrs, data_shape, weight_shape, dtype: str) -> tuple | None:
    """((dh, dw), (pad top, left, bottom, right) in phase pixels) of a conv this rule rewrites,
    or None to keep it."""
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW" or \
            (attrs.out_layout or "NCHW") != "NCHW" or int(attrs.groups) != 1 or \
            dtype != "float32" or str(attrs.out_dtype or dtype) != "float32":
        return None
    if data_shape is None or weight_shape is None or len(data_shape) != 4:
        return None
    dh, dw = (int(v) for v in attrs.dilation)
    if tuple(int(v) for v in attrs.strides) != (1, 1) or (dh, dw) == (1, 1):
        return None
    _, c, h, w = data_shape
    o, _, kh, kw = weight_shape
    if (kh, kw) != (3, 3) or min(c, o) < MIN_CHANNELS:
        return None
    pads = tuple(int(p) for p in pad_tuple(attrs.padding, 2, "nn.conv2d"))
    steps = (dh, dw, dh, dw)
    if h % dh or w % dw or any(p % s for p, s in zip(pads, steps, strict=True)) or \
            min(h // dh, w // dw) < MIN_PHASE:
        return None
    return (dh, dw), tuple(p // s for p, s in zip(pads, steps, strict=True))


def legalize_dilated_conv2d(attrs, inputs, types):
    """The dilated conv2d as one conv over its dilation phases (module docstring), or None."""
    data_type, weight_type, out_type = types[0], types[1], types[2]
    data_shape, out_shape = _static(data_type), _static(out_type)
    plan = phase_plan(attrs, data_shape, _static(weight_type), str(data_type.dtype))
    if plan is None or out_shape is None:
        return None
    (dh, dw), pads = plan
    n, c, h, w = data_shape
    _, o, oh, ow = out_shape
    data, weight = inputs
    x = reshape(data, (n, c, h // dh, dh, w // dw, dw))
    x = reshape(transpose(x, (3, 5, 0, 1, 2, 4)), (dh * dw * n, c, h // dh, w // dw))
    y = conv2d(x, weight, strides=(1, 1), padding=pads, dilation=(1, 1), groups=1,
               channels=attrs.channels, kernel_size=(3, 3), out_dtype=attrs.out_dtype)
    y = reshape(y, (dh, dw, n, o, oh // dh, ow // dw))
    return reshape(transpose(y, (2, 3, 4, 0, 5, 1)), (n, o, oh, ow))
