"""ConvertLayout hooks (``FTVMConvertOpLayout``) of the layout-sensitive nn ops, as TVM registers
them: conv2d / conv2d_transpose take (data, kernel) desired layouts, pools take one layout."""

from __future__ import annotations

import re

from ..op import register_convert_op_layout
from ._utils import shape_to_primal
from .nn import (
    avg_pool2d,
    contrib_conv2d_nchwc,
    conv2d,
    conv2d_transpose,
    global_avg_pool2d,
    global_max_pool2d,
    max_pool2d,
)


def is_depthwise_conv2d(data_shape, data_layout, kernel_shape, kernel_layout, groups) -> bool:
    """True when input channels == output channels == groups."""
    ic = shape_to_primal(data_shape, data_layout, "NCHW", "data")["C"]
    oc = shape_to_primal(kernel_shape, kernel_layout, "OIHW", "weight")["O"]
    return ic == oc == groups


def _skip_layer() -> bool:
    """Honour ``relay.transform.LayoutConfig(skip_layers=...)`` when that class exists."""
    from ... import transform as relay_transform

    config = getattr(getattr(relay_transform, "LayoutConfig", None), "current", None)
    return bool(config is not None and config.check_skip())


def desired_pair(desired_layouts, op_name: str) -> tuple[str, str]:
    """The (data, second input) layouts a two-input ConvertLayout hook of ``op_name`` is asked
    for, as strings; the data layout cannot be "default" (the second one can)."""
    if len(desired_layouts) != 2:
        raise ValueError(f"A desired layout is expected for both of {op_name}'s inputs")
    data_layout, kernel_layout = (str(x) for x in desired_layouts)
    if data_layout == "default":
        raise ValueError(f"{op_name}: data layout cannot be default")
    return data_layout, kernel_layout


@register_convert_op_layout("nn.conv2d")
def convert_conv2d(attrs, inputs, tinfos, desired_layouts):
    """conv2d in the desired (data, kernel) layouts; "default" picks the kernel layout."""
    data, weight = inputs
    if _skip_layer():
        return conv2d(data, weight, **attrs)
    new_attrs = dict(attrs)
    data_layout, kernel_layout = desired_pair(desired_layouts, "nn.conv2d")
    new_attrs["data_layout"] = data_layout
    tile = re.match(r"NCHW(\d*)c", data_layout)
    if kernel_layout != "default" and not tile:
        new_attrs["kernel_layout"] = kernel_layout
        return conv2d(data, weight, **new_attrs)
    if data_layout == "NCHW":
        new_attrs["kernel_layout"] = "OIHW"
    elif data_layout == "NHWC":
        data_info, weight_info = tinfos
        depthwise = is_depthwise_conv2d(data_info.shape, attrs["data_layout"], weight_info.shape,
                                        attrs["kernel_layout"], attrs["groups"])
        new_attrs["kernel_layout"] = "HWOI" if depthwise else "HWIO"
    elif data_layout == "HWNC":
        new_attrs["kernel_layout"] = "HWOI"
    elif tile:
        if kernel_layout == "default":
            raise ValueError("nn.conv2d: the kernel layout cannot be default for " + data_layout)
        channels = tinfos[0].shape[1]
        if isinstance(channels, int) and channels % int(tile.group(1)):
            return conv2d(data, weight, **attrs)
        new_attrs["kernel_layout"] = kernel_layout
        return contrib_conv2d_nchwc(data, weight, **new_attrs)
    else:
        raise ValueError(f"Layout {data_layout} is not yet supported.")
    return conv2d(data, weight, **new_attrs)


@register_convert_op_layout("nn.conv2d_transpose")
def convert_conv2d_transpose(attrs, inputs, tinfos, desired_layouts):
    data, weight = inputs
    new_attrs = dict(attrs)
    data_layout, kernel_layout = desired_pair(desired_layouts, "nn.conv2d_transpose")
    new_attrs["data_layout"] = data_layout
    if kernel_layout != "default":
        new_attrs["kernel_layout"] = kernel_layout
    elif data_layout == "NCHW":
        new_attrs["kernel_layout"] = "IOHW"
    elif data_layout == "NHWC":
        new_attrs["kernel_layout"] = "HWIO"
    else:
        raise ValueError(f"Layout {data_layout} is not yet supported.")
    return conv2d_transpose(data, weight, **new_attrs)


def _pool_hook(op_name, ctor):
    def convert(attrs, inputs, tinfos, desired_layouts):
        new_attrs = dict(attrs)
        new_attrs["layout"] = str(desired_layouts[0])
        new_attrs["out_layout"] = str(desired_layouts[0])
        return ctor(*inputs, **new_attrs)

    convert.__name__ = f"convert_{op_name.split('.')[1]}"
    register_convert_op_layout(op_name, convert)
    return convert


convert_max_pool2d = _pool_hook("nn.max_pool2d", max_pool2d)
convert_avg_pool2d = _pool_hook("nn.avg_pool2d", avg_pool2d)
convert_global_max_pool2d = _pool_hook("nn.global_max_pool2d", global_max_pool2d)
convert_global_avg_pool2d = _pool_hook("nn.global_avg_pool2d", global_avg_pool2d)
