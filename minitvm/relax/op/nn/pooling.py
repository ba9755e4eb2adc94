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
from .convolution import check_windows, conv_out_dim, padding_2d

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]


SPATIAL = {1: "W", 2: "HW", 3: "DHW"}  # the spatial axes of an N-d pool's canonical layout


def _canonical_input(call: Call, nd: int) -> tuple:
    """``(data, out permutation, data dims in NC<spatial> order or None when unknown)`` of an
    N-d pool's call, its layouts checked."""
    (data,) = tensor_args(call, ["data"])
    a = call.attrs
    canon = "NC" + SPATIAL[nd]
    dperm = layout_perm(call, a.layout, canon, "data")
    operm = layout_perm(call, a.out_layout, canon, "output")
    dd = dims_per_layout(call, data, a.layout, "data")
    return data, operm, None if dd is None else to_canonical(dd, dperm)


def pool_rule(nd: int):
    """The struct-info rule of nn.max_pool<nd>d / nn.avg_pool<nd>d: each spatial size through
    its window as a convolution's (padding ``(begin..., end...)``, dilation, stride, ceil_mode),
    in the out layout."""

    def infer(call: Call, ctx) -> StructInfo:
        data, operm, dims = _canonical_input(call, nd)
        if dims is None:
            return make_tensor(None, data.dtype, nd + 2, data.vdevice)
        a = call.attrs
        n, c, *sizes = dims
        out = [conv_out_dim(sizes[q], a.padding[q] + a.padding[q + nd], a.dilation[q],
                            a.pool_size[q], a.strides[q], ctx, a.ceil_mode)
               for q in range(nd)]
        check_windows(call, "pool window", sizes, a.pool_size, out, a.strides, a.dilation)
        return make_tensor(from_canonical([n, c, *out], operm), data.dtype,
                           vdevice=data.vdevice)

    return infer


def adaptive_pool_rule(nd: int):
    """The struct-info rule of nn.adaptive_avg_pool<nd>d: the spatial sizes ``output_size``
    (the input's when None), in the out layout."""

    def infer(call: Call, ctx) -> StructInfo:
        data, operm, dims = _canonical_input(call, nd)
        if dims is None:
            return make_tensor(None, data.dtype, nd + 2, data.vdevice)
        n, c, *sizes = dims
        if call.attrs.output_size is not None:
            sizes = list(call.attrs.output_size)
        return make_tensor(from_canonical([n, c, *sizes], operm), data.dtype,
                           vdevice=data.vdevice)

    return infer


for _name in ("max_pool2d", "avg_pool2d"):
    register_op_rule("relax.nn." + _name, pool_rule(2), pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
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


register_op_rule("relax.nn.adaptive_avg_pool2d", adaptive_pool_rule(2),
                 pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1, arguments=("data",),
                 attrs_type=AdaptivePool2DAttrs)


def adaptive_avg_pool2d(data: Expr, output_size: int | Sequence[int] | None = None,
                        layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """Average pooling to ``output_size`` (the input's H, W when None)."""
    size = None if output_size is None else int_tuple(output_size, 2, "output_size")
    return Call(Op.get("relax.nn.adaptive_avg_pool2d"), [data],
                AdaptivePool2DAttrs(output_size=size, layout=layout,
                                    out_layout=layout if out_layout is None else out_layout))
