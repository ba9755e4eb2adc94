"""The convolutions beyond conv1d/conv2d: nn.conv3d, nn.conv1d_transpose, nn.conv3d_transpose,
nn.conv2d_backward_weight, nn.deformable_conv2d and nn.correlation, with TVM's attrs, type
relations and constructors.

Shapes are converted to the primal NC+spatial / OI+spatial order whatever the layouts, as in
``_conv``; the numpy references live in ``minitvm.topi.reference.conv_nd``.
"""

from __future__ import annotations

import numpy as np

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ....tir.expr import Any
from ....topi.shape import window_tuple
from ....topi.shape_conditions import agree, divides
from ...expr import Call, Expr
from ..op import define_op
from ..type_relations import check_num_args, is_static_dim, shape_str, tensor_arg
from . import attrs as A
from ._conv import conv_rel
from ._utils import (
    arith,
    check_positive,
    check_window_attrs,
    pad_tuple,
    shape_from_primal,
    shape_to_primal,
)

__all__ = ["conv3d", "conv1d_transpose", "conv3d_transpose", "conv2d_backward_weight",
           "deformable_conv2d", "correlation", "Conv3DTransposeAttrs", "DeformableConv2DAttrs",
           "CorrelationAttrs"]

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
_NAMES = {"D": "depth", "H": "height", "W": "width"}


class Conv3DTransposeAttrs(Attrs):
    """Attributes of nn.conv3d_transpose (TVM's field order)."""

    __slots__ = ()
    _fields = (("channels", None), ("kernel_size", None), ("strides", (1, 1, 1)),
               ("output_padding", (0, 0, 0)), ("padding", (0, 0, 0)), ("dilation", (1, 1, 1)),
               ("groups", 1), ("data_layout", "NCDHW"), ("kernel_layout", "IODHW"),
               ("out_layout", ""), ("out_dtype", ""))


class DeformableConv2DAttrs(Attrs):
    """Attributes of nn.deformable_conv2d."""

    __slots__ = ()
    _fields = (("strides", (1, 1)), ("padding", (0, 0)), ("dilation", (1, 1)),
               ("deformable_groups", 1), ("groups", 1), ("channels", None),
               ("kernel_size", None), ("data_layout", "NCHW"), ("kernel_layout", "OIHW"),
               ("out_layout", ""), ("out_dtype", ""))


class CorrelationAttrs(Attrs):
    """Attributes of nn.correlation (FlowNet's correlation layer)."""

    __slots__ = ()
    _fields = (("kernel_size", 1), ("max_displacement", 1), ("stride1", 1), ("stride2", 1),
               ("padding", (0, 0)), ("is_multiply", True), ("layout", "NCHW"))


# --------------------------------------------------------------------------- type relations
def _check_channels(op_name, attrs, out_ch, weight):
    if attrs.channels is not None and not agree(out_ch, int(attrs.channels)):
        raise TypeError(f"{op_name}: attribute channels={attrs.channels} does not match the "
                        f"weight's out-channels {out_ch} (weight {shape_str(weight.shape)})")


def conv_nd_rel(arg_types, attrs, op_name: str, nd: int) -> TensorType:
    """Output type of an nd convolution (any layouts): the shared rule of ``_conv``."""
    return conv_rel(arg_types, attrs, op_name, nd)


