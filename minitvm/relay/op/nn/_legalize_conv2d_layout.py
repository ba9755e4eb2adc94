"""Legalize of an ``nn.conv2d`` in a layout other than NCHW/OIHW (TFLite's and TF's NHWC/HWIO
and depthwise NHWC/HWOI, ConvertLayout's NHWC, blocked NCHW4c/OIHW4i4o): ``layout_transform``
of the data and weight to NCHW/OIHW, the NCHW conv (native conv schedules), and a
``layout_transform`` of the result back to the op's output layout.

Only NCHW/OIHW has a native compute, so such a conv ran in a numpy kernel, together with the
elementwise ops fused after it. The weight's transform folds to a constant when the weight is
one (FoldConstant); the data's fuses with the elementwise ops before it, the result's with
those after. Difference from TVM: TVM keeps the op and computes NHWC with kernels of its own.

A conv reading ``nn.space_to_batch_nd`` (TensorFlow's dilated conv) is kept for FlattenAtrousConv,
which runs later and needs the conv's own layout to flatten the pattern to a dilated conv.
"""

from __future__ import annotations

from ....ir.op import Op
from ....topi.layout import Layout
from ...expr import Call
from ..transform import layout_transform
from .nn import conv2d

_DATA, _KERNEL = "NCHW", "OIHW"


def _primal_letters(layout: str) -> str:
    """The primal axes of ``layout`` in order (``NCHW4c`` -> ``NCHW``); '' when unparsable."""
    try:
        return "".join(a.name for a in Layout(layout).axes if a.name.isupper())
    except (ValueError, TypeError):
        return ""


def legalize_conv2d_layout(attrs, inputs, types):
    """The conv relaid out to NCHW/OIHW between ``layout_transform``s, or None when it already
    is NCHW/OIHW/NCHW or a layout names axes other than N, C, H, W (O, I, H, W)."""
    data_layout, kernel_layout = str(attrs.data_layout), str(attrs.kernel_layout)
    out_layout = str(attrs.out_layout or data_layout)
    if (data_layout, kernel_layout, out_layout) == (_DATA, _KERNEL, _DATA):
        return None
    if sorted(_primal_letters(data_layout)) != sorted(_DATA) or \
            sorted(_primal_letters(out_layout)) != sorted(_DATA) or \
            sorted(_primal_letters(kernel_layout)) != sorted(_KERNEL):
        return None
    data, weight = inputs
    if isinstance(data, Call) and isinstance(data.op, Op) and \
            data.op.name == "nn.space_to_batch_nd":
        return None
    if data_layout != _DATA:
        data = layout_transform(data, data_layout, _DATA)
    if kernel_layout != _KERNEL:
        weight = layout_transform(weight, kernel_layout, _KERNEL)
    out = conv2d(data, weight, strides=tuple(attrs.strides), padding=tuple(attrs.padding),
                 dilation=tuple(attrs.dilation), groups=int(attrs.groups),
                 channels=attrs.channels, kernel_size=attrs.kernel_size, data_layout=_DATA,
                 kernel_layout=_KERNEL, out_layout="", out_dtype=attrs.out_dtype)
    return out if out_layout == _DATA else layout_transform(out, _DATA, out_layout)
