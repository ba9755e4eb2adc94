"""Convolutions: nn.conv1d, nn.conv2d, nn.contrib_conv2d_NCHWc, nn.conv2d_transpose.

Type relations convert data/kernel shapes to the primal NCHW/OIHW order whatever the layouts
(NHWC, HWIO, NCHW16c, OIHW4i8o, ...); the numpy references (``minitvm.topi.reference.nn``)
compute in that order with an im2col matrix product (grouped and depthwise convolutions use one
einsum over the groups).
"""

from __future__ import annotations

from ....ir.op import OpPattern
from ....ir.type import TensorType
from ....topi.shape import window_tuple
from ....topi.shape_conditions import agree, divides
from ..op import define_op
from ..type_relations import check_num_args, dims_equal, is_static_dim, shape_str, tensor_arg
from . import attrs as A
from ._utils import (
    arith,
    check_positive,
    check_window_attrs,
    pad_tuple,
    shape_from_primal,
    shape_to_primal,
)

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
_DIM_NAMES = {"D": "depth", "H": "height", "W": "width"}


def _spatial_out(op_name, size, k, pad_before, pad_after, stride, dilation, what):
    check_positive(op_name, f"kernel {what}", k)  # (an empty kernel: nothing to slide)
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
    if not agree(channels, arith(lambda i: i * groups, in_ch)):
        raise TypeError(
            f"{op_name}: input channels {channels} (data_layout {attrs.data_layout}) do not match "
            f"weight in-channels {in_ch} * groups {groups} (weight {shape_str(weight.shape)}, "
            f"kernel_layout {attrs.kernel_layout})"
        )
    out_ch = w["O"]
    if not divides(out_ch, groups):
        raise TypeError(f"{op_name}: weight out-channels {out_ch} are not divisible by groups "
                        f"{groups}")
    if attrs.channels is not None and not dims_equal(attrs.channels, out_ch) and \
            is_static_dim(out_ch):
        raise TypeError(f"{op_name}: attribute channels={attrs.channels} does not match the "
                        f"weight's out-channels {out_ch} (weight {shape_str(weight.shape)})")
    if attrs.kernel_size is not None:
        ks = tuple(attrs.kernel_size)
        got = tuple(w[a] for a in sp)
        if len(ks) != nd or not all([agree(g, k) for g, k in zip(got, ks)]):
            raise TypeError(f"{op_name}: attribute kernel_size={list(ks)} does not match the "
                            f"weight's kernel {shape_str(got)}")
    strides = window_tuple(attrs.strides, nd, "strides", op_name)
    dilation = window_tuple(attrs.dilation, nd, "dilation", op_name)
    pad = pad_tuple(attrs.padding, nd, op_name)
    check_window_attrs(op_name, nd, pad, strides=strides, dilation=dilation)
    out = {"N": d["N"], "C": out_ch}
    for i, a in enumerate(sp):
        out[a] = _spatial_out(op_name, d[a], w[a], pad[i], pad[i + nd], strides[i], dilation[i],
                              _DIM_NAMES[a])
    out_layout = attrs.out_layout or attrs.data_layout
    dtype = attrs.out_dtype or data.dtype
    return TensorType(shape_from_primal(out, out_layout, op_name), dtype)


