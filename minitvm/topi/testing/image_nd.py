"""Image and upsampling references in TVM's testing signatures (``resize1d_python``,
``resize3d_python``, ``upsampling3d_python``, ``trilinear_resize3d_python``,
``crop_and_resize_python``, ``grid_sample_python``, ``affine_grid_python``)."""

from __future__ import annotations

import numpy as np

from ..reference.image_nd import affine_grid, crop_and_resize_nchw, grid_sample_nchw, resize_nd

__all__ = ["resize1d_python", "resize3d_python", "upsampling3d_python",
           "trilinear_resize3d_python", "crop_and_resize_python", "grid_sample_python",
           "affine_grid_python"]


class _Attrs:
    def __init__(self, method, mode):
        self.method = {"bilinear": "linear", "trilinear": "linear"}.get(method, method)
        self.coordinate_transformation_mode = mode
        self.rounding_method = ""
        self.cubic_alpha = -0.5
        self.cubic_exclude = 0


def _resize_scaled(data, scale, layout, method, mode):
    axes = [layout.index(a) for a in layout if a in "DHW"]
    sizes = [int(round(data.shape[a] * s)) for a, s in zip(axes, scale)]
    nd = len(axes)
    return resize_nd(data, axes, sizes, _Attrs(method, mode), (0.0,) * nd + (1.0,) * nd,
                     str(data.dtype))


def resize1d_python(data, scale, layout="NCW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners"):
    """Resize the W axis by ``scale`` (a 1-tuple)."""
    return _resize_scaled(data, tuple(scale), layout, method, coordinate_transformation_mode)


def resize3d_python(data, scale, layout="NCDHW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners"):
    """Resize the D, H and W axes by ``scale`` (a 3-tuple)."""
    return _resize_scaled(data, tuple(scale), layout, method, coordinate_transformation_mode)


def upsampling3d_python(data, scale, layout="NCDHW"):
    """Nearest-neighbour upsampling of D, H, W by integer factors ``scale``."""
    axes = [layout.index(a) for a in "DHW"]
    out = data
    for a, s in zip(axes, scale):
        out = np.repeat(out, int(s), axis=a)
    return out


def trilinear_resize3d_python(data_in, out_size, layout,
                              coordinate_transformation_mode="align_corners"):
    """Trilinear resize of D, H, W to ``out_size``."""
    axes = [layout.index(a) for a in "DHW"]
    return resize_nd(data_in, axes, out_size, _Attrs("linear", coordinate_transformation_mode),
                     (0.0,) * 3 + (1.0,) * 3, str(data_in.dtype))


def crop_and_resize_python(image, boxes, box_indices, crop_size, layout, method="bilinear",
                           extrapolation_value=0):
    """TensorFlow's crop_and_resize on NCHW or NHWC images."""
    x = image.transpose(0, 3, 1, 2) if layout == "NHWC" else image
    out = crop_and_resize_nchw(x, boxes, box_indices, crop_size, method, extrapolation_value)
    out = out.transpose(0, 2, 3, 1) if layout == "NHWC" else out
    return out.astype(image.dtype)


def grid_sample_python(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros",
                       align_corners=True):
    """PyTorch-style grid sampling of NCHW / NCDHW data."""
    return grid_sample_nchw(data, grid, method, padding_mode, align_corners).astype(data.dtype)


def affine_grid_python(data, target_shape):
    """The (N, 2, H, W) grid of affine matrices (N, 2, 3)."""
    return affine_grid(data, target_shape).astype(data.dtype)
