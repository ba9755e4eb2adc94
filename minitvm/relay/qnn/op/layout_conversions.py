"""ConvertLayout hooks (``FTVMConvertOpLayout``) of the quantized convolutions, as TVM registers
them: (data, kernel) desired layouts, "default" picking the kernel layout for the data layout."""

from __future__ import annotations

from ...op.nn._layout_hooks import desired_pair, is_depthwise_conv2d
from ...op.op import register_convert_op_layout
from .qnn import conv2d
from .qnn_more import conv2d_transpose


@register_convert_op_layout("qnn.conv2d")
def convert_qnn_conv2d(attrs, inputs, tinfos, desired_layouts):
    """qnn.conv2d in the desired (data, kernel) layouts."""
    data_layout, kernel_layout = desired_pair(desired_layouts, "qnn.conv2d")
    new_attrs = dict(attrs)
    new_attrs["data_layout"] = data_layout
    if kernel_layout == "default":
        if data_layout == "NCHW":
            kernel_layout = "OIHW"
        elif data_layout == "NHWC":
            depthwise = is_depthwise_conv2d(tinfos[0].shape, attrs["data_layout"],
                                            tinfos[1].shape, attrs["kernel_layout"],
                                            attrs["groups"])
            kernel_layout = "HWOI" if depthwise else "HWIO"
        else:
            raise ValueError(f"qnn.conv2d: layout {data_layout} is not yet supported")
    new_attrs["kernel_layout"] = kernel_layout
    return conv2d(*inputs, **new_attrs)


@register_convert_op_layout("qnn.conv2d_transpose")
def convert_qnn_conv2d_transpose(attrs, inputs, tinfos, desired_layouts):
    """qnn.conv2d_transpose in the desired (data, kernel) layouts."""
    data_layout, kernel_layout = desired_pair(desired_layouts, "qnn.conv2d_transpose")
    new_attrs = dict(attrs)
    new_attrs["data_layout"] = data_layout
    if kernel_layout == "default":
        kernel_layout = {"NCHW": "IOHW", "NHWC": "HWIO"}.get(data_layout)
        if kernel_layout is None:
            raise ValueError(f"qnn.conv2d_transpose: layout {data_layout} is not yet supported")
    new_attrs["kernel_layout"] = kernel_layout
    return conv2d_transpose(*inputs, **new_attrs)
