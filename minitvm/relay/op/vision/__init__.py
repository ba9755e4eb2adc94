"""``relay.vision``: detection operators (NMS, ROI pooling, SSD priors, proposals, YOLO)."""

from .nms import (  # noqa: F401
    all_class_non_max_suppression,
    get_valid_counts,
    non_max_suppression,
)
from .multiclass_nms import multiclass_nms  # noqa: F401
from .onnx_roi import onnx_roi_align, roi_pool_rounding_away  # noqa: F401
from .rcnn import proposal, roi_align, roi_pool  # noqa: F401
from .ssd import multibox_prior, multibox_transform_loc  # noqa: F401
from .yolo import yolo_reorg  # noqa: F401
