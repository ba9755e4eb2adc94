"""The weight-pretransformed convolutions AlterOpLayout produces in TVM:
nn.contrib_conv{2,3}d_winograd_weight_transform, nn.contrib_conv{2,3}d_winograd_without_weight_
transform, nn.contrib_conv2d_gemm_weight_transform and
nn.contrib_conv2d_gemm_without_weight_transform (attrs, type relations, constructors; numpy
references in ``minitvm.topi.reference.winograd``)."""

from __future__ import annotations

import numpy as np

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ....topi.shape import window_tuple
from ....topi.shape_conditions import agree
from ...expr import Call, Expr
from ..op import define_op
from ..type_relations import check_num_args, shape_str, tensor_arg, type_str
from . import attrs as A
from ._conv_nd import get_pad_tuple3d
from ._utils import check_positive, pad_tuple

__all__ = ["ConvWinogradWeightTransformAttrs", "Conv2DWinogradAttrs", "Conv3DWinogradAttrs",
           "ConvGemmWeightTransformAttrs", "contrib_conv2d_winograd_weight_transform",
           "contrib_conv3d_winograd_weight_transform",
           "contrib_conv2d_winograd_without_weight_transform",
           "contrib_conv3d_winograd_without_weight_transform",
           "contrib_conv2d_gemm_weight_transform", "contrib_conv2d_gemm_without_weight_transform"]


class ConvWinogradWeightTransformAttrs(Attrs):
    __slots__ = ()
    _fields = (("tile_size", A.REQUIRED),)


class ConvGemmWeightTransformAttrs(Attrs):
    __slots__ = ()
    _fields = (("tile_rows", A.REQUIRED), ("tile_cols", A.REQUIRED))


def _winograd_fields(nd, data_layout, kernel_layout):
    return (("tile_size", A.REQUIRED), ("strides", (1,) * nd), ("padding", (0,) * nd),
            ("dilation", (1,) * nd), ("groups", 1), ("channels", None), ("kernel_size", None),
            ("data_layout", data_layout), ("kernel_layout", kernel_layout), ("out_layout", ""),
            ("out_dtype", ""))


class Conv2DWinogradAttrs(Attrs):
    __slots__ = ()
    _fields = _winograd_fields(2, "NCHW", "OIHW")


class Conv3DWinogradAttrs(Attrs):
    __slots__ = ()
    _fields = _winograd_fields(3, "NCDHW", "OIDHW")


def _tile(op_name, attrs, k):
    tile = int(attrs.tile_size)
    if not 1 < tile < 9 or not 2 < k < 8:
        raise ValueError(f"{op_name}: Winograd needs tile_size 2..8 and a kernel of 3..7, got "
                         f"tile_size={tile} and kernel {k}")
    return tile + k - 1


def _wt2d_rel(arg_types, attrs):
    op_name = "nn.contrib_conv2d_winograd_weight_transform"
    check_num_args(op_name, arg_types, 1)
    w = tensor_arg(arg_types, 0, op_name)
    if len(w.shape) != 4 or w.shape[2] != w.shape[3]:
        raise TypeError(f"{op_name}: expects square OIHW kernels, got {type_str(w)}")
    alpha = _tile(op_name, attrs, int(w.shape[2]))
    return TensorType((alpha, alpha, w.shape[0], w.shape[1]), w.dtype)


def _wt3d_rel(arg_types, attrs):
    op_name = "nn.contrib_conv3d_winograd_weight_transform"
    check_num_args(op_name, arg_types, 1)
    w = tensor_arg(arg_types, 0, op_name)
    if len(w.shape) != 5 or w.shape[3] != w.shape[4]:
        raise TypeError(f"{op_name}: expects OIDHW kernels with KH == KW, got {type_str(w)}")
    kd, kh = int(w.shape[2]), int(w.shape[3])
    alpha = _tile(op_name, attrs, kh)
    depth = alpha if 2 < kd < 8 and kd == kh else kd
    return TensorType((depth, alpha, alpha, w.shape[0], w.shape[1]), w.dtype)


