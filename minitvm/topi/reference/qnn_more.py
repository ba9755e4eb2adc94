"""Numpy references of qnn.batch_matmul and qnn.conv2d_transpose: the integer operation on
zero-point-shifted operands, accumulated exactly (int64) and returned in out_dtype."""

from __future__ import annotations

import numpy as np

from ..shape import window_tuple
from ..utils import pad_tuple, reference
from .conv_nd import conv_transpose_nd
from .qnn import per_axis
from .utils import np_from_primal, np_to_primal


@reference("qnn.batch_matmul")
def _qnn_batch_matmul(attrs, args, out_type):
    x, y, xzp, yzp = args[:4]
    a = x.astype("int64") - np.asarray(xzp).astype("int64")
    b = y.astype("int64") - np.asarray(yzp).astype("int64")
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    if attrs.transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b).astype(out_type.dtype)


@reference("qnn.conv2d_transpose")
def _qnn_conv2d_transpose(attrs, args, out_type):
    data, kernel, izp, kzp = args[:4]
    x = np_to_primal(data.astype("int64") - np.asarray(izp).astype("int64"), attrs.data_layout,
                     "NCHW")
    w = np_to_primal(kernel, attrs.kernel_layout, "IOHW").astype("int64")
    w = w - per_axis(kzp, 1, 4).astype("int64")
    pad = pad_tuple(attrs.padding, 2)
    out = conv_transpose_nd(x, w, window_tuple(attrs.strides, 2, "strides", ""), pad[:2],
                            pad[2:], window_tuple(attrs.output_padding, 2, "output_padding", ""),
                            window_tuple(attrs.dilation, 2, "dilation", ""), int(attrs.groups),
                            "int64")
    return np_from_primal(out, "NCHW", attrs.out_layout or attrs.data_layout).astype(
        out_type.dtype)
