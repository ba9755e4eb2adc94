"""A grouped conv2d of few groups with few output channels a group, as one ungrouped conv per
group.

The grouped schedule (``schedule.conv_lanes``) computes output channels 16 at a time, a group's
channels padded to 16: with one output channel a group (SiamFC's correlation, whose weight is
the exemplar's features, ``groups`` = the batch) it computes 16 times the conv's work and packs
the run-time weight on every call. Each group as a conv of its own (its slice of the input
channels and of the weight, the results concatenated along the channels) takes the ungrouped
implicit GEMM instead (``schedule.conv_direct``), which tiles the pixels. Measured on an Intel
Xeon, one thread, thread CPU ms, SiamFC's correlation (1x128x24x24 by a 2x64x8x8 run-time
weight, 2 groups): grouped 0.61, split 0.15. With a constant weight, or with fewer
multiply-adds a group, the split measured the same or slower (``MIN_GROUP_MACS``).
(3x3 convs of at most ``MAX_OUT_PER_GROUP`` outputs a group, which the grouped schedules, among
them Winograd's run-time weight transform (``schedule.conv_winograd.RUN_TIME_WEIGHTS``), pad
the same way, measured faster split too: ``MIN_GROUP_MACS``.)
Relay's Legalize of ``nn.conv2d`` decides with ``split_plan``.
"""

from __future__ import annotations

from collections.abc import Sequence

ENABLED = True  # (off: every grouped conv stays grouped; for A/B runs)
MAX_GROUPS = 4  # at most this many groups (each part is a kernel of its own)
MAX_OUT_PER_GROUP = 4  # at most this many output channels a group (at least 4x padding waste)
# at least this many multiply-adds a group (an output image): below, the parts' own kernels
# (the input's and the weight's slices, the concatenation) cost what the padding saves. Intel
# Xeon, one thread, run-time weight, conv + relu, one process A/B, 7 interleaved rounds, thread
# CPU ms, grouped / split (multiply-adds a group): won, 2 groups 64 -> 1 8x8 at 24x24 0.595 /
# 0.139 (1.2M), 2 of 64 -> 4 5x5 at 24x24 0.290 / 0.119 (1.6M), 4 of 32 -> 1 3x3 at 34x34
# 0.288 / 0.092 (333K), 2 of 32 -> 2 3x3 at 34x34 0.153 / 0.050, 2 of 32 -> 4 0.152 / 0.070,
# 2 of 32 -> 4 3x3 at 20x20 0.062 / 0.033 (461K), at 12x12 0.031 / 0.022 (166K); below it,
# 2 of 16 -> 2 3x3 at 16x16 0.0082 / 0.0088 (74K), 3 of 16 -> 2 3x3 / 2 at 28x28 0.0126 /
# 0.0262 (56K) (but 2 of 32 -> 1 3x3 at 16x16 0.046 / 0.012 (74K)). With a constant weight,
# grouped / split, 2 of 64 -> 1 8x8 at 24x24 0.542 / 0.562, 2 of 32 -> 2 3x3 at 30x30 0.116 /
# 0.128, 4 of 16 -> 4 3x3 at 32x32 0.074 / 0.061, 2 of 16 -> 4 3x3 at 56x56 0.103 / 0.237
MIN_GROUP_MACS = 1 << 17


def split_plan(data_shape: Sequence | None, weight_shape: Sequence | None,
               out_shape: Sequence | None, groups: int, dilation: Sequence, dtype: str,
               out_dtype: str | None = None) -> int | None:
    """The group count of an NCHW/OIHW float32 conv computed as one ungrouped conv per group,
    or None to keep the grouped conv: 2 to ``MAX_GROUPS`` groups, each of more than one input
    channel (not depthwise), at most ``MAX_OUT_PER_GROUP`` output channels and at least
    ``MIN_GROUP_MACS`` multiply-adds an image, undilated, static shapes.

    Only for a weight computed at run time: a constant weight is packed once at build time,
    and an ungrouped conv's packing pads its output channels to 16 as well (no gain)."""
    groups = int(groups)
    if not ENABLED or not 2 <= groups <= MAX_GROUPS or str(dtype) != "float32" or \
            str(out_dtype or dtype) != "float32":
        return None
    if data_shape is None or weight_shape is None or out_shape is None or \
            len(data_shape) != 4 or len(weight_shape) != 4 or len(out_shape) != 4 or \
            tuple(int(v) for v in dilation) != (1, 1):
        return None
    try:
        c, o, cg = int(data_shape[1]), int(weight_shape[0]), int(weight_shape[1])
        taps = cg * int(weight_shape[2]) * int(weight_shape[3])
        pixels = int(out_shape[2]) * int(out_shape[3])
    except TypeError:  # (a symbolic size)
        return None
    og = o // groups
    if c != cg * groups or o % groups or cg < 2 or og > MAX_OUT_PER_GROUP or \
            og * taps * pixels < MIN_GROUP_MACS:
        return None
    return groups
