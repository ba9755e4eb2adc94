"""ONNX's ``RoiAlign`` and ``MaxRoiPool`` (and torchvision's ``roi_align`` / ``roi_pool``, the
same computations): the checks and static facts the importers share. They run as native
kernels (``schedule.roi_ops``): Relay through its ops (``vision.onnx_roi_align``,
``vision.roi_pool``), Relax as PrimFuncs of their own."""

from __future__ import annotations

import numpy as np

from ..topi.roi_align import RoiAlignSpec

__all__ = ["check_iou_threshold", "roi_align_spec", "max_roi_pool_facts", "torchvision_roi_align_spec",
           "torchvision_roi_pool_facts"]


def _text(v, default: str) -> str:
    v = default if v is None else v
    return v.decode() if isinstance(v, bytes) else str(v)


def _static_chw(x_shape, fail) -> None:
    if len(x_shape) != 4:
        raise fail(f"the input must be NCHW, got shape {list(x_shape)}")
    if not all(isinstance(d, int | np.integer) for d in x_shape[1:]):
        raise fail(f"the feature map's C, H and W must be static, got {list(x_shape)}")


def roi_align_spec(x_shape, rois_shape, attrs: dict, opset: int, fail) -> RoiAlignSpec:
    """The ``RoiAlignSpec`` of a RoiAlign node (opset 10: output_half_pixel boxes; 16: the
    ``coordinate_transformation_mode`` attribute, half_pixel by default)."""
    _static_chw(x_shape, fail)
    if len(rois_shape) != 2 or rois_shape[-1] != 4:
        raise fail(f"rois must be [num_rois, 4], got {list(rois_shape)}")
    grid = int(attrs.get("sampling_ratio", 0))
    if grid < 0:
        raise fail(f"sampling_ratio must be >= 0 (0: adaptive), got {grid}")
    ctm = _text(attrs.get("coordinate_transformation_mode"),
                "half_pixel" if opset >= 16 else "output_half_pixel")
    mode = _text(attrs.get("mode"), "avg")
    if ctm not in ("half_pixel", "output_half_pixel") or mode not in ("avg", "max"):
        raise fail(f"unknown coordinate_transformation_mode {ctm!r} or mode {mode!r}")
    oh, ow = int(attrs.get("output_height", 1)), int(attrs.get("output_width", 1))
    if oh < 1 or ow < 1:
        raise fail(f"output_height and output_width must be positive, got {oh} x {ow}")
    return RoiAlignSpec(oh, ow, grid, float(attrs.get("spatial_scale", 1.0)),
                        ctm == "half_pixel", mode)


def max_roi_pool_facts(x_shape, rois_shape, attrs: dict, fail) -> tuple[tuple[int, int], float]:
    """((pooled height, pooled width), spatial_scale) of a MaxRoiPool node."""
    _static_chw(x_shape, fail)
    if len(rois_shape) != 2 or rois_shape[-1] != 5:
        raise fail(f"rois must be [num_rois, 5] (batch, x1, y1, x2, y2), got {list(rois_shape)}")
    pooled = tuple(int(p) for p in attrs.get("pooled_shape", ()))
    if len(pooled) != 2 or min(pooled) < 1:
        raise fail(f"pooled_shape must be two positive sizes, got {list(pooled)}")
    return pooled, float(attrs.get("spatial_scale", 1.0))


def torchvision_roi_align_spec(x_shape, rois_shape, scale, pooled_h, pooled_w, ratio, aligned,
                               fail) -> RoiAlignSpec:
    """torchvision's ``roi_align`` (boxes [K, 5]: batch, x1, y1, x2, y2) as ONNX RoiAlign
    computes it: ``aligned`` is the half-pixel offset (else boxes at least one pixel), a
    ``sampling_ratio`` <= 0 the adaptive grid; the average of the samples."""
    _static_chw(x_shape, fail)
    if len(rois_shape) != 2 or rois_shape[-1] != 5:
        raise fail(f"rois must be [K, 5] (batch, x1, y1, x2, y2), got {list(rois_shape)}")
    return RoiAlignSpec(int(pooled_h), int(pooled_w), max(int(ratio), 0), float(scale),
                        bool(aligned), "avg")


def torchvision_roi_pool_facts(x_shape, rois_shape, fail) -> None:
    """Check torchvision ``roi_pool``'s operands (its boxes are MaxRoiPool's)."""
    _static_chw(x_shape, fail)
    if len(rois_shape) != 2 or rois_shape[-1] != 5:
        raise fail(f"rois must be [K, 5] (batch, x1, y1, x2, y2), got {list(rois_shape)}")


def check_iou_threshold(value, fail) -> None:
    """NonMaxSuppression's iou_threshold, where known at import, must lie in [0, 1]: ONNX
    Runtime refuses the model otherwise (a value known only at run time is not checked)."""
    if value is None:
        return
    v = float(np.asarray(value).reshape(-1)[0])
    if not 0.0 <= v <= 1.0:
        raise fail(f"iou_threshold must be in [0, 1] (ONNX Runtime refuses others), got {v}")
