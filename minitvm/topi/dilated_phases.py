"""A dilated 3x3 conv2d as one undilated conv over its dilation phases.

With dilation ``(dh, dw)`` and padding a multiple of it, output pixel ``(dh*q + r, dw*p + s)``
reads only input pixels of the same phase ``(r, s)``, one phase pixel apart. So the conv is the
undilated conv (padding divided by the dilation) of each ``H/dh x W/dw`` phase image: the
phases are gathered into the batch (TensorFlow's space-to-batch), one conv of batch
``N*dh*dw`` runs, and the inverse gather puts its pixels back. The undilated 3x3 conv runs on
the Winograd schedule, which a dilated conv cannot take. Relay's Legalize and Relax's
LegalizeOps of ``nn.conv2d`` both decide with ``phase_plan``; the phases are image-major
(``PHASE_AXES``: image ``i``'s phases are batch rows ``i*dh*dw ...``), so a Relax kernel over
a symbolic batch still computes each image from that image alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from .utils import pad_tuple

MIN_PHASE = 8  # phase images at least this many pixels a side (Winograd needs a few tiles)
# (Tried: with row tiles in 16-channel blocks (conv_lanes.ROW_TILES_CHANNEL_BLOCK_BYTES) the
# dilated conv itself for dilation 4 and 2 at 32x32, DeepLab's 256 -> 64 + bias + relu, alone,
# one thread, Sapphire Rapids, ms, phases / dilated (ONNX Runtime): d4 1.36 / 1.66 (1.53), d2
# 0.99 / 1.73 (1.67). Not kept.)
MIN_CHANNELS = 16  # input and output channels (fewer: the Winograd transforms cost more)

# (n, c, h/dh, dh, w/dw, dw) -> (n, dh, dw, c, h/dh, w/dw): the phases of each image together
PHASE_AXES = (0, 3, 5, 1, 2, 4)
# (n, dh, dw, o, oh/dh, ow/dw) -> (n, o, oh/dh, dh, ow/dw, dw): the pixels back in place
UNPHASE_AXES = (0, 3, 4, 1, 5, 2)


def phase_plan(data_shape: Sequence, weight_shape: Sequence, strides: Sequence,
               padding: Sequence, dilation: Sequence, groups: int, dtype: str,
               out_dtype: str | None = None) -> tuple | None:
    """((dh, dw), (pad top, left, bottom, right) in phase pixels) of an NCHW/OIHW float32 conv
    computed over its dilation phases, or None to keep the dilated conv.

    ``data_shape[0]`` (the batch) may be symbolic; every other size must be an int. Phases
    smaller than ``MIN_PHASE`` pixels a side (or not a whole number of them) and convs with
    fewer than ``MIN_CHANNELS`` channels keep their dilation."""
    if int(groups) != 1 or str(dtype) != "float32" or str(out_dtype or dtype) != "float32":
        return None
    if data_shape is None or weight_shape is None or len(data_shape) != 4 or \
            len(weight_shape) != 4:
        return None
    dh, dw = (int(v) for v in dilation)
    if tuple(int(v) for v in strides) != (1, 1) or (dh, dw) == (1, 1):
        return None
    try:
        c, h, w = (int(v) for v in data_shape[1:])
        o, _, kh, kw = (int(v) for v in weight_shape)
    except TypeError:  # a symbolic size other than the batch
        return None
    if (kh, kw) != (3, 3) or min(c, o) < MIN_CHANNELS:
        return None
    pads = tuple(int(p) for p in pad_tuple(padding, 2, "nn.conv2d"))
    steps = (dh, dw, dh, dw)
    if h % dh or w % dw or any(p % s for p, s in zip(pads, steps, strict=True)) or \
            min(h // dh, w // dw) < MIN_PHASE:
        return None
    return (dh, dw), tuple(p // s for p, s in zip(pads, steps, strict=True))
