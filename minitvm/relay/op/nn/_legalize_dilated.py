"""Legalize of a dilated 3x3 ``nn.conv2d`` on CPUs: one stride-1 conv over the dilation phases
(``topi.dilated_phases``: the rule, shared with Relax's LegalizeOps).

The phases are gathered into the batch by a reshape and a transpose (TensorFlow's
space-to-batch), one conv of batch ``N*dh*dw`` runs, and a transpose puts its pixels back.
Measured on a Sapphire Rapids Xeon, one thread, DeepLab's 256 -> 64 branches at 32x32 with bias
and relu (ms, dilated conv / phases, ONNX Runtime): dilation 2 1.67 / 0.99 (1.70), dilation 4
1.69 / 1.40 (1.67). Phases smaller than ``MIN_PHASE`` pixels a side (dilation 6 at 32x32 is not
even a whole number of phases) keep the dilated conv, as do convs with fewer than
``MIN_CHANNELS`` channels.

Difference from TVM: TVM keeps the dilated conv (its ``FlattenAtrousConv`` goes the other way,
folding TensorFlow's space_to_batch_nd / batch_to_space_nd pair back into one).
"""

from __future__ import annotations

from ....ir.type import TensorType
from ....topi import dilated_phases
from ..transform import reshape, transpose
from .nn import conv2d


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
            (attrs.out_layout or "NCHW") != "NCHW":
        return None
    return dilated_phases.phase_plan(data_shape, weight_shape, attrs.strides, attrs.padding,
                                     attrs.dilation, attrs.groups, dtype, attrs.out_dtype)


def legalize_dilated_conv2d(attrs, inputs, types):
    """The dilated conv2d as one conv over its dilation phases (module docstring), or None."""
    data_type, weight_type, out_type = types[0], types[1], types[2]
    data_shape, out_shape = _static(data_type), _static(out_type)
    if data_shape is None or out_shape is None:
        return None
    plan = phase_plan(attrs, data_shape, _static(weight_type), str(data_type.dtype))
    if plan is None:
        return None
    (dh, dw), pads = plan
    n, c, h, w = data_shape
    _, o, oh, ow = out_shape
    data, weight = inputs
    x = reshape(data, (n, c, h // dh, dh, w // dw, dw))
    x = reshape(transpose(x, dilated_phases.PHASE_AXES), (n * dh * dw, c, h // dh, w // dw))
    y = conv2d(x, weight, strides=(1, 1), padding=pads, dilation=(1, 1), groups=1,
               channels=attrs.channels, kernel_size=(3, 3), out_dtype=attrs.out_dtype)
    y = reshape(y, (n, dh, dw, o, oh // dh, ow // dw))
    return reshape(transpose(y, dilated_phases.UNPHASE_AXES), (n, o, oh, ow))