def _winograd_conv_rel(op_name, nd):
    sp = "HW" if nd == 2 else "DHW"

    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, 2)
        data = tensor_arg(arg_types, 0, op_name)
        weight = tensor_arg(arg_types, 1, op_name)
        if attrs.data_layout != "NC" + sp or len(data.shape) != nd + 2:
            raise TypeError(f"{op_name}: supports NC{sp} data only, got {type_str(data)} with "
                            f"layout {attrs.data_layout}")
        if attrs.kernel_size is None or attrs.channels is None:
            raise ValueError(f"{op_name}: kernel_size and channels must be set (the weight is "
                             f"pre-transformed)")
        ks = tuple(int(k) for k in attrs.kernel_size)
        if len(ks) != nd:
            raise ValueError(f"{op_name}: kernel_size must have {nd} values, got {list(ks)}")
        alpha = _tile(op_name, attrs, ks[-1])
        depth = alpha if nd == 3 and 2 < ks[0] < 8 and ks[0] == ks[1] else ks[0]
        want = (alpha, alpha) if nd == 2 else (depth, alpha, alpha)
        got = tuple(weight.shape[:nd])
        if len(weight.shape) != nd + 2 or not all(
                agree(g, w) for g, w in zip(got, want, strict=True)):
            raise TypeError(f"{op_name}: the transformed weight {type_str(weight)} does not "
                            f"lead with {shape_str(want)} for tile_size {attrs.tile_size} and "
                            f"kernel {list(ks)}")
        st = window_tuple(attrs.strides, nd, "strides", op_name)
        dl = window_tuple(attrs.dilation, nd, "dilation", op_name)
        pad = pad_tuple(attrs.padding, nd, op_name)
        shape = [data.shape[0], int(attrs.channels)]
        for i in range(nd):
            size = data.shape[2 + i]
            out = (size + pad[i] + pad[i + nd] - ((ks[i] - 1) * dl[i] + 1)) // st[i] + 1
            check_positive(op_name, f"output {sp[i]}", out)
            shape.append(out)
        return TensorType(tuple(shape), attrs.out_dtype or data.dtype)

    rel.__name__ = f"winograd_rel[{op_name}]"
    return rel


