"""N-d, transposed, deformable and correlation convolution references in TVM's testing
signatures (``conv3d_ncdhw_python``, ``conv1d_transpose_ncw_python``...), over
``topi.reference.conv_nd``."""

from __future__ import annotations

import numpy as np

from ..reference.conv_nd import (
    conv2d_backward_weight_nchw,
    conv_nd,
    conv_transpose_nd,
    correlation_nchw,
    deformable_conv2d_nchw,
)

__all__ = ["conv3d_ncdhw_python", "conv3d_ndhwc_python", "conv1d_transpose_ncw_python",
           "conv3d_transpose_ncdhw_python", "deformable_conv2d_nchw_python",
           "correlation_nchw_python", "conv2d_backward_weight_nchw_python",
           "conv2d_backward_weight_python", "get_pad_tuple3d"]


def _ntuple(v, n) -> tuple:
    return tuple(int(x) for x in v) if isinstance(v, (list, tuple)) else (int(v),) * n


def get_pad_tuple3d(padding, kernel) -> tuple:
    """(front, top, left, back, bottom, right) of an int, 3 or 6 values, "SAME" or "VALID"."""
    kd, kh, kw = _ntuple(kernel, 3)
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return (0,) * 6
        if padding.upper() == "SAME":
            tot = (kd - 1, kh - 1, kw - 1)
            return tuple((t + 1) // 2 for t in tot) + tuple(t // 2 for t in tot)
        raise ValueError(f"unknown padding {padding!r}")
    p = _ntuple(padding, 3)
    if len(p) == 3:
        return p + p
    if len(p) == 6:
        return p
    raise ValueError(f"padding must have 1, 3 or 6 entries, got {padding!r}")


def _pad1d(padding, kw) -> tuple:
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0
        if padding.upper() != "SAME":
            raise ValueError(f"unknown padding {padding!r}")
        return kw // 2, (kw - 1) // 2
    p = _ntuple(padding, 1)
    return (p[0], p[0]) if len(p) == 1 else (p[0], p[1])


def conv3d_ncdhw_python(a_np, w_np, stride, padding, groups: int = 1):
    """Conv3d of NCDHW data with OIDHW weights."""
    pad = get_pad_tuple3d(padding, w_np.shape[2:])
    return conv_nd(a_np, w_np, _ntuple(stride, 3), pad[:3], pad[3:], (1, 1, 1), groups,
                   str(a_np.dtype))


def conv3d_ndhwc_python(a_np, w_np, stride, padding, groups: int = 1):
    """Conv3d of NDHWC data with DHWIO weights."""
    out = conv3d_ncdhw_python(a_np.transpose(0, 4, 1, 2, 3), w_np.transpose(4, 3, 0, 1, 2),
                              stride, padding, groups)
    return out.transpose(0, 2, 3, 4, 1)


def conv1d_transpose_ncw_python(a_np, w_np, stride, padding, output_padding):
    """Transposed conv1d of NCW data with IOW weights."""
    pl, pr = _pad1d(padding, w_np.shape[2])
    return conv_transpose_nd(a_np, w_np, _ntuple(stride, 1), (pl,), (pr,),
                             _ntuple(output_padding, 1), (1,), 1, str(a_np.dtype))


def conv3d_transpose_ncdhw_python(a_np, w_np, stride, padding, output_padding=(0, 0, 0)):
    """Transposed conv3d of NCDHW data with IODHW weights."""
    pad = get_pad_tuple3d(padding, w_np.shape[2:])
    return conv_transpose_nd(a_np, w_np, _ntuple(stride, 3), pad[:3], pad[3:],
                             _ntuple(output_padding, 3), (1, 1, 1), 1, str(a_np.dtype))


def deformable_conv2d_nchw_python(a_np, offset_np, w_np, stride, padding, dilation,
                                  deformable_groups, groups):
    """Deformable conv2d of NCHW data, offsets and OIHW weights."""
    pad = _ntuple(padding, 2)
    return deformable_conv2d_nchw(a_np, offset_np, w_np, _ntuple(stride, 2), pad[:2],
                                  _ntuple(dilation, 2), deformable_groups, groups,
                                  str(a_np.dtype))


def correlation_nchw_python(data1, data2, kernel_size, max_displacement, stride1, stride2,
                            padding, is_multiply):
    """FlowNet correlation of two NCHW arrays (symmetric ``padding``)."""
    p = int(padding)
    return correlation_nchw(data1, data2, kernel_size, max_displacement, stride1, stride2,
                            (p, p, p, p), is_multiply)


def conv2d_backward_weight_nchw_python(dy_np, x_np, kernel_size, stride, padding, groups=1,
                                       channels=None):
    """Weight gradient of an NCHW/OIHW conv2d (``padding``: 2 or 4 values)."""
    p = _ntuple(padding, 2)
    pad = p + p if len(p) == 2 else p
    return conv2d_backward_weight_nchw(dy_np, x_np, _ntuple(kernel_size, 2), _ntuple(stride, 2),
                                       pad, (1, 1), groups, str(x_np.dtype))


def conv2d_backward_weight_python(dy_np, x_np, kernel_size, stride, padding, layout="NCHW",
                                  groups=1, channels=None):
    """Weight gradient of conv2d in NCHW (OIHW weight) or NHWC (HWIO weight)."""
    if layout == "NCHW":
        return conv2d_backward_weight_nchw_python(dy_np, x_np, kernel_size, stride, padding,
                                                  groups, channels)
    if layout != "NHWC":
        raise ValueError(f"conv2d_backward_weight_python: unsupported layout {layout!r}")
    w = conv2d_backward_weight_nchw_python(np.transpose(dy_np, (0, 3, 1, 2)),
                                           np.transpose(x_np, (0, 3, 1, 2)), kernel_size, stride,
                                           padding, groups, channels)
    return w.transpose(2, 3, 1, 0)
