"""Activations and per-channel ops: nn.relu, nn.leaky_relu, nn.prelu, nn.bias_add, nn.dropout,
nn.softmax, nn.fast_softmax, nn.log_softmax. Numpy references: ``minitvm.topi.reference.nn``."""

from __future__ import annotations

from ....ir.op import Op, OpPattern
from ....ir.type import TensorType, TupleType
from ....topi.shape_conditions import agree
from ..op import define_op
from ..type_relations import (
    check_num_args,
    identity_rel,
    named,
    normalize_axis,
    shape_str,
    tensor_arg,
)
from . import attrs as A


def channel_vector_rel(arg_types, attrs, op_name: str = "nn.bias_add"):
    """``(data, vec)``: vec is 1-D with the extent of ``data.shape[axis]``; output is data's type."""
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    vec = tensor_arg(arg_types, 1, op_name)
    axis = normalize_axis(attrs.axis, len(data.shape), op_name)
    c = data.shape[axis]
    if len(vec.shape) != 1 or not agree(vec.shape[0], c):
        raise TypeError(f"{op_name}: expected a 1-D tensor of shape ({c},) (axis {attrs.axis} "
                        f"of data {shape_str(data.shape)}), got {shape_str(vec.shape)}")
    if vec.dtype != data.dtype:
        raise TypeError(f"{op_name}: data is {data.dtype} but the 1-D operand is {vec.dtype}")
    return data


def _dropout_rel(arg_types, attrs):
    check_num_args("nn.dropout", arg_types, 1)
    data = tensor_arg(arg_types, 0, "nn.dropout")
    return TupleType([data, TensorType(data.shape, data.dtype)])


def _softmax_rel(op_name):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, 1)
        data = tensor_arg(arg_types, 0, op_name)
        normalize_axis(attrs.axis, len(data.shape), op_name)
        return data

    rel.__name__ = f"softmax_rel[{op_name}]"
    return rel


_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
define_op("nn.relu", named(identity_rel, "nn.relu"), pattern=OpPattern.ELEMWISE, num_inputs=1,
          describe="max(x, 0).")
define_op("nn.leaky_relu", named(identity_rel, "nn.leaky_relu"), pattern=OpPattern.ELEMWISE,
          attrs_type=A.LeakyReluAttrs, num_inputs=1, describe="x > 0 ? x : alpha * x.")
define_op("nn.prelu", lambda t, a: channel_vector_rel(t, a, "nn.prelu"),
          pattern=OpPattern.BROADCAST, attrs_type=A.PReluAttrs, num_inputs=2,
          describe="x > 0 ? x : alpha[c] * x.")
define_op("nn.bias_add", channel_vector_rel, pattern=OpPattern.BROADCAST,
          attrs_type=A.BiasAddAttrs, num_inputs=2, describe="Add a 1-D bias along one axis.")
define_op("nn.dropout", _dropout_rel, pattern=OpPattern.OPAQUE, attrs_type=A.DropoutAttrs,
          num_inputs=1, describe="Dropout: (output, mask); identity at inference.")
# random at training time: stateful as in TVM (FoldConstant never evaluates it)
Op.get("nn.dropout").set_attr("TOpIsStateful", True)
for _name in ("nn.softmax", "nn.fast_softmax", "nn.log_softmax"):
    define_op(_name, _softmax_rel(_name), pattern=_FUSABLE, attrs_type=A.SoftmaxAttrs,
              num_inputs=1, describe=f"{_name} along an axis.")
