"""Legalize of a grouped ``nn.conv2d`` of few groups with few output channels a group on CPUs:
one ungrouped conv per group over its slice of the input channels and of the weight, the
results concatenated along the channels, where the weight is computed at run time
(``topi.grouped_split``: the rule and its reasons).

Difference from TVM: TVM keeps the grouped conv (its x86 schedule handles groups itself).
"""

from __future__ import annotations

from ....topi import grouped_split
from ...expr import Constant
from ..transform import concatenate, split
from ._legalize_dilated import _static
from .nn import conv2d


def legalize_grouped_conv2d(attrs, inputs, types):
    """The grouped conv2d as one conv per group (module docstring), or None."""
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW" or \
            (attrs.out_layout or "NCHW") != "NCHW":
        return None
    data, weight = inputs
    if isinstance(weight, Constant):  # (packed once at build time: see split_plan)
        return None
    data_type, weight_type, out_type = types[0], types[1], types[2]
    groups = grouped_split.split_plan(_static(data_type), _static(weight_type),
                                      _static(out_type), attrs.groups, attrs.dilation,
                                      str(data_type.dtype), attrs.out_dtype)
    if groups is None:
        return None
    xs, ws = split(data, groups, axis=1), split(weight, groups, axis=0)
    o = int(weight_type.shape[0]) // groups
    parts = [conv2d(xs[i], ws[i], strides=attrs.strides, padding=attrs.padding,
                    dilation=attrs.dilation, groups=1, channels=o,
                    kernel_size=attrs.kernel_size, out_dtype=attrs.out_dtype)
             for i in range(groups)]
    return concatenate(parts, axis=1)
