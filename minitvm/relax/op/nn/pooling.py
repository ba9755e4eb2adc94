"""2-D pooling: max/avg over sliding windows, and adaptive average pooling to a fixed size."""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.op import Op, OpPattern
from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._common import int_tuple, make_tensor, tensor_args
from ..base import register_op_rule
from ..op_attrs import AdaptivePool2DAttrs, Pool2DAttrs
from ._layout import dims_per_layout, from_canonical, layout_perm, to_canonical
from .convolution import conv_out_dim, padding_2d

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]


def _infer_pool2d(call: Call, ctx) -> StructInfo:
    (data,) = tensor_args(call, ["data"])
    a = call.attrs
    dperm = layout_perm(call, a.layout, "NCHW", "data")
    operm = layout_perm(call, a.out_layout, "NCHW", "output")
    dd = dims_per_layout(call, data, a.layout, "data")
    if dd is None:
        return make_tensor(None, data.dtype, 4, data.vdevice)
    n, c, h, w = to_canonical(dd, dperm)
    pt, pl, pb, pr = a.padding
    out_h = conv_out_dim(h, pt + pb, a.dilation[0], a.pool_size[0], a.strides[0], ctx,
                         a.ceil_mode)
    out_w = conv_out_dim(w, pl + pr, a.dilation[1], a.pool_size[1], a.strides[1], ctx,
                         a.ceil_mode)
    return make_tensor(from_canonical([n, c, out_h, out_w], operm), data.dtype,
                       vdevice=data.vdevice)


for _name in ("max_pool2d", "avg_pool2d"):
    register_op_rule("relax.nn." + _name, _infer_pool2d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                     num_inputs=1, arguments=("data",), attrs_type=Pool2DAttrs)
del _name


def _pool_attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout,
                out_layout) -> Pool2DAttrs:
    return Pool2DAttrs(pool_size=int_tuple(pool_size, 2, "pool_size"),
                       strides=int_tuple(strides, 2, "strides"),
                       dilation=int_tuple(dilation, 2, "dilation"),
                       padding=padding_2d(padding), ceil_mode=bool(ceil_mode),
                       count_include_pad=bool(count_include_pad), layout=layout,
                       out_layout=layout if out_layout is None else out_layout)


def max_pool2d(data: Expr, pool_size: int | Sequence[int] = (1, 1),
               strides: int | Sequence[int] = (1, 1), padding: int | Sequence[int] = (0, 0),
               dilation: int | Sequence[int] = (1, 1), ceil_mode: bool = False,
               count_include_pad: bool = False, layout: str = "NCHW",
               out_layout: str | None = None) -> Call:
    """2-D max pooling."""
    return Call(Op.get("relax.nn.max_pool2d"), [data],
                _pool_attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad,
                            layout, out_layout))


def avg_pool2d(data: Expr, pool_size: int | Sequence[int] = (1, 1),
               strides: int | Sequence[int] = (1, 1), padding: int | Sequence[int] = (0, 0),
               dilation: int | Sequence[int] = (1, 1), ceil_mode: bool = False,
               count_include_pad: bool = False, layout: str = "NCHW",
               out_layout: str | None = None) -> Call:
    """2-D average pooling."""
    return Call(Op.get("relax.nn.avg_pool2d"), [data],
                _pool_attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad,
                            layout, out_layout))


def _infer_adaptive_avg_pool2d(call: Call, ctx) -> StructInfo:
    (data,) = tensor_args(call, ["data"])
    a = call.attrs
    dperm = layout_perm(call, a.layout, "NCHW", "data")
    operm = layout_perm(call, a.out_layout, "NCHW", "output")
    dd = dims_per_layout(call, data, a.layout, "data")
    if dd is None:
        return make_tensor(None, data.dtype, 4, data.vdevice)
    n, c, h, w = to_canonical(dd, dperm)
    if a.output_size is not None:
        h, w = a.output_size
    return make_tensor(from_canonical([n, c, h, w], operm), data.dtype, vdevice=data.vdevice)


register_op_rule("relax.nn.adaptive_avg_pool2d", _infer_adaptive_avg_pool2d,
                 pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1, arguments=("data",),
                 attrs_type=AdaptivePool2DAttrs)


def adaptive_avg_pool2d(data: Expr, output_size: int | Sequence[int] | None = None,
                        layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """Average pooling to ``output_size`` (the input's H, W when None)."""
    size = None if output_size is None else int_tuple(output_size, 2, "output_size")
    return Call(Op.get("relax.nn.adaptive_avg_pool2d"), [data],
                AdaptivePool2DAttrs(output_size=size, layout=layout,
                                    out_layout=layout if out_layout is None else out_layout))
