"""ConvertLayout hooks (``FTVMConvertOpLayout``) of roi_align / roi_pool, as TVM registers them:
the data takes the desired layout, the rois keep theirs ("default")."""

from __future__ import annotations

from ..nn._layout_hooks import desired_pair
from ..op import register_convert_op_layout
from .rcnn import roi_align, roi_pool


def _roi_hook(op_name, ctor):
    def convert(attrs, inputs, tinfos, desired_layouts):
        data_layout, rois_layout = desired_pair(desired_layouts, op_name)
        if rois_layout != "default":
            raise ValueError(f"{op_name}: rois layout must be default")
        if data_layout not in ("NCHW", "NHWC"):
            raise ValueError(f"{op_name}: layout {data_layout} is not yet supported")
        new_attrs = dict(attrs)
        new_attrs["layout"] = data_layout
        return ctor(*inputs, **new_attrs)

    convert.__name__ = f"convert_{op_name.split('.')[1]}"
    register_convert_op_layout(op_name, convert)
    return convert


convert_roi_align = _roi_hook("vision.roi_align", roi_align)
convert_roi_pool = _roi_hook("vision.roi_pool", roi_pool)