def conv_transpose_nd_rel(arg_types, attrs, op_name: str, nd: int) -> TensorType:
    """Output type of an nd transposed convolution: weight is (in, out / groups, *kernel)."""
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    weight = tensor_arg(arg_types, 1, op_name)
    sp = _SPATIAL[nd]
    d = shape_to_primal(data.shape, attrs.data_layout, "NC" + sp, "data", op_name)
    w = shape_to_primal(weight.shape, attrs.kernel_layout, "IO" + sp, "weight", op_name)
    groups = int(attrs.groups)
    if not agree(d["C"], w["I"]):
        raise TypeError(f"{op_name}: input channels {d['C']} (data {shape_str(data.shape)}) do "
                        f"not match weight in-channels {w['I']} (weight "
                        f"{shape_str(weight.shape)}, kernel_layout {attrs.kernel_layout})")
    if not divides(d["C"], groups):  # (stated where symbolic: a kernel checks it per call)
        raise TypeError(f"{op_name}: input channels {d['C']} are not divisible by groups {groups}")
    out_ch = arith(lambda o: o * groups, w["O"])
    _check_channels(op_name, attrs, out_ch, weight)
    strides = window_tuple(attrs.strides, nd, "strides", op_name)
    dilation = window_tuple(attrs.dilation, nd, "dilation", op_name)
    opad = window_tuple(attrs.output_padding, nd, "output_padding", op_name)
    pad = pad_tuple(attrs.padding, nd, op_name)
    check_window_attrs(op_name, nd, pad, strides=strides, dilation=dilation)
    if any(p >= max(s, dl) for p, s, dl in zip(opad, strides, dilation)):
        raise ValueError(f"{op_name}: output_padding {list(opad)} must be smaller than the "
                         f"strides {list(strides)} or the dilation {list(dilation)}")
    out = {"N": d["N"], "C": out_ch}
    for i, a in enumerate(sp):
        dk = arith(lambda k, i=i: (k - 1) * dilation[i] + 1, w[a])
        out[a] = arith(lambda s, k, i=i: (s - 1) * strides[i] + k - pad[i] - pad[i + nd]
                       + opad[i], d[a], dk)
        check_positive(op_name, f"output {_NAMES[a]}", out[a])
    layout = attrs.out_layout or attrs.data_layout
    return TensorType(shape_from_primal(out, layout, op_name), attrs.out_dtype or data.dtype)


def _conv3d_rel(arg_types, attrs):
    return conv_nd_rel(arg_types, attrs, "nn.conv3d", 3)


def _conv1d_transpose_rel(arg_types, attrs):
    return conv_transpose_nd_rel(arg_types, attrs, "nn.conv1d_transpose", 1)


def _conv3d_transpose_rel(arg_types, attrs):
    return conv_transpose_nd_rel(arg_types, attrs, "nn.conv3d_transpose", 3)


