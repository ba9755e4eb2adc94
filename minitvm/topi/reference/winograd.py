"""Numpy references of the Winograd and GEMM weight-transform convolution ops:
nn.contrib_conv{2,3}d_winograd_weight_transform, nn.contrib_conv{2,3}d_winograd_without_weight_
transform, nn.contrib_conv2d_gemm_weight_transform and
nn.contrib_conv2d_gemm_without_weight_transform.

The Winograd kernel transform is U = G g G^T with TVM's Cook-Toom G (its interpolation points
per F(m, r) degree, the last point at infinity); the "without weight transform" ops recover g
exactly from U with G's pseudo-inverse (G has full column rank) and convolve.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..shape import window_tuple
from ..utils import pad_tuple, reference
from .conv_nd import conv_nd
from .utils import np_dtype

__all__ = ["winograd_g", "winograd_weight_transform_np", "gemm_weight_transform_np",
           "gemm_weight_untransform_np"]

# the interpolation points TVM uses, looked up at degree - 1 for degree m + r - 2 (Barabasz et al.)
_F = Fraction
_POINTS = {
    2: [0, -1, 1],
    3: [0, -1, 1, _F(1, 2)],
    4: [0, -1, 1, _F(1, 2), -2],
    5: [0, -1, 1, _F(1, 2), -2, _F(-1, 2)],
    6: [0, -1, 1, _F(1, 2), _F(-1, 2), 2, -2],
    7: [0, -1, 1, _F(1, 2), _F(-1, 2), 2, -2, _F(-1, 4)],
    8: [0, -1, 1, _F(1, 2), _F(-1, 2), 2, -2, _F(-1, 4), 4],
    9: [0, -1, 1, _F(1, 2), _F(-1, 2), 2, -2, _F(-1, 4), _F(3, 4), _F(-4, 3)],
    10: [0, -1, 1, _F(1, 2), _F(-1, 2), 2, -2, _F(-1, 4), 4, _F(3, 4), _F(-4, 3)],
    11: [0, -1, 1, _F(1, 2), _F(-1, 2), 2, -2, _F(-1, 4), 4, _F(3, 4), _F(-4, 3), _F(1, 4)],
    12: [0, -1, 1, _F(1, 2), _F(-1, 2), 2, -2, _F(-1, 4), 4, _F(1, 4), _F(-3, 4), _F(4, 3), -4],
    13: [0, -1, 1, _F(1, 2), _F(-1, 2), 2, -2, _F(-1, 4), 4, _F(1, 4), _F(-3, 4), _F(4, 3),
         _F(3, 4), _F(-4, 3)],
}


def winograd_g(tile_size: int, kernel_size: int) -> np.ndarray:
    """The (alpha, r) kernel-transform matrix G of F(tile_size, kernel_size): row i < alpha - 1
    is the powers of point a_i divided by prod_{k != i}(a_i - a_k) (the first row's divisor
    made positive); the last row picks the highest kernel tap (the point at infinity)."""
    if not 1 < tile_size < 9 or not 2 < kernel_size < 8:
        raise ValueError(f"winograd: unsupported F({tile_size}, {kernel_size}); tile_size must "
                         f"be 2..8 and the kernel 3..7")
    degree = tile_size + kernel_size - 2
    pts = [_F(p) for p in _POINTS[degree - 1]]
    alpha = tile_size + kernel_size - 1
    g = np.zeros((alpha, kernel_size))
    for i, a in enumerate(pts):
        f = _F(1)
        for k, b in enumerate(pts):
            if k != i:
                f *= a - b
        if i == 0 and f < 0:
            f = -f
        for j in range(kernel_size):
            g[i, j] = float(a ** j / f)
    g[alpha - 1, kernel_size - 1] = 1.0
    return g


def winograd_weight_transform_np(kernel: np.ndarray, tile_size: int, nd: int = 2):
    """(CO, CI, *K) kernels to (alpha.., CO, CI); for 3-D kernels whose depth differs from
    their height only H and W are transformed (TVM's rule), giving (KD, alpha, alpha, CO, CI)."""
    k = kernel.astype(np.float64)
    if nd == 2:
        g = winograd_g(tile_size, kernel.shape[2])
        return np.einsum("ak,bl,oikl->aboi", g, g, k)
    kd, kh = kernel.shape[2], kernel.shape[3]
    g = winograd_g(tile_size, kh)
    if 2 < kd < 8 and kd == kh:
        return np.einsum("ak,bl,cm,oiklm->abcoi", g, g, g, k)
    return np.einsum("bl,cm,oiklm->kbcoi", g, g, k)


def _untransform(u: np.ndarray, tile_size: int, ks, nd: int):
    """Recover (CO, CI, *K) kernels from their Winograd transform (G's pseudo-inverse)."""
    if nd == 2:
        p = np.linalg.pinv(winograd_g(tile_size, ks[0]))
        return np.einsum("ka,lb,aboi->oikl", p, p, u)
    p = np.linalg.pinv(winograd_g(tile_size, ks[1]))
    if 2 < ks[0] < 8 and ks[0] == ks[1]:  # the depth was transformed too
        return np.einsum("ka,lb,mc,abcoi->oiklm", p, p, p, u)
    return np.einsum("lb,mc,kbcoi->oiklm", p, p, u)


@reference("nn.contrib_conv2d_winograd_weight_transform")
def _wt2d(attrs, args, out_type):
    return winograd_weight_transform_np(args[0], int(attrs.tile_size), 2).astype(out_type.dtype)


@reference("nn.contrib_conv3d_winograd_weight_transform")
def _wt3d(attrs, args, out_type):
    return winograd_weight_transform_np(args[0], int(attrs.tile_size), 3).astype(out_type.dtype)


def _winograd_conv(attrs, args, out_type, nd):
    data, u = args
    ks = tuple(int(k) for k in attrs.kernel_size)
    w = _untransform(u.astype(np.float64), int(attrs.tile_size), ks, nd)
    st = window_tuple(attrs.strides, nd, "strides", "winograd")
    dl = window_tuple(attrs.dilation, nd, "dilation", "winograd")
    pad = pad_tuple(attrs.padding, nd)
    out = conv_nd(data.astype(np.float64), w, st, pad[:nd], pad[nd:], dl, int(attrs.groups),
                  "float64")
    return out.astype(np_dtype(out_type.dtype))


@reference("nn.contrib_conv2d_winograd_without_weight_transform")
def _w2d(attrs, args, out_type):
    return _winograd_conv(attrs, args, out_type, 2)


@reference("nn.contrib_conv3d_winograd_without_weight_transform")
def _w3d(attrs, args, out_type):
    return _winograd_conv(attrs, args, out_type, 3)


# ------------------------------------------------------------------ GEMM weight transform
def gemm_weight_transform_np(kernel: np.ndarray, tile_rows: int, tile_cols: int):
    """HWIO kernels flattened to (K = KH*KW*IC, N = OC), zero padded to whole tiles, as
    (N / tile_rows, K / tile_cols, tile_rows, tile_cols) blocks."""
    kh, kw, ic, oc = kernel.shape
    flat = kernel.reshape(kh * kw * ic, oc)
    k_pad = -flat.shape[0] % tile_cols
    n_pad = -oc % tile_rows
    flat = np.pad(flat, ((0, k_pad), (0, n_pad)))
    kk, nn = flat.shape
    return np.ascontiguousarray(
        flat.reshape(kk // tile_cols, tile_cols, nn // tile_rows, tile_rows).transpose(2, 0, 3, 1))


def gemm_weight_untransform_np(blocks: np.ndarray, kernel_size, in_channels, out_channels):
    """The HWIO kernel of ``gemm_weight_transform_np``'s blocks."""
    nb, kb, tr, tc = blocks.shape
    flat = blocks.transpose(1, 3, 0, 2).reshape(kb * tc, nb * tr)
    kh, kw = kernel_size
    return flat[:kh * kw * in_channels, :out_channels].reshape(kh, kw, in_channels, out_channels)


@reference("nn.contrib_conv2d_gemm_weight_transform")
def _gemm_wt(attrs, args, out_type):
    return gemm_weight_transform_np(args[0], int(attrs.tile_rows), int(attrs.tile_cols))


@reference("nn.contrib_conv2d_gemm_without_weight_transform")
def _gemm_conv(attrs, args, out_type):
    data, blocks = args
    ks = tuple(int(k) for k in attrs.kernel_size)
    ic, oc = data.shape[3], int(attrs.channels)
    w = gemm_weight_untransform_np(blocks, ks, ic // int(attrs.groups), oc)
    x = data.transpose(0, 3, 1, 2)
    st = window_tuple(attrs.strides, 2, "strides", "gemm conv")
    dl = window_tuple(attrs.dilation, 2, "dilation", "gemm conv")
    pad = pad_tuple(attrs.padding, 2)
    out = conv_nd(x, w.transpose(3, 2, 0, 1), st, pad[:2], pad[2:], dl, int(attrs.groups),
                  out_type.dtype)
    return np.ascontiguousarray(out.transpose(0, 2, 3, 1))