def _gemm_wt_rel(arg_types, attrs):
    op_name = "nn.contrib_conv2d_gemm_weight_transform"
    check_num_args(op_name, arg_types, 1)
    w = tensor_arg(arg_types, 0, op_name)
    if len(w.shape) != 4:
        raise TypeError(f"{op_name}: expects HWIO kernels, got {type_str(w)}")
    tr, tc = int(attrs.tile_rows), int(attrs.tile_cols)
    if tr < 1 or tc < 1:
        raise ValueError(f"{op_name}: tile_rows and tile_cols must be positive, got {tr}, {tc}")
    k = int(w.shape[0]) * int(w.shape[1]) * int(w.shape[2])
    n = int(w.shape[3])
    return TensorType((-(-n // tr), -(-k // tc), tr, tc), w.dtype)


def _gemm_conv_rel(arg_types, attrs):
    op_name = "nn.contrib_conv2d_gemm_without_weight_transform"
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    weight = tensor_arg(arg_types, 1, op_name)
    if attrs.data_layout != "NHWC" or len(data.shape) != 4 or len(weight.shape) != 4:
        raise TypeError(f"{op_name}: expects NHWC data and 4-D blocked weights, got "
                        f"{type_str(data)} ({attrs.data_layout}) and {type_str(weight)}")
    if attrs.kernel_size is None or attrs.channels is None:
        raise ValueError(f"{op_name}: kernel_size and channels must be set")
    kh, kw = (int(k) for k in attrs.kernel_size)
    oc = int(attrs.channels)
    _, tr, tc = (int(v) for v in weight.shape[1:])
    k = kh * kw * int(data.shape[3]) // int(attrs.groups)
    if int(weight.shape[0]) * tr < oc or int(weight.shape[1]) * tc < k:
        raise TypeError(f"{op_name}: blocked weight {type_str(weight)} is too small for "
                        f"{oc} channels and a reduction of {k}")
    st = window_tuple(attrs.strides, 2, "strides", op_name)
    dl = window_tuple(attrs.dilation, 2, "dilation", op_name)
    pad = pad_tuple(attrs.padding, 2, op_name)
    oh = (data.shape[1] + pad[0] + pad[2] - ((kh - 1) * dl[0] + 1)) // st[0] + 1
    ow = (data.shape[2] + pad[1] + pad[3] - ((kw - 1) * dl[1] + 1)) // st[1] + 1
    check_positive(op_name, "output height", oh)
    check_positive(op_name, "output width", ow)
    return TensorType((data.shape[0], oh, ow, oc), attrs.out_dtype or data.dtype)


_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
define_op("nn.contrib_conv2d_winograd_weight_transform", _wt2d_rel, pattern=OpPattern.OPAQUE,
          attrs_type=ConvWinogradWeightTransformAttrs, num_inputs=1,
          describe="Winograd transform G g G^T of conv2d kernels.")
define_op("nn.contrib_conv3d_winograd_weight_transform", _wt3d_rel, pattern=OpPattern.OPAQUE,
          attrs_type=ConvWinogradWeightTransformAttrs, num_inputs=1,
          describe="Winograd transform of conv3d kernels.")
define_op("nn.contrib_conv2d_winograd_without_weight_transform",
          _winograd_conv_rel("nn.contrib_conv2d_winograd_without_weight_transform", 2),
          pattern=_FUSABLE, attrs_type=Conv2DWinogradAttrs, num_inputs=2,
          describe="conv2d with Winograd-transformed weights.")
define_op("nn.contrib_conv3d_winograd_without_weight_transform",
          _winograd_conv_rel("nn.contrib_conv3d_winograd_without_weight_transform", 3),
          pattern=_FUSABLE, attrs_type=Conv3DWinogradAttrs, num_inputs=2,
          describe="conv3d with Winograd-transformed weights.")
define_op("nn.contrib_conv2d_gemm_weight_transform", _gemm_wt_rel, pattern=OpPattern.OPAQUE,
          attrs_type=ConvGemmWeightTransformAttrs, num_inputs=1,
          describe="HWIO kernels flattened and blocked for the GEMM convolution.")
define_op("nn.contrib_conv2d_gemm_without_weight_transform", _gemm_conv_rel, pattern=_FUSABLE,
          attrs_type=A.Conv2DAttrs, num_inputs=2,
          describe="NHWC conv2d as a GEMM with pre-blocked weights.")


# --------------------------------------------------------------------------- constructors
def _tup(v, n):
    return (int(v),) * n if isinstance(v, int | np.integer) else tuple(v)


def _opt(v, n):
    return None if v is None else _tup(v, n)


def contrib_conv2d_winograd_weight_transform(weight: Expr, tile_size: int) -> Call:
    return Call(Op.get("nn.contrib_conv2d_winograd_weight_transform"), [weight],
                ConvWinogradWeightTransformAttrs(tile_size=int(tile_size)))


def contrib_conv3d_winograd_weight_transform(weight: Expr, tile_size: int) -> Call:
    return Call(Op.get("nn.contrib_conv3d_winograd_weight_transform"), [weight],
                ConvWinogradWeightTransformAttrs(tile_size=int(tile_size)))


def contrib_conv2d_winograd_without_weight_transform(
        data: Expr, weight: Expr, tile_size: int, strides=(1, 1), padding=(0, 0),
        dilation=(1, 1), groups: int = 1, channels=None, kernel_size=None,
        data_layout: str = "NCHW", kernel_layout: str = "OIHW", out_layout: str = "",
        out_dtype: str = "") -> Call:
    from .nn import get_pad_tuple2d

    attrs = Conv2DWinogradAttrs(
        tile_size=int(tile_size), strides=_tup(strides, 2), padding=get_pad_tuple2d(padding),
        dilation=_tup(dilation, 2), groups=int(groups), channels=channels,
        kernel_size=_opt(kernel_size, 2), data_layout=data_layout, kernel_layout=kernel_layout,
        out_layout=out_layout, out_dtype=out_dtype)
    return Call(Op.get("nn.contrib_conv2d_winograd_without_weight_transform"), [data, weight],
                attrs)


def contrib_conv3d_winograd_without_weight_transform(
        data: Expr, weight: Expr, tile_size: int, strides=(1, 1, 1), padding=(0, 0, 0),
        dilation=(1, 1, 1), groups: int = 1, channels=None, kernel_size=None,
        data_layout: str = "NCDHW", kernel_layout: str = "OIDHW", out_layout: str = "",
        out_dtype: str = "") -> Call:
    attrs = Conv3DWinogradAttrs(
        tile_size=int(tile_size), strides=_tup(strides, 3), padding=get_pad_tuple3d(padding),
        dilation=_tup(dilation, 3), groups=int(groups), channels=channels,
        kernel_size=_opt(kernel_size, 3), data_layout=data_layout, kernel_layout=kernel_layout,
        out_layout=out_layout, out_dtype=out_dtype)
    return Call(Op.get("nn.contrib_conv3d_winograd_without_weight_transform"), [data, weight],
                attrs)


def contrib_conv2d_gemm_weight_transform(weights: Expr, tile_rows: int, tile_cols: int) -> Call:
    return Call(Op.get("nn.contrib_conv2d_gemm_weight_transform"), [weights],
                ConvGemmWeightTransformAttrs(tile_rows=int(tile_rows), tile_cols=int(tile_cols)))


def contrib_conv2d_gemm_without_weight_transform(
        data: Expr, weight: Expr, strides=(1, 1), padding=(0, 0), dilation=(1, 1),
        groups: int = 1, channels=None, kernel_size=None, data_layout: str = "NHWC",
        kernel_layout: str = "HWIO", out_layout: str = "", out_dtype: str = "") -> Call:
    from .nn import _conv2d_attrs

    attrs = _conv2d_attrs(strides, padding, dilation, groups, channels, kernel_size,
                          data_layout, kernel_layout, out_layout, out_dtype)
    return Call(Op.get("nn.contrib_conv2d_gemm_without_weight_transform"), [data, weight], attrs)