# --------------------------------------------------------------------------- transpose conv
def conv2d_transpose_rel(arg_types, attrs, op_name: str = "nn.conv2d_transpose"):
    """Output type of conv2d_transpose: weight is (in_channels, out_channels / groups, kh, kw)."""
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    weight = tensor_arg(arg_types, 1, op_name)
    d = shape_to_primal(data.shape, attrs.data_layout, "NCHW", "data", op_name)
    w = shape_to_primal(weight.shape, attrs.kernel_layout, "IOHW", "weight", op_name)
    groups = int(attrs.groups)
    if not agree(d["C"], w["I"]):
        raise TypeError(
            f"{op_name}: input channels {d['C']} (data_layout {attrs.data_layout}) do not match "
            f"weight in-channels {w['I']} (weight {shape_str(weight.shape)}, kernel_layout "
            f"{attrs.kernel_layout})"
        )
    if not divides(d["C"], groups):
        raise TypeError(f"{op_name}: input channels {d['C']} are not divisible by groups {groups}")
    out_ch = arith(lambda o: o * groups, w["O"])
    if attrs.channels is not None and not agree(out_ch, int(attrs.channels)):
        raise TypeError(f"{op_name}: attribute channels={attrs.channels} does not match the "
                        f"weight's out-channels {out_ch}")
    strides = window_tuple(attrs.strides, 2, "strides", op_name)
    dilation = window_tuple(attrs.dilation, 2, "dilation", op_name)
    opad = window_tuple(attrs.output_padding, 2, "output_padding", op_name)
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


def conv2d_nchwc_rel(arg_types, attrs, op_name: str = "nn.contrib_conv2d_NCHWc"):
    """contrib_conv2d_NCHWc: checked as a convolution when the weight's rank fits its
    kernel_layout; otherwise, as TVM's relation (Conv2DWinogradRel) does, the output comes from
    the data, ``channels`` and ``kernel_size`` alone (the packed weight is not read)."""
    check_num_args(op_name, arg_types, 2)
    weight = tensor_arg(arg_types, 1, op_name)
    from ....topi.layout import Layout

    if len(weight.shape) == len(Layout(attrs.kernel_layout).axes):
        return conv_rel(arg_types, attrs, op_name, 2)
    data = tensor_arg(arg_types, 0, op_name)
    if attrs.channels is None or attrs.kernel_size is None:
        raise TypeError(f"{op_name}: a weight {shape_str(weight.shape)} that does not follow "
                        f"kernel_layout {attrs.kernel_layout} needs the channels and kernel_size "
                        f"attributes")
    d = shape_to_primal(data.shape, attrs.data_layout, "NCHW", "data", op_name)
    ks = window_tuple(attrs.kernel_size, 2, "kernel_size", op_name)
    strides = window_tuple(attrs.strides, 2, "strides", op_name)
    dilation = window_tuple(attrs.dilation, 2, "dilation", op_name)
    pad = pad_tuple(attrs.padding, 2, op_name)
    check_window_attrs(op_name, 2, pad, strides=strides, dilation=dilation)
    out = {"N": d["N"], "C": attrs.channels}
    for i, a in enumerate("HW"):
        out[a] = _spatial_out(op_name, d[a], ks[i], pad[i], pad[i + 2], strides[i], dilation[i],
                              _DIM_NAMES[a])
    layout = attrs.out_layout or attrs.data_layout
    return TensorType(shape_from_primal(out, layout, op_name), attrs.out_dtype or data.dtype)


def _rel(nd, name):
    def rel(arg_types, attrs):
        return conv_rel(arg_types, attrs, name, nd)

    rel.__name__ = f"conv_rel[{name}]"
    return rel


_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
define_op("nn.conv1d", _rel(1, "nn.conv1d"), pattern=_FUSABLE, attrs_type=A.Conv1DAttrs,
          num_inputs=2, describe="1D convolution.")
define_op("nn.conv2d", _rel(2, "nn.conv2d"), pattern=_FUSABLE, attrs_type=A.Conv2DAttrs,
          num_inputs=2, describe="2D convolution.")
define_op("nn.contrib_conv2d_NCHWc", conv2d_nchwc_rel, pattern=_FUSABLE,
          attrs_type=A.Conv2DAttrs, num_inputs=2,
          describe="2D convolution on packed NCHW{x}c data with OIHW{y}i{z}o weights.")
define_op("nn.conv2d_transpose", conv2d_transpose_rel, pattern=_FUSABLE,
          attrs_type=A.Conv2DTransposeAttrs, num_inputs=2,
          describe="Transposed 2D convolution.")
