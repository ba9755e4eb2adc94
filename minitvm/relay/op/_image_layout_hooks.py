"""ConvertLayout hooks (``FTVMConvertOpLayout``) of the image resize ops, as TVM registers
them: one desired layout, which the op takes as its ``layout``."""

from __future__ import annotations

from .image import resize2d
from .op import register_convert_op_layout


@register_convert_op_layout("image.resize2d")
def convert_image_resize2d(attrs, inputs, tinfos, desired_layouts):
    """image.resize2d in the desired layout."""
    if len(desired_layouts) != 1:
        raise ValueError("image.resize2d: exactly one desired layout is expected")
    layout = str(desired_layouts[0])
    if layout == "default":
        raise ValueError("image.resize2d: the layout cannot be default")
    new_attrs = dict(attrs)
    new_attrs["layout"] = layout
    return resize2d(*inputs, **new_attrs)
