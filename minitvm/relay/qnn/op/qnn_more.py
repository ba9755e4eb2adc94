"""qnn.batch_matmul and qnn.conv2d_transpose: definitions (type relations; references in
``topi.reference.qnn_more``), canonicalization to integer Relay, and TVM's constructors."""

from __future__ import annotations

from ....ir.op import Op, OpPattern, register_op_attr
from ...expr import Call
from ...op import tensor as _t
from ...op.nn import nn as _nn
from ...op.nn.attrs import BatchMatmulAttrs, Conv2DTransposeAttrs
from ...op.op import define_op
from ...op.type_relations import check_num_args, tensor_arg, type_str
from .canonicalize import _per_axis
from .qnn import _f32, _i32, _qparam

__all__ = ["batch_matmul", "conv2d_transpose"]

_INT = ("int8", "uint8", "int16", "uint16")


def _int_operands(op_name, arg_types, what):
    ts = [tensor_arg(arg_types, i, op_name) for i in (0, 1)]
    for t, name in zip(ts, what):
        if t.dtype not in _INT:
            raise TypeError(f"{op_name}: the {name} must be int8/uint8/int16/uint16, got "
                            f"{type_str(t)}")
    return ts


def _batch_matmul_rel(arg_types, attrs):
    op_name = "qnn.batch_matmul"
    check_num_args(op_name, arg_types, 6)
    x, y = _int_operands(op_name, arg_types, ("x", "y"))
    for i, (dt, what) in enumerate((("int32", "x zero point"), ("int32", "y zero point"),
                                    ("float32", "x scale"), ("float32", "y scale"))):
        _qparam(arg_types, 2 + i, op_name, dt, f"the {what}")
    rel = Op.get("nn.batch_matmul").get_attr("FTypeRelation")
    out = rel([x, y], attrs)
    return type(out)(out.shape, attrs.out_dtype or "int32")


def _conv2d_transpose_rel(arg_types, attrs):
    op_name = "qnn.conv2d_transpose"
    check_num_args(op_name, arg_types, 6)
    data, kernel = _int_operands(op_name, arg_types, ("data", "kernel"))
    for i, (dt, what) in enumerate((("int32", "input zero point"), ("int32", "kernel zero point"),
                                    ("float32", "input scale"), ("float32", "kernel scale"))):
        _qparam(arg_types, 2 + i, op_name, dt, f"the {what}")
    rel = Op.get("nn.conv2d_transpose").get_attr("FTypeRelation")
    out = rel([data, kernel], attrs)
    return type(out)(out.shape, attrs.out_dtype or "int32")


define_op("qnn.batch_matmul", _batch_matmul_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=BatchMatmulAttrs, num_inputs=6,
          describe="Quantized batched matrix product accumulating in int32.")
define_op("qnn.conv2d_transpose", _conv2d_transpose_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=Conv2DTransposeAttrs, num_inputs=6,
          describe="Quantized transposed 2D convolution accumulating in int32.")


@register_op_attr("qnn.batch_matmul", "FTVMQnnCanonicalize")
def _canon_batch_matmul(attrs, args, types):
    x, y, xzp, yzp = args[:4]
    a = _t.subtract(_t.cast(x, "int32"), xzp)
    b = _t.subtract(_t.cast(y, "int32"), yzp)
    return _nn.batch_matmul(a, b, out_dtype=attrs.out_dtype or "int32",
                            transpose_a=attrs.transpose_a, transpose_b=attrs.transpose_b)


@register_op_attr("qnn.conv2d_transpose", "FTVMQnnCanonicalize")
def _canon_conv2d_transpose(attrs, args, types):
    data, kernel, izp, kzp = args[:4]
    x = _t.subtract(_t.cast(data, "int32"), izp)
    axis = attrs.kernel_layout.index("O")
    w = _t.subtract(_t.cast(kernel, "int32"), _per_axis(kzp, types[3], axis, 4))
    return _nn.conv2d_transpose(
        x, w, strides=attrs.strides, padding=attrs.padding, dilation=attrs.dilation,
        groups=attrs.groups, channels=attrs.channels, kernel_size=attrs.kernel_size,
        data_layout=attrs.data_layout, kernel_layout=attrs.kernel_layout,
        out_layout=attrs.out_layout, output_padding=attrs.output_padding,
        out_dtype=attrs.out_dtype or "int32")


def batch_matmul(x, y, x_zero_point, y_zero_point, x_scale, y_scale,
                 out_dtype: str = "int32") -> Call:
    """Quantized x @ y^T (x: (B, M, K), y: (B, N, K)) accumulating in ``out_dtype``."""
    return Call(Op.get("qnn.batch_matmul"),
                [x, y, _i32(x_zero_point), _i32(y_zero_point), _f32(x_scale), _f32(y_scale)],
                BatchMatmulAttrs(out_dtype=out_dtype, transpose_a=False, transpose_b=True))


def conv2d_transpose(data, weight, input_zero_point, kernel_zero_point, input_scale,
                     kernel_scale, kernel_size, channels, strides=(1, 1), padding=(0, 0),
                     dilation=(1, 1), groups: int = 1, data_layout: str = "NCHW",
                     kernel_layout: str = "IOHW", out_layout: str = "", output_padding=(0, 0),
                     out_dtype: str = "int32") -> Call:
    """Quantized transposed conv2d (TVM's signature); padding is expanded to 4 values."""
    base = _nn.conv2d_transpose(data, weight, strides=strides, padding=padding,
                                dilation=dilation, groups=groups, channels=channels,
                                kernel_size=kernel_size, data_layout=data_layout,
                                kernel_layout=kernel_layout, out_layout=out_layout,
                                output_padding=output_padding, out_dtype=out_dtype)
    return Call(Op.get("qnn.conv2d_transpose"),
                [data, weight, _i32(input_zero_point), _i32(kernel_zero_point),
                 _f32(input_scale), _f32(kernel_scale)], base.attrs)
