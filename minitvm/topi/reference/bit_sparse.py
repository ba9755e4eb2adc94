"""Numpy references of nn.bitpack (bit planes packed into words, the first element in the most
significant bit), nn.bitserial_dense / nn.bitserial_conv2d (sums of bit-plane products, TVM's
unipolar encoding counting a weight bit 0 as -1) and nn.sparse_conv2d (1x1, or 3x3 NHWC with same padding, by a CSR/BSR
weight matrix whose columns are ordered (kh, kw, c))."""

from __future__ import annotations

import numpy as np

from ..utils import reference
from .nn import _sparse_to_dense

__all__ = ["bitpack_np", "sparse_conv2d_np", "bitserial_dense_np", "bitserial_conv2d_nchw_np"]

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


# ------------------------------------------------------------------ bit-serial products
def _planes(x, bits):
    return [((x.astype(np.int64) >> b) & 1) for b in range(bits)]


def _weight_value(wb, unipolar):
    # unipolar: popcount(w & d) - popcount(~w & d), i.e. a weight bit 1 counts +1 and 0 counts -1
    return 2 * wb - 1 if unipolar else wb


def bitserial_dense_np(data, weight, data_bits, weight_bits, unipolar, out_dtype):
    """sum over data bit db and weight bit wb of 2^(db+wb) * (d_db . w_wb) with TVM's
    bit-serial encodings."""
    out = np.zeros((data.shape[0], weight.shape[0]), np.int64)
    for db, d in enumerate(_planes(data, data_bits)):
        for wb, w in enumerate(_planes(weight, weight_bits)):
            out += (d @ _weight_value(w, unipolar).T) << (db + wb)
    return out.astype(out_dtype)


@reference("nn.bitserial_dense")
def _bitserial_dense(attrs, args, out_type):
    return bitserial_dense_np(args[0], args[1], int(attrs.data_bits), int(attrs.weight_bits),
                              bool(attrs.unipolar), out_type.dtype)


def bitserial_conv2d_nchw_np(data, kernel, strides, padding, activation_bits, weight_bits,
                             unipolar, out_dtype):
    """Bit-serial conv2d of NCHW data and OIHW kernels (zero padding contributes nothing)."""
    from .conv_nd import conv_nd

    pt, pl, pb, pr = padding
    out = 0
    for db, d in enumerate(_planes(data, activation_bits)):
        for wb, w in enumerate(_planes(kernel, weight_bits)):
            part = conv_nd(d, _weight_value(w, unipolar), strides, (pt, pl), (pb, pr), (1, 1),
                           1, "int64")
            out = out + (part << (db + wb))
    return np.asarray(out).astype(out_dtype)


@reference("nn.bitserial_conv2d")
def _bitserial_conv2d(attrs, args, out_type):
    from ..utils import pad_tuple

    data, kernel = args
    nhwc = attrs.data_layout == "NHWC"
    x = data.transpose(0, 3, 1, 2) if nhwc else data
    w = kernel.transpose(3, 2, 0, 1) if attrs.kernel_layout == "HWIO" else kernel
    out = bitserial_conv2d_nchw_np(x, w, tuple(int(s) for s in attrs.strides),
                                   pad_tuple(attrs.padding, 2), int(attrs.activation_bits),
                                   int(attrs.weight_bits), bool(attrs.unipolar), out_type.dtype)
    return np.ascontiguousarray(out.transpose(0, 2, 3, 1)) if nhwc else out
