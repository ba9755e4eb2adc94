"""ConvertLayout hooks (``FTVMConvertOpLayout``) of the channel-blocked convolutions that the x86
AlterOpLayout rule makes (``nn.contrib_conv2d_NCHWc``, ``nn.contrib_depthwise_conv2d_NCHWc``):
asked for NCHW data, each becomes the plain ``nn.conv2d`` it was made from (OIHW weights,
depthwise as ``groups = channels``).

ConvertLayout's rewriter then re-lays out the operands (a constant blocked weight's transform
back to OIHW folds at build time), carries NCHW through the elementwise and broadcast ops
between two convolutions, and inserts transforms only where the layout ends; the convolution
runs on the NCHW kernels (``schedule/conv_*``, ``depthwise*``). The ConvertBlockedOps pass
(``relay/transform/convert_blocked_ops.py``) applies it in relay.build."""

from __future__ import annotations

import re

from ..op import register_convert_op_layout
from .nn import conv2d

_BLOCKED = re.compile(r"NCHW(\d+)c")


def blocked_kernel_layout(kernel_shape, kernel_layout: str) -> str:
    """The layout a blocked convolution's kernel really has: its ``kernel_layout`` attr where
    that fits the kernel's rank, else the one its rank implies (as TVM's NCHWc computes read it
    from the shape: rank 6 ``OIHW{i}i{o}o``, rank 7 ``OIHW{i}i{o}o{n}i``; the ops' constructors
    default the attr to ``OIHW``)."""
    from ..layout import Layout

    rank = len(kernel_shape)
    if Layout(kernel_layout).ndim() == rank:
        return kernel_layout
    dims = [int(d) for d in kernel_shape[4:]]
    if rank == 6:
        return f"OIHW{dims[0]}i{dims[1]}o"
    if rank == 7:
        return f"OIHW{dims[0]}i{dims[1]}o{dims[2]}i"
    raise ValueError(f"blocked convolution: a kernel of rank {rank} ({list(kernel_shape)}) fits "
                     f"neither its layout {kernel_layout!r} nor a blocked OIHW layout")


def _unblocked_conv(attrs, inputs, tinfos, desired_layouts, op_name: str):
    """The NCHW / OIHW ``nn.conv2d`` of a blocked convolution's attrs (desired layouts
    ``["NCHW", "OIHW" | "default"]``), or the blocked call re-blocked as asked (``NCHW{x}c`` with
    a blocked kernel layout)."""
    if len(desired_layouts) != 2:
        raise ValueError(f"{op_name}: ConvertLayout expects a desired layout for both the data "
                         f"and the kernel, got {list(desired_layouts)}")
    data_layout, kernel_layout = (str(x) for x in desired_layouts)
    data, weight = inputs
    new_attrs = dict(attrs)
    if data_layout == "NCHW":
        if kernel_layout not in ("OIHW", "default"):
            raise ValueError(f"{op_name}: an NCHW convolution takes an OIHW kernel, got the "
                             f"desired kernel layout {kernel_layout!r}")
        new_attrs.update(data_layout="NCHW", kernel_layout="OIHW", out_layout="")
        actual = blocked_kernel_layout(tinfos[1].shape, str(attrs["kernel_layout"]))
        if actual != str(attrs["kernel_layout"]):
            # the attr misstates the kernel, so the rewriter would not transform it: do it here
            from ..transform import layout_transform

            weight = layout_transform(weight, actual, "OIHW")
        return conv2d(data, weight, **new_attrs)
    if _BLOCKED.fullmatch(data_layout) and kernel_layout != "default":
        from ._contrib_more import contrib_depthwise_conv2d_nchwc
        from .nn import contrib_conv2d_nchwc

        new_attrs.update(data_layout=data_layout, kernel_layout=kernel_layout,
                         out_layout=data_layout)
        ctor = contrib_depthwise_conv2d_nchwc if "depthwise" in op_name else contrib_conv2d_nchwc
        return ctor(data, weight, **new_attrs)
    raise ValueError(f"{op_name}: cannot convert to the data layout {data_layout!r} with the "
                     f"kernel layout {kernel_layout!r} (NCHW, or NCHW<x>c with a blocked kernel)")


@register_convert_op_layout("nn.contrib_conv2d_NCHWc")
def convert_conv2d_nchwc(attrs, inputs, tinfos, desired_layouts):
    """contrib_conv2d_NCHWc in the desired layouts: NCHW gives the plain conv2d."""
    return _unblocked_conv(attrs, inputs, tinfos, desired_layouts, "nn.contrib_conv2d_NCHWc")


@register_convert_op_layout("nn.contrib_depthwise_conv2d_NCHWc")
def convert_depthwise_conv2d_nchwc(attrs, inputs, tinfos, desired_layouts):
    """contrib_depthwise_conv2d_NCHWc in the desired layouts: NCHW gives the grouped conv2d
    (groups = channels) that the depthwise kernels take."""
    return _unblocked_conv(attrs, inputs, tinfos, desired_layouts,
                           "nn.contrib_depthwise_conv2d_NCHWc")
