"""Layout rules of the N-d convolutions and pools: ``FInferCorrectLayout`` (which layouts a call
needs and produces, read by ConvertLayout / AlterOpLayout) and TVM's ConvertLayout hooks
(``FTVMConvertOpLayout``) for nn.conv3d, nn.conv3d_transpose and the 3-D pools."""

from __future__ import annotations

from .._layout_rules import conv_layout, deformable_conv_layout, pool_layout
from ..op import register_convert_op_layout, register_op_attr
from ._conv_nd import conv3d, conv3d_transpose, deformable_conv2d
from ._layout_hooks import _pool_hook, desired_pair
from ._pool_nd import avg_pool3d, max_pool3d

for _name in ("nn.conv3d", "nn.conv1d_transpose", "nn.conv3d_transpose",
              "nn.contrib_depthwise_conv2d_NCHWc"):
    register_op_attr(_name, "FInferCorrectLayout", conv_layout)
register_op_attr("nn.deformable_conv2d", "FInferCorrectLayout", deformable_conv_layout)
for _name in ("nn.max_pool3d", "nn.avg_pool3d", "nn.adaptive_max_pool1d",
              "nn.adaptive_avg_pool1d", "nn.adaptive_max_pool3d", "nn.adaptive_avg_pool3d",
              "nn.global_max_pool1d", "nn.global_avg_pool1d", "nn.global_max_pool3d",
              "nn.global_avg_pool3d"):
    register_op_attr(_name, "FInferCorrectLayout", pool_layout)


_DEFAULT_KERNEL = {"nn.conv3d": {"NCDHW": "OIDHW", "NDHWC": "DHWIO"},
                   "nn.conv3d_transpose": {"NCDHW": "IODHW", "NDHWC": "DHWIO"},
                   "nn.deformable_conv2d": {"NCHW": "OIHW", "NHWC": "HWIO"}}


def _conv_hook(op_name, ctor):
    def convert(attrs, inputs, tinfos, desired_layouts):
        data_layout, kernel_layout = desired_pair(desired_layouts, op_name)
        new_attrs = dict(attrs)
        new_attrs["data_layout"] = data_layout
        if kernel_layout == "default":
            kernel_layout = _DEFAULT_KERNEL[op_name].get(data_layout)
            if kernel_layout is None:
                raise ValueError(f"{op_name}: layout {data_layout} is not yet supported")
        new_attrs["kernel_layout"] = kernel_layout
        return ctor(*inputs, **new_attrs)

    convert.__name__ = f"convert_{op_name.split('.')[1]}"
    register_convert_op_layout(op_name, convert)
    return convert


convert_conv3d = _conv_hook("nn.conv3d", conv3d)
convert_conv3d_transpose = _conv_hook("nn.conv3d_transpose", conv3d_transpose)
convert_deformable_conv2d = _conv_hook("nn.deformable_conv2d", deformable_conv2d)
convert_max_pool3d = _pool_hook("nn.max_pool3d", max_pool3d)
convert_avg_pool3d = _pool_hook("nn.avg_pool3d", avg_pool3d)
