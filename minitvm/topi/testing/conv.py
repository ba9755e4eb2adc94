"""Convolution references in TVM's testing signatures."""

from __future__ import annotations

import numpy as np

from ..reference.nn import conv2d_nchw


def _pair(v, n=2) -> tuple:
    return tuple(int(x) for x in v) if isinstance(v, (list, tuple)) else (int(v),) * n


def get_pad_tuple(padding, kernel) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of an int, a pair, a 4-tuple, "SAME" or "VALID" padding for a
    ``kernel`` of (kh, kw) (TVM's ``topi.nn.utils.get_pad_tuple``)."""
    kh, kw = _pair(kernel)
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0, 0, 0
        if padding.upper() == "SAME":
            ph, pw = kh - 1, kw - 1
            return (ph + 1) // 2, (pw + 1) // 2, ph // 2, pw // 2
        raise ValueError(f"unknown padding {padding!r}: expected SAME, VALID or integers")
    if isinstance(padding, (list, tuple)):
        if len(padding) == 2:
            return padding[0], padding[1], padding[0], padding[1]
        if len(padding) == 4:
            return tuple(int(p) for p in padding)
        raise ValueError(f"padding must have 2 or 4 entries, got {padding!r}")
    p = int(padding)
    return p, p, p, p


def conv2d_nchw_python(a_np, w_np, stride, padding, groups: int = 1):
    """Conv2d of NCHW data with OIHW weights."""
    pad = get_pad_tuple(padding, w_np.shape[2:])
    return conv2d_nchw(a_np, w_np, _pair(stride), pad, (1, 1), groups, str(a_np.dtype))


def conv2d_nhwc_python(a_np, w_np, stride, padding, groups: int = 1):
    """Conv2d of NHWC data with HWIO weights."""
    out = conv2d_nchw_python(a_np.transpose(0, 3, 1, 2), w_np.transpose(3, 2, 0, 1), stride,
                             padding, groups)
    return out.transpose(0, 2, 3, 1)


def conv1d_ncw_python(a_np, w_np, stride, padding, dilation):
    """Conv1d of NCW data with OIW weights (padding: int, pair, SAME or VALID)."""
    k = (w_np.shape[2] - 1) * int(_pair(dilation, 1)[0]) + 1
    if isinstance(padding, str):
        _, left, _, right = get_pad_tuple(padding, (1, k))
    else:
        left, right = _pair(padding) if isinstance(padding, (list, tuple)) else (padding,) * 2
    out = conv2d_nchw(a_np[:, :, None], w_np[:, :, None], (1, _pair(stride, 1)[0]),
                      (0, left, 0, right), (1, _pair(dilation, 1)[0]), 1, str(a_np.dtype))
    return out[:, :, 0]


def depthwise_conv2d_python_nchw(input_np, filter_np, stride, padding):
    """Depthwise conv2d; filter (in_channel, channel_multiplier, kh, kw)."""
    c, m, kh, kw = filter_np.shape
    w = filter_np.reshape(c * m, 1, kh, kw)
    return conv2d_nchw_python(input_np, w, stride, padding, groups=c)


def depthwise_conv2d_python_nhwc(input_np, filter_np, stride, padding):
    """Depthwise conv2d of NHWC data; filter (kh, kw, in_channel, channel_multiplier)."""
    out = depthwise_conv2d_python_nchw(input_np.transpose(0, 3, 1, 2),
                                       filter_np.transpose(2, 3, 0, 1), stride, padding)
    return out.transpose(0, 2, 3, 1)


def dilate_python(input_np, strides, dilation_value=0.0, out_dtype=None):
    """Insert ``strides[i] - 1`` copies of ``dilation_value`` between elements on axis i."""
    if len(strides) != input_np.ndim:
        raise ValueError(f"dilate_python: {len(strides)} strides for a rank-{input_np.ndim} array")
    shape = tuple((d - 1) * s + 1 for d, s in zip(input_np.shape, strides))
    out = np.full(shape, dilation_value, dtype=out_dtype or input_np.dtype)
    out[tuple(slice(None, None, s) for s in strides)] = input_np
    return out


def conv2d_transpose_nchw_python(a_np, w_np, stride, padding, output_padding=(0, 0)):
    """Transposed conv2d of NCHW data with IOHW weights."""
    sh, sw = _pair(stride)
    _, _, kh, kw = w_np.shape
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw))
    oph, opw = _pair(output_padding)
    dilated = dilate_python(a_np, (1, 1, sh, sw))
    padded = np.pad(dilated, ((0, 0), (0, 0), (kh - 1 - pt, kh - 1 - pb + oph),
                              (kw - 1 - pl, kw - 1 - pr + opw)))
    w = np.flip(w_np, axis=(2, 3)).transpose(1, 0, 2, 3)
    return conv2d_nchw(padded, np.ascontiguousarray(w), (1, 1), (0, 0, 0, 0), (1, 1), 1,
                       str(a_np.dtype))