def _backward_weight_rel(arg_types, attrs):
    op_name = "nn.conv2d_backward_weight"
    check_num_args(op_name, arg_types, 2)
    grad = tensor_arg(arg_types, 0, op_name)
    data = tensor_arg(arg_types, 1, op_name)
    g = shape_to_primal(grad.shape, attrs.out_layout or attrs.data_layout, "NCHW", "grad",
                        op_name)
    d = shape_to_primal(data.shape, attrs.data_layout, "NCHW", "data", op_name)
    if attrs.kernel_size is None or len(tuple(attrs.kernel_size)) != 2:
        raise ValueError(f"{op_name}: kernel_size must be given as 2 values, got "
                         f"{attrs.kernel_size}")
    groups = int(attrs.groups)
    if is_static_dim(d["C"]) and d["C"] % groups:
        raise TypeError(f"{op_name}: input channels {d['C']} are not divisible by groups {groups}")
    if not agree(g["N"], d["N"]):
        raise TypeError(f"{op_name}: grad batch {g['N']} does not match data batch {d['N']}")
    kh, kw = (int(k) for k in attrs.kernel_size)
    strides = window_tuple(attrs.strides, 2, "strides", op_name)
    dilation = window_tuple(attrs.dilation, 2, "dilation", op_name)
    pad = pad_tuple(attrs.padding, 2, op_name)
    for i, (a, k) in enumerate((("H", kh), ("W", kw))):
        want = (d[a] + pad[i] + pad[i + 2] - ((k - 1) * dilation[i] + 1)) // strides[i] + 1
        if not isinstance(d[a], Any) and not agree(g[a], want):
            raise TypeError(f"{op_name}: grad {_NAMES[a]} {g[a]} does not match the forward "
                            f"convolution's output {_NAMES[a]} {want}")
    w = {"O": g["C"], "I": arith(lambda c: c // groups, d["C"]), "H": kh, "W": kw}
    _check_channels(op_name, attrs, g["C"], grad)
    return TensorType(shape_from_primal(w, attrs.kernel_layout, op_name),
                      attrs.out_dtype or data.dtype)


def _deformable_rel(arg_types, attrs):
    op_name = "nn.deformable_conv2d"
    check_num_args(op_name, arg_types, 3)
    data = tensor_arg(arg_types, 0, op_name)
    offset = tensor_arg(arg_types, 1, op_name)
    weight = tensor_arg(arg_types, 2, op_name)
    out_t = conv_nd_rel([data, weight], attrs, op_name, 2)
    w = shape_to_primal(weight.shape, attrs.kernel_layout, "OIHW", "weight", op_name)
    o = shape_to_primal(offset.shape, attrs.data_layout, "NCHW", "offset", op_name)
    dg = int(attrs.deformable_groups)
    want_c = arith(lambda kh, kw: dg * kh * kw * 2, w["H"], w["W"])
    res = shape_to_primal(out_t.shape, attrs.out_layout or attrs.data_layout, "NCHW", "output",
                          op_name)
    want = (want_c, res["H"], res["W"])
    got = (o["C"], o["H"], o["W"])
    if not all(agree(a, b) for a, b in zip(got, want, strict=True)):
        raise TypeError(f"{op_name}: offset {shape_str(offset.shape)} must have "
                        f"deformable_groups * kh * kw * 2 = {want_c} channels and the output's "
                        f"spatial size {shape_str(want[1:])}")
    d = shape_to_primal(data.shape, attrs.data_layout, "NCHW", "data", op_name)
    if is_static_dim(d["C"]) and d["C"] % dg:
        raise TypeError(f"{op_name}: input channels {d['C']} are not divisible by "
                        f"deformable_groups {dg}")
    return out_t


def _correlation_rel(arg_types, attrs):
    op_name = "nn.correlation"
    check_num_args(op_name, arg_types, 2)
    a = tensor_arg(arg_types, 0, op_name)
    b = tensor_arg(arg_types, 1, op_name)
    if attrs.layout != "NCHW":
        raise ValueError(f"{op_name}: only the NCHW layout is supported, got {attrs.layout!r}")
    if len(a.shape) != 4 or tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        raise TypeError(f"{op_name}: expects two 4-D NCHW tensors of one shape and dtype, got "
                        f"{shape_str(a.shape)} {a.dtype} and {shape_str(b.shape)} {b.dtype}")
    k, md = int(attrs.kernel_size), int(attrs.max_displacement)
    s1, s2 = int(attrs.stride1), int(attrs.stride2)
    if k < 1 or k % 2 == 0 or s1 < 1 or s2 < 1 or md < 0:
        raise ValueError(f"{op_name}: kernel_size must be odd and positive, strides positive and "
                         f"max_displacement non-negative; got kernel_size={k}, stride1={s1}, "
                         f"stride2={s2}, max_displacement={md}")
    pad = pad_tuple(attrs.padding, 2, op_name)
    border = md + (k - 1) // 2
    rad = md // s2
    n, _, h, w = a.shape
    oh = arith(lambda x: -(-(x + pad[0] + pad[2] - 2 * border) // s1), h)
    ow = arith(lambda x: -(-(x + pad[1] + pad[3] - 2 * border) // s1), w)
    check_positive(op_name, "output height", oh)
    check_positive(op_name, "output width", ow)
    return TensorType((n, (2 * rad + 1) ** 2, oh, ow), a.dtype)


_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
define_op("nn.conv3d", _conv3d_rel, pattern=_FUSABLE, attrs_type=A.Conv3DAttrs, num_inputs=2,
          describe="3D convolution.")
define_op("nn.conv1d_transpose", _conv1d_transpose_rel, pattern=_FUSABLE,
          attrs_type=A.Conv1DTransposeAttrs, num_inputs=2, describe="Transposed 1D convolution.")
define_op("nn.conv3d_transpose", _conv3d_transpose_rel, pattern=_FUSABLE,
          attrs_type=Conv3DTransposeAttrs, num_inputs=2, describe="Transposed 3D convolution.")
define_op("nn.conv2d_backward_weight", _backward_weight_rel, pattern=OpPattern.OPAQUE,
          attrs_type=A.Conv2DAttrs, num_inputs=2,
          describe="Gradient of conv2d with respect to its weight.")
define_op("nn.deformable_conv2d", _deformable_rel, pattern=_FUSABLE,
          attrs_type=DeformableConv2DAttrs, num_inputs=3,
          describe="Deformable 2D convolution (learned sampling offsets).")
define_op("nn.correlation", _correlation_rel, pattern=_FUSABLE, attrs_type=CorrelationAttrs,
          num_inputs=2, describe="FlowNet correlation of two feature maps.")


# --------------------------------------------------------------------------- constructors
def _tup(value, n: int) -> tuple:
    if isinstance(value, int | np.integer):
        return (int(value),) * n
    return tuple(value)


def _opt_tup(value, n: int):
    return None if value is None else _tup(value, n)


def get_pad_tuple3d(padding) -> tuple:
    """1, 3 or 6 values -> 6 (front, top, left, back, bottom, right), as TVM's wrapper."""
    if isinstance(padding, int | np.integer):
        return (int(padding),) * 6
    padding = tuple(padding)
    if len(padding) == 3:
        return padding + padding
    if len(padding) == 6:
        return padding
    if len(padding) == 1:
        return padding * 6
    raise ValueError(f"Size of padding can only be 3 or 6, got {len(padding)}: {padding}")


def _pad4(padding) -> tuple:
    from .nn import get_pad_tuple2d

    return get_pad_tuple2d(padding)


def conv3d(data: Expr, weight: Expr, strides=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1),
           groups: int = 1, channels=None, kernel_size=None, data_layout: str = "NCDHW",
           kernel_layout: str = "OIDHW", out_layout: str = "", out_dtype: str = "") -> Call:
    """3D convolution; ``padding`` takes 1, 3 or 6 values, stored as 6."""
    attrs = A.Conv3DAttrs(strides=_tup(strides, 3), padding=get_pad_tuple3d(padding),
                          dilation=_tup(dilation, 3), groups=int(groups), channels=channels,
                          kernel_size=_opt_tup(kernel_size, 3), data_layout=data_layout,
                          kernel_layout=kernel_layout, out_layout=out_layout,
                          out_dtype=out_dtype)
    return Call(Op.get("nn.conv3d"), [data, weight], attrs)


def conv1d_transpose(data: Expr, weight: Expr, strides=(1,), padding=(0,), dilation=(1,),
                     groups: int = 1, channels=None, kernel_size=None, data_layout: str = "NCW",
                     kernel_layout: str = "IOW", out_layout: str = "", output_padding=(0,),
                     out_dtype: str = "") -> Call:
    """Transposed 1D convolution (weight: in_channels, out_channels / groups, kw)."""
    attrs = A.Conv1DTransposeAttrs(
        channels=channels, kernel_size=_opt_tup(kernel_size, 1), strides=_tup(strides, 1),
        output_padding=_tup(output_padding, 1), padding=_tup(padding, 1),
        dilation=_tup(dilation, 1), groups=int(groups), data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype)
    return Call(Op.get("nn.conv1d_transpose"), [data, weight], attrs)


def conv3d_transpose(data: Expr, weight: Expr, strides=(1, 1, 1), padding=(0, 0, 0),
                     dilation=(1, 1, 1), groups: int = 1, channels=None, kernel_size=None,
                     data_layout: str = "NCDHW", kernel_layout: str = "IODHW",
                     out_layout: str = "", output_padding=(0, 0, 0),
                     out_dtype: str = "") -> Call:
    """Transposed 3D convolution; ``padding`` takes 1, 3 or 6 values, stored as 6."""
    attrs = Conv3DTransposeAttrs(
        channels=channels, kernel_size=_opt_tup(kernel_size, 3), strides=_tup(strides, 3),
        output_padding=_tup(output_padding, 3), padding=get_pad_tuple3d(padding),
        dilation=_tup(dilation, 3), groups=int(groups), data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype)
    return Call(Op.get("nn.conv3d_transpose"), [data, weight], attrs)


def conv2d_backward_weight(grad: Expr, data: Expr, strides=(1, 1), padding=(0, 0),
                           dilation=(1, 1), groups: int = 1, channels=None, kernel_size=None,
                           grad_layout: str = "NCHW", data_layout: str = "NCHW",
                           kernel_layout: str = "OIHW", out_dtype: str = "") -> Call:
    """The weight gradient of conv2d, from the output gradient and the forward input.

    As in TVM, the attrs are Conv2DAttrs with the gradient's layout stored as ``out_layout``."""
    attrs = A.Conv2DAttrs(strides=_tup(strides, 2), padding=_pad4(padding),
                          dilation=_tup(dilation, 2), groups=int(groups), channels=channels,
                          kernel_size=_opt_tup(kernel_size, 2), data_layout=data_layout,
                          kernel_layout=kernel_layout, out_layout=grad_layout,
                          out_dtype=out_dtype)
    return Call(Op.get("nn.conv2d_backward_weight"), [grad, data], attrs)


def deformable_conv2d(data: Expr, offset: Expr, weight: Expr, strides=(1, 1), padding=(0, 0),
                      dilation=(1, 1), deformable_groups: int = 1, groups: int = 1,
                      channels=None, kernel_size=None, data_layout: str = "NCHW",
                      kernel_layout: str = "OIHW", out_layout: str = "",
                      out_dtype: str = "") -> Call:
    """Deformable 2D convolution; ``offset`` is (N, deformable_groups*kh*kw*2, OH, OW)."""
    attrs = DeformableConv2DAttrs(
        strides=_tup(strides, 2), padding=_pad4(padding), dilation=_tup(dilation, 2),
        deformable_groups=int(deformable_groups), groups=int(groups), channels=channels,
        kernel_size=_opt_tup(kernel_size, 2), data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype)
    return Call(Op.get("nn.deformable_conv2d"), [data, offset, weight], attrs)


def correlation(data1: Expr, data2: Expr, kernel_size: int, max_displacement: int, stride1: int,
                stride2: int, padding, is_multiply: bool, layout: str = "NCHW") -> Call:
    """Correlation of two NCHW feature maps over displacements within max_displacement."""
    padding = _tup(padding, 2)
    attrs = CorrelationAttrs(kernel_size=int(kernel_size), max_displacement=int(max_displacement),
                             stride1=int(stride1), stride2=int(stride2), padding=padding,
                             is_multiply=bool(is_multiply), layout=layout)
    return Call(Op.get("nn.correlation"), [data1, data2], attrs)


# --------------------------------------------------------------------------- weight types
def _register_weight_hints() -> None:
    """Unannotated weights typed from ``channels`` and ``kernel_size``, as for conv2d."""
    from ..arg_type_hints import _conv_weight
    from ..op import register_op_attr

    register_op_attr("nn.conv3d", "FInferArgTypes", _conv_weight("DHW", "NCDHW", "OIDHW"))
    register_op_attr("nn.conv1d_transpose", "FInferArgTypes",
                     _conv_weight("W", "NCW", "IOW", transpose=True))
    register_op_attr("nn.conv3d_transpose", "FInferArgTypes",
                     _conv_weight("DHW", "NCDHW", "IODHW", transpose=True))


_register_weight_hints()
