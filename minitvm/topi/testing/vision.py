"""Detection references in TVM's testing signatures (``roi_align_nchw_python``,
``roi_pool_nchw_python``, ``reorg_python``)."""

from __future__ import annotations

from ..reference.vision import reorg_np, roi_align_nchw, roi_pool_nchw

__all__ = ["roi_align_nchw_python", "roi_align_nhwc_python", "roi_pool_nchw_python",
           "reorg_python"]


def _mode(mode) -> str:
    return mode.decode() if isinstance(mode, bytes) else str(mode)


def roi_align_nchw_python(a_np, rois_np, pooled_size, spatial_scale, sample_ratio,
                          mode=b"avg"):
    """ROIAlign of NCHW data; ``pooled_size`` an int or a pair."""
    ps = (pooled_size, pooled_size) if isinstance(pooled_size, int) else tuple(pooled_size)
    return roi_align_nchw(a_np, rois_np, ps, spatial_scale, sample_ratio,
                          _mode(mode)).astype(a_np.dtype)


def roi_align_nhwc_python(a_np, rois_np, pooled_size, spatial_scale, sample_ratio,
                          mode=b"avg"):
    """ROIAlign of NHWC data."""
    out = roi_align_nchw_python(a_np.transpose(0, 3, 1, 2), rois_np, pooled_size,
                                spatial_scale, sample_ratio, mode)
    return out.transpose(0, 2, 3, 1)


def roi_pool_nchw_python(a_np, rois_np, pooled_size, spatial_scale):
    """ROIPool of NCHW data."""
    ps = (pooled_size, pooled_size) if isinstance(pooled_size, int) else tuple(pooled_size)
    return roi_pool_nchw(a_np, rois_np, ps, spatial_scale)


def reorg_python(a_np, stride):
    """Darknet's reorg of NCHW data."""
    return reorg_np(a_np, int(stride))
