"""Numpy references of nn.bitpack (bit planes packed into words, the first element in the most
significant bit) and nn.sparse_conv2d (1x1, or 3x3 NHWC with same padding, by a CSR/BSR
weight matrix whose columns are ordered (kh, kw, c))."""

from __future__ import annotations

import numpy as np

from ..utils import reference
from .nn import _sparse_to_dense

__all__ = ["bitpack_np", "sparse_conv2d_np"]

_WIDTH = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "int8": 8, "int16": 16,
          "int32": 32, "int64": 64}


def bitpack_np(data, bits, pack_axis, bit_axis, pack_type):
    """Bit plane b of ``data`` packed along ``pack_axis`` into ``pack_type`` words (element k of
    a word in bit width-1-k), the planes stacked on a new axis at ``bit_axis``."""
    width = _WIDTH[pack_type]
    x = np.moveaxis(data.astype(np.int64), pack_axis, -1)
    x = x.reshape(x.shape[:-1] + (x.shape[-1] // width, width))
    weights = np.left_shift(np.uint64(1), np.arange(width - 1, -1, -1, dtype=np.uint64))
    planes = []
    for b in range(bits):
        plane = ((x >> b) & 1).astype(np.uint64)
        words = (plane * weights).sum(axis=-1, dtype=np.uint64)
        planes.append(np.moveaxis(words, -1, pack_axis))
    out = np.stack(planes, axis=bit_axis)
    return out.astype(pack_type)


@reference("nn.bitpack")
def _bitpack(attrs, args, out_type):
    return bitpack_np(args[0], int(attrs.bits), int(attrs.pack_axis), int(attrs.bit_axis),
                      str(attrs.pack_type))


def sparse_conv2d_np(data, values, indices, indptr, layout="NHWC", kernel_size=1):
    """Convolution by a sparse (O, C * k * k) weight matrix."""
    nhwc = layout == "NHWC"
    x = data if nhwc else data.transpose(0, 2, 3, 1)
    n, h, w, c = x.shape
    if kernel_size == 3:
        xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        cols = np.stack([xp[:, i:i + h, j:j + w, :] for i in range(3) for j in range(3)],
                        axis=3).reshape(n, h, w, 9 * c)
    else:
        cols = x
    weight = _sparse_to_dense(values, indices, indptr, cols.shape[-1])
    out = np.einsum("nhwk,ok->nhwo", cols.astype(np.float64), weight.astype(np.float64))
    out = out.astype(data.dtype)
    return out if nhwc else np.ascontiguousarray(out.transpose(0, 3, 1, 2))


@reference("nn.sparse_conv2d")
def _sparse_conv2d(attrs, args, out_type):
    return sparse_conv2d_np(*args, attrs.layout, int(tuple(attrs.kernel_size)[0]))
