"""Legalize of ``nn.conv2d`` on CPUs (TVM's ``legalize_conv2d`` calling
``topi.nn.conv2d_legalize``) and the Relay builder its int8 rules share, TVM's
``topi.generic.conv2d_alter_int8_common``: shift the data to the kernel's 8-bit type where
they differ, pad input channels (data and kernel) and output channels (kernel, then slice the
extra outputs off) to the vector lengths the target's int8 instructions need."""

from __future__ import annotations

from ....ir.dialect import register_hook
from ....topi import nn as topi_nn
from ....topi.arm_cpu import conv2d_alter_op as _arm_rule  # noqa: F401  (registers the rule)
from ....topi.utils import pad_tuple
from ...expr import ExprWithOp, const
from ..op import register_legalize
from ..reduce import sum as _sum
from ..tensor import add, cast, multiply, subtract
from ..transform import expand_dims, strided_slice
from ._legalize_conv2d_layout import legalize_conv2d_layout
from ._legalize_dilated import legalize_dilated_conv2d
from ._legalize_grouped import legalize_grouped_conv2d
from .nn import conv2d, pad


def _round_up(value: int, multiple: int) -> int:
    """TVM's padding target: the next multiple strictly above (only used when not aligned)."""
    return (value + multiple) // multiple * multiple


def conv2d_alter_int8_common(data, data_type, kernel, kernel_type, out_type, attrs,
                             data_dtype: str, in_channel_vector_length: int,
                             out_channel_vector_length: int):
    """The conv2d with channels padded for fast int8 instructions, or None (dilated, grouped,
    or a layout other than NHWC/HWIO and NCHW/OIHW), as TVM's generic helper builds it."""
    if tuple(int(d) for d in attrs["dilation"]) not in ((1, 1), (1,)) or \
            int(attrs["groups"]) != 1:
        return None
    layouts = (attrs["data_layout"], attrs["kernel_layout"])
    if layouts not in (("NHWC", "HWIO"), ("NCHW", "OIHW")):
        return None
    nhwc = layouts == ("NHWC", "HWIO")
    new_attrs = dict(attrs)
    pt, pl, pb, pr = (int(p) for p in pad_tuple(attrs["padding"], 2, "nn.conv2d"))
    shift = str(data_type.dtype) != data_dtype
    if shift:  # C = (A + 128) conv B - 128 * sum(B), or with the signs flipped for int8
        before, after, pad_value = (add, subtract, 128) if data_dtype == "uint8" else \
            (subtract, add, -128)
        if nhwc:
            adjust = _sum(cast(kernel, "int32"), axis=(0, 1, 2))
            pad_width = ((0, 0), (pt, pb), (pl, pr), (0, 0))
        else:
            adjust = expand_dims(_sum(cast(kernel, "int32"), axis=(1, 2, 3)), axis=1,
                                 num_newaxis=2)
            pad_width = ((0, 0), (0, 0), (pt, pb), (pl, pr))
        data = cast(before(cast(data, "int32"), const(128, "int32")), data_dtype)
        if any((pt, pl, pb, pr)):
            data = pad(data, pad_width=pad_width, pad_value=pad_value)
        new_attrs["padding"] = (0, 0)
        adjust = multiply(adjust, const(128, "int32"))
    in_channel = int(data_type.shape[3 if nhwc else 1])
    out_channel = int(kernel_type.shape[3 if nhwc else 0])
    if in_channel % in_channel_vector_length:
        diff = _round_up(in_channel, in_channel_vector_length) - in_channel
        if nhwc:
            data = pad(data, pad_width=((0, 0), (0, 0), (0, 0), (0, diff)))
            kernel = pad(kernel, pad_width=((0, 0), (0, 0), (0, diff), (0, 0)))
        else:
            width = ((0, 0), (0, diff), (0, 0), (0, 0))
            data, kernel = pad(data, pad_width=width), pad(kernel, pad_width=width)
    padded_out = out_channel % out_channel_vector_length != 0
    if padded_out:
        new_out = _round_up(out_channel, out_channel_vector_length)
        diff = new_out - out_channel
        kernel = pad(kernel, pad_width=((0, 0), (0, 0), (0, 0), (0, diff)) if nhwc else
                     ((0, diff), (0, 0), (0, 0), (0, 0)))
        new_attrs["channels"] = new_out
    out = conv2d(data, kernel, **new_attrs)
    if padded_out:
        out = strided_slice(out, begin=[0, 0, 0, 0], end=[int(d) for d in out_type.shape])
    return after(out, adjust) if shift else out


register_hook("conv2d_alter_int8_common", ExprWithOp, conv2d_alter_int8_common)


@register_legalize("nn.conv2d")
def legalize_conv2d(attrs, inputs, types):
    """TVM's nn.conv2d Legalize hook: the target's ``topi.nn.conv2d_legalize`` rule, else a
    dilated float conv over its dilation phases (``_legalize_dilated``), else a grouped conv of
    few groups with few output channels a group as one conv per group (``_legalize_grouped``),
    else a conv in another layout than NCHW/OIHW relaid out to it (``_legalize_conv2d_layout``)."""
    out = topi_nn.conv2d_legalize(attrs, inputs, types)
    if out is None:
        out = legalize_dilated_conv2d(attrs, inputs, types)
    if out is None:
        out = legalize_grouped_conv2d(attrs, inputs, types)
    return out if out is not None else legalize_conv2d_layout(attrs, inputs, types)
