"""Convolutions: nn.conv1d, nn.conv2d, nn.contrib_conv2d_NCHWc, nn.conv2d_transpose.

Type relations convert data/kernel shapes to the primal NCHW/OIHW order whatever the layouts
(NHWC, HWIO, NCHW16c, OIHW4i8o, ...), and the numpy references compute in that order with an
im2col matrix product (grouped and depthwise convolutions use one einsum over the groups).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ....ir.op import OpPattern
from ....ir.type import TensorType
from ..op import define_op
from ..type_relations import check_num_args, dims_equal, is_static_dim, shape_str, tensor_arg
from . import attrs as A
from ._utils import (
    acc_dtype,
    arith,
    check_positive,
    check_window_attrs,
    np_dtype,
    np_from_primal,
    np_to_primal,
    pad_tuple,
    shape_from_primal,
    shape_to_primal,
)

_SPATIAL = {1: "W", 2: "HW"}


def _spatial_out(op_name, size, k, pad_before, pad_after, stride, dilation, what):
    dk = arith(lambda kk: (kk - 1) * dilation + 1, k)
    out = arith(lambda s, d: (s + pad_before + pad_after - d) // stride + 1, size, dk)
    check_positive(op_name, f"output {what}", out)
    return out


def conv_rel(arg_types, attrs, op_name: str = "nn.conv2d", nd: int = 2):
    """Output type of an nd convolution for any data/kernel/output layouts."""
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    weight = tensor_arg(arg_types, 1, op_name)
    sp = _SPATIAL[nd]
    d = shape_to_primal(data.shape, attrs.data_layout, "NC" + sp, "data", op_name)
    w = shape_to_primal(weight.shape, attrs.kernel_layout, "OI" + sp, "weight", op_name)
    groups = int(attrs.groups)
    if groups < 1:
        raise ValueError(f"{op_name}: groups must be positive, got {groups}")
    channels, in_ch = d["C"], w["I"]
    if is_static_dim(channels) and is_static_dim(in_ch) and channels != in_ch * groups:
        raise TypeError(
            f"{op_name}: input channels {channels} (data_layout {attrs.data_layout}) do not match "
            f"weight in-channels {in_ch} * groups {groups} (weight {shape_str(weight.shape)}, "
            f"kernel_layout {attrs.kernel_layout})"
        )
    out_ch = w["O"]
    if is_static_dim(out_ch) and out_ch % groups:
        raise TypeError(f"{op_name}: weight out-channels {out_ch} are not divisible by groups "
                        f"{groups}")
    if attrs.channels is not None and not dims_equal(attrs.channels, out_ch) and \
            is_static_dim(out_ch):
        raise TypeError(f"{op_name}: attribute channels={attrs.channels} does not match the "
                        f"weight's out-channels {out_ch} (weight {shape_str(weight.shape)})")
    if attrs.kernel_size is not None:
        ks = tuple(attrs.kernel_size)
        got = tuple(w[a] for a in sp)
        if len(ks) != nd or any(is_static_dim(g) and g != k for g, k in zip(got, ks)):
            raise TypeError(f"{op_name}: attribute kernel_size={list(ks)} does not match the "
                            f"weight's kernel {shape_str(got)}")
    strides = _tuple(attrs.strides, nd, "strides", op_name)
    dilation = _tuple(attrs.dilation, nd, "dilation", op_name)
    pad = pad_tuple(attrs.padding, nd, op_name)
    check_window_attrs(op_name, nd, pad, strides=strides, dilation=dilation)
    out = {"N": d["N"], "C": out_ch}
    for i, a in enumerate(sp):
        out[a] = _spatial_out(op_name, d[a], w[a], pad[i], pad[i + nd], strides[i], dilation[i],
                              {"H": "height", "W": "width"}[a])
    out_layout = attrs.out_layout or attrs.data_layout
    dtype = attrs.out_dtype or data.dtype
    return TensorType(shape_from_primal(out, out_layout, op_name), dtype)


def _tuple(value, nd, name, op_name):
    if isinstance(value, int):
        return (value,) * nd
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * nd
    if len(value) != nd:
        raise ValueError(f"{op_name}: {name} must have {nd} values, got {list(value)}")
    return value


# --------------------------------------------------------------------------- numpy references
def conv2d_nchw(x, w, strides, padding, dilation, groups, dtype):
    """Reference conv2d on NCHW data and OIHW weights (padding: top, left, bottom, right)."""
    acc = acc_dtype(dtype) if np_dtype(dtype).kind in "iu" else np.result_type(x, w, np.float32)
    x = x.astype(acc, copy=False)
    w = w.astype(acc, copy=False)
    pt, pl, pb, pr = padding
    if pt or pl or pb or pr:
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    sh, sw = strides
    dh, dw = dilation
    n, c = x.shape[:2]
    o, i, kh, kw = w.shape
    win = sliding_window_view(x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]
    oh, ow = win.shape[2:4]
    if groups == 1:
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)
        out = (cols @ w.reshape(o, -1).T).reshape(n, oh, ow, o).transpose(0, 3, 1, 2)
    elif i == 1:
        # depthwise (channel multiplier o // c): accumulate one kernel tap at a time
        m = o // c
        wd = w.reshape(c, m, kh, kw)
        out = np.zeros((n, c, m, oh, ow), dtype=acc)
        for ky in range(kh):
            for kx in range(kw):
                tap = win[:, :, :, :, ky, kx][:, :, None]
                out += tap * wd[None, :, :, ky, kx, None, None]
        out = out.reshape(n, o, oh, ow)
    else:
        g = groups
        win = win.reshape(n, g, c // g, oh, ow, kh, kw)
        wg = w.reshape(g, o // g, i, kh, kw)
        out = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True).reshape(n, o, oh, ow)
    return np.ascontiguousarray(out).astype(np_dtype(dtype), copy=False)


def _conv_np(attrs, args, out_type, nd=2):
    data, weight = args
    sp = _SPATIAL[nd]
    x = np_to_primal(data, attrs.data_layout, "NC" + sp)
    w = np_to_primal(weight, attrs.kernel_layout, "OI" + sp)
    strides = _tuple(attrs.strides, nd, "strides", "conv")
    dilation = _tuple(attrs.dilation, nd, "dilation", "conv")
    pad = pad_tuple(attrs.padding, nd)
    if nd == 1:
        x, w = x[:, :, None, :], w[:, :, None, :]
        strides, dilation, pad = (1,) + strides, (1,) + dilation, (0, pad[0], 0, pad[1])
    out = conv2d_nchw(x, w, strides, pad, dilation, int(attrs.groups), out_type.dtype)
    if nd == 1:
        out = out[:, :, 0, :]
    return np_from_primal(out, "NC" + sp, attrs.out_layout or attrs.data_layout)


# --------------------------------------------------------------------------- transpose conv
def conv2d_transpose_rel(arg_types, attrs, op_name: str = "nn.conv2d_transpose"):
    """Output type of conv2d_transpose: weight is (in_channels, out_channels / groups, kh, kw)."""
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    weight = tensor_arg(arg_types, 1, op_name)
    d = shape_to_primal(data.shape, attrs.data_layout, "NCHW", "data", op_name)
    w = shape_to_primal(weight.shape, attrs.kernel_layout, "IOHW", "weight", op_name)
    groups = int(attrs.groups)
    if is_static_dim(d["C"]) and is_static_dim(w["I"]) and d["C"] != w["I"]:
        raise TypeError(
            f"{op_name}: input channels {d['C']} (data_layout {attrs.data_layout}) do not match "
            f"weight in-channels {w['I']} (weight {shape_str(weight.shape)}, kernel_layout "
            f"{attrs.kernel_layout})"
        )
    if is_static_dim(d["C"]) and d["C"] % groups:
        raise TypeError(f"{op_name}: input channels {d['C']} are not divisible by groups {groups}")
    out_ch = arith(lambda o: o * groups, w["O"])
    if attrs.channels is not None and is_static_dim(out_ch) and attrs.channels != out_ch:
        raise TypeError(f"{op_name}: attribute channels={attrs.channels} does not match the "
                        f"weight's out-channels {out_ch}")
    strides = _tuple(attrs.strides, 2, "strides", op_name)
    dilation = _tuple(attrs.dilation, 2, "dilation", op_name)
    opad = _tuple(attrs.output_padding, 2, "output_padding", op_name)
    pad = pad_tuple(attrs.padding, 2, op_name)
    check_window_attrs(op_name, 2, pad, strides=strides, dilation=dilation)
    out = {"N": d["N"], "C": out_ch}
    for i, a in enumerate("HW"):
        dk = arith(lambda k, i=i: (k - 1) * dilation[i] + 1, w[a])
        out[a] = arith(lambda s, k, i=i: (s - 1) * strides[i] + k - pad[i] - pad[i + 2] + opad[i],
                       d[a], dk)
        check_positive(op_name, "output " + {"H": "height", "W": "width"}[a], out[a])
    layout = attrs.out_layout or attrs.data_layout
    return TensorType(shape_from_primal(out, layout, op_name), attrs.out_dtype or data.dtype)


def _pad_or_crop(x, before_h, after_h, before_w, after_w):
    crop = (slice(None), slice(None), slice(max(0, -before_h), x.shape[2] - max(0, -after_h)),
            slice(max(0, -before_w), x.shape[3] - max(0, -after_w)))
    x = x[crop]
    return np.pad(x, ((0, 0), (0, 0), (max(0, before_h), max(0, after_h)),
                      (max(0, before_w), max(0, after_w))))


def _conv2d_transpose_np(attrs, args, out_type):
    data, weight = args
    x = np_to_primal(data, attrs.data_layout, "NCHW")
    w = np_to_primal(weight, attrs.kernel_layout, "IOHW")
    g = int(attrs.groups)
    sh, sw = _tuple(attrs.strides, 2, "strides", "")
    dh, dw = _tuple(attrs.dilation, 2, "dilation", "")
    oph, opw = _tuple(attrs.output_padding, 2, "output_padding", "")
    pt, pl, pb, pr = pad_tuple(attrs.padding, 2)
    n, c, h, wd = x.shape
    cin, og, kh, kw = w.shape
    up = np.zeros((n, c, (h - 1) * sh + 1, (wd - 1) * sw + 1), dtype=x.dtype)
    up[:, :, ::sh, ::sw] = x
    ekh, ekw = (kh - 1) * dh, (kw - 1) * dw
    up = _pad_or_crop(up, ekh - pt, ekh - pb + oph, ekw - pl, ekw - pr + opw)
    # per group: (cin/g, og, kh, kw) -> (og, cin/g, kh, kw), spatially flipped
    wg = w.reshape(g, cin // g, og, kh, kw).transpose(0, 2, 1, 3, 4)
    wconv = wg.reshape(g * og, cin // g, kh, kw)[:, :, ::-1, ::-1]
    out = conv2d_nchw(up, wconv, (1, 1), (0, 0, 0, 0), (dh, dw), g, out_type.dtype)
    return np_from_primal(out, "NCHW", attrs.out_layout or attrs.data_layout)


def _rel(nd, name):
    def rel(arg_types, attrs):
        return conv_rel(arg_types, attrs, name, nd)

    rel.__name__ = f"conv_rel[{name}]"
    return rel


define_op("nn.conv1d", _rel(1, "nn.conv1d"), lambda a, x, t: _conv_np(a, x, t, 1),
          OpPattern.OUT_ELEMWISE_FUSABLE, A.Conv1DAttrs, 2, "1D convolution.")
define_op("nn.conv2d", _rel(2, "nn.conv2d"), _conv_np, OpPattern.OUT_ELEMWISE_FUSABLE,
          A.Conv2DAttrs, 2, "2D convolution.")
define_op("nn.contrib_conv2d_NCHWc", _rel(2, "nn.contrib_conv2d_NCHWc"), _conv_np,
          OpPattern.OUT_ELEMWISE_FUSABLE, A.Conv2DAttrs, 2,
          "2D convolution on packed NCHW{x}c data with OIHW{y}i{z}o weights.")
define_op("nn.conv2d_transpose", conv2d_transpose_rel, _conv2d_transpose_np,
          OpPattern.OUT_ELEMWISE_FUSABLE, A.Conv2DTransposeAttrs, 2, "Transposed 2D convolution.")
