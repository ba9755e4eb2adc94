"""Pooling: nn.max_pool2d, nn.avg_pool2d (and 1d), global and adaptive 2d pooling.

Pooling works in the input layout (NCHW, NHWC, NCHW16c, ...): the H and W axes are found in the
layout string; the numpy references (``minitvm.topi.reference.nn``) slide the window over them
with ``sliding_window_view``. The window rules both use come from ``minitvm.topi.shape``.
"""

from __future__ import annotations

from ....ir.op import OpPattern
from ....ir.type import TensorType
from ....topi.shape import adaptive_output_size, pool_out_size, pool_tuple, spatial_axes
from ..op import define_op
from ..type_relations import check_num_args, tensor_arg
from . import attrs as A
from ._utils import check_positive, check_window_attrs, pad_tuple

_NAMES = {"H": "height", "W": "width"}


def pool_rel(arg_types, attrs, op_name: str = "nn.max_pool2d", spatial: str = "HW"):
    """Output type of max/avg pooling in the input layout."""
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    nd = len(spatial)
    idx = spatial_axes(attrs.layout, len(data.shape), spatial, op_name)
    pool = pool_tuple(attrs.pool_size, nd)
    strides = pool_tuple(attrs.strides, nd)
    dilation = pool_tuple(attrs.dilation, nd)
    pad = pad_tuple(attrs.padding, nd, op_name)
    check_window_attrs(op_name, nd, pad, pool_size=pool, strides=strides, dilation=dilation)
    shape = list(data.shape)
    for i, a in enumerate(spatial):
        shape[idx[i]] = pool_out_size(shape[idx[i]], pool[i], pad[i], pad[i + nd], strides[i],
                                      dilation[i], attrs.ceil_mode)
        check_positive(op_name, f"output {_NAMES.get(a, a)}", shape[idx[i]])
    return TensorType(shape, data.dtype)


# --------------------------------------------------------------------------- global / adaptive
def adaptive_rel(arg_types, attrs, op_name: str = "nn.adaptive_avg_pool2d"):
    """Output type of adaptive pooling: H and W become ``output_size`` (global: 1)."""
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    idx = spatial_axes(attrs.layout, len(data.shape), "HW", op_name)
    size = adaptive_output_size(attrs, data.shape, idx, op_name)
    shape = list(data.shape)
    for i, d in zip(idx, size):
        shape[i] = d
    return TensorType(shape, data.dtype)


def _def_pool(name, kind, attrs_type, spatial):
    def rel(arg_types, attrs):
        return pool_rel(arg_types, attrs, name, spatial)

    rel.__name__ = f"pool_rel[{name}]"
    define_op(name, rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs_type=attrs_type,
              num_inputs=1, describe=f"{kind} pooling over {spatial}.")


def _def_adaptive(name, kind, attrs_type):
    def rel(arg_types, attrs):
        return adaptive_rel(arg_types, attrs, name)

    rel.__name__ = f"adaptive_rel[{name}]"
    define_op(name, rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, attrs_type=attrs_type,
              num_inputs=1, describe=f"{kind} pooling to a fixed output size.")


_def_pool("nn.max_pool2d", "max", A.MaxPool2DAttrs, "HW")
_def_pool("nn.avg_pool2d", "avg", A.AvgPool2DAttrs, "HW")
_def_pool("nn.max_pool1d", "max", A.MaxPool1DAttrs, "W")
_def_pool("nn.avg_pool1d", "avg", A.AvgPool1DAttrs, "W")
_def_adaptive("nn.global_max_pool2d", "max", A.GlobalPool2DAttrs)
_def_adaptive("nn.global_avg_pool2d", "avg", A.GlobalPool2DAttrs)
_def_adaptive("nn.adaptive_max_pool2d", "max", A.AdaptivePool2DAttrs)
_def_adaptive("nn.adaptive_avg_pool2d", "avg", A.AdaptivePool2DAttrs)

__all__ = ["pool_rel", "adaptive_rel"]
