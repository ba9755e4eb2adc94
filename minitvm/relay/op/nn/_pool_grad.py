"""Pooling gradients: nn.max_pool2d_grad and nn.avg_pool2d_grad (used by the pooling gradients).

``max_pool2d_grad(out_grad, data)`` routes each output gradient to the first maximum of its window;
``avg_pool2d_grad(out_grad, data)`` spreads it evenly over the window (the counted part of it).
Numpy references: ``minitvm.topi.reference.nn_grad``.
"""

from __future__ import annotations

from ....ir.op import OpPattern
from ..op import define_op
from ..type_relations import check_num_args, tensor_arg
from . import attrs as A


def _grad_rel(name):
    def rel(arg_types, attrs):
        check_num_args(name, arg_types, 2)
        tensor_arg(arg_types, 0, name)
        return tensor_arg(arg_types, 1, name)

    rel.__name__ = f"pool_grad_rel[{name}]"
    return rel


define_op("nn.max_pool2d_grad", _grad_rel("nn.max_pool2d_grad"), pattern=OpPattern.OPAQUE,
          attrs_type=A.MaxPool2DAttrs, num_inputs=2,
          describe="Gradient of max_pool2d with respect to its data.")
define_op("nn.avg_pool2d_grad", _grad_rel("nn.avg_pool2d_grad"), pattern=OpPattern.OPAQUE,
          attrs_type=A.AvgPool2DAttrs, num_inputs=2,
          describe="Gradient of avg_pool2d with respect to its data.")
