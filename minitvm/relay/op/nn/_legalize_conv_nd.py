"""Legalize of ``nn.conv1d`` and ``nn.conv2d_transpose`` on CPUs, onto ``nn.conv2d`` and its
native kernels.

``nn.conv1d`` (NCW/OIW) is a conv2d over one row: ``expand_dims`` of data and weight, the conv2d,
``squeeze`` (the weight's expand_dims folds away with a constant weight). Before, it ran as a
numpy kernel: a 1-D CNN of two convs (64->128 channels width 5, 128->128 width 3, with ReLUs)
over 4000 samples took 23.2 ms against ONNX Runtime's 8.2 ms at one thread, and 7.6 ms as
conv2d.

A strided ``nn.conv2d_transpose`` becomes one ordinary convolution per output phase
(``topi.conv_transpose_phases``): ``sh * sw`` ``nn.conv2d`` calls, each computing only the
products that are not zero, interleaved by ``stack`` and ``reshape``. The convs take the native
conv schedules; the filter slices are ``take``s of the weight, folded to constants by
FoldConstant when the weight is one. Where the rewrite does not apply (grouped or dilated, a
layout other than NCHW/IOHW, phases of unequal sizes, a phase without filter rows, padding past
the filter) the op stays as it is and runs as before.

DCGAN's generator (four 4x4 stride-2 transposed convs) took 86 ms through the numpy fallback,
and takes 10.8 ms so, against ONNX Runtime's 11.1 ms at one thread.

Difference from TVM: TVM keeps both ops (its ``legalize_conv2d_transpose`` only rewrites NHWC to
NCHW) and computes them with kernels of their own.
"""

from __future__ import annotations

import numpy as np

from ....topi.conv_transpose_phases import phases
from ...expr import const
from ..op import register_legalize
from ..transform import expand_dims, reshape, squeeze, stack, transpose
from ..transform_index import take
from .nn import conv2d


@register_legalize("nn.conv1d")
def legalize_conv1d(attrs, inputs, types):
    """An NCW/OIW ``nn.conv1d`` as ``nn.conv2d`` over one row (None for other layouts)."""
    if attrs.data_layout != "NCW" or attrs.kernel_layout != "OIW" or \
            (attrs.out_layout or "NCW") != "NCW":
        return None
    data, weight = inputs
    left, right = (int(p) for p in attrs.padding)
    ksize = None if attrs.kernel_size is None else (1, int(attrs.kernel_size[0]))
    out = conv2d(expand_dims(data, 2), expand_dims(weight, 2), strides=(1, int(attrs.strides[0])),
                 padding=(0, left, 0, right), dilation=(1, int(attrs.dilation[0])),
                 groups=int(attrs.groups), channels=attrs.channels, kernel_size=ksize,
                 out_dtype=attrs.out_dtype)
    return squeeze(out, axis=[2])


@register_legalize("nn.conv2d_transpose")
def legalize_conv2d_transpose(attrs, inputs, types):
    """A strided NCHW/IOHW ``nn.conv2d_transpose`` as one ``nn.conv2d`` per output phase, then
    interleaved (None where that does not apply: the op stays)."""
    data, weight = inputs
    dt, wt, ot = types
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "IOHW" or \
            (attrs.out_layout or "NCHW") != "NCHW" or int(attrs.groups) != 1 or \
            any(int(d) != 1 for d in attrs.dilation):
        return None
    try:
        (n, c, h, w), (_, o, kh, kw), (_, _, oh, ow) = (
            [int(d) for d in t.shape] for t in (dt, wt, ot))
    except (TypeError, ValueError):  # (a symbolic dimension)
        return None
    sh, sw = (int(s) for s in attrs.strides)
    pt, pl = (int(p) for p in attrs.padding[:2])
    rows, cols = phases(sh, pt, kh, h, oh), phases(sw, pl, kw, w, ow)
    if rows is None or cols is None:
        return None

    def phase(ty, tx):
        (taps_y, top, bottom), (taps_x, left, right) = ty, tx
        k = take(take(weight, const(np.array(taps_y, "int32")), axis=2),
                 const(np.array(taps_x, "int32")), axis=3)
        return conv2d(data, transpose(k, (1, 0, 2, 3)), padding=(top, left, bottom, right),
                      channels=o, kernel_size=(len(taps_y), len(taps_x)),
                      out_dtype=attrs.out_dtype)

    q = oh // sh
    lines = []
    for ty in rows:  # each row phase: its column phases interleaved along the width
        line = [phase(ty, tx) for tx in cols]
        lines.append(line[0] if sw == 1 else reshape(stack(line, axis=4), (n, o, q, ow)))
    return lines[0] if sh == 1 else reshape(stack(lines, axis=3), (n, o, oh, ow))
