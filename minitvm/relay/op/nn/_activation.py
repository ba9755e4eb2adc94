"""Activations and per-channel ops: nn.relu, nn.leaky_relu, nn.prelu, nn.bias_add, nn.dropout,
nn.softmax, nn.fast_softmax, nn.log_softmax."""

from __future__ import annotations

import numpy as np

from ....ir.op import OpPattern
from ....ir.type import TensorType, TupleType
from ..op import define_op
from ..type_relations import (
    check_num_args,
    identity_rel,
    is_static_dim,
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
    if len(vec.shape) != 1 or (is_static_dim(vec.shape[0]) and is_static_dim(c)
                               and vec.shape[0] != c):
        raise TypeError(f"{op_name}: expected a 1-D tensor of shape ({c},) (axis {attrs.axis} "
                        f"of data {shape_str(data.shape)}), got {shape_str(vec.shape)}")
    if vec.dtype != data.dtype:
        raise TypeError(f"{op_name}: data is {data.dtype} but the 1-D operand is {vec.dtype}")
    return data


def _expand(vec, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return vec.reshape(shape)


def _bias_add_np(attrs, args, out_type):
    x, b = args
    return x + _expand(b, normalize_axis(attrs.axis, x.ndim), x.ndim)


def _prelu_np(attrs, args, out_type):
    x, alpha = args
    a = _expand(alpha, normalize_axis(attrs.axis, x.ndim), x.ndim)
    return np.where(x > 0, x, x * a).astype(x.dtype, copy=False)


def _relu_np(attrs, args, out_type):
    return np.maximum(args[0], np.zeros((), dtype=args[0].dtype))


def _leaky_relu_np(attrs, args, out_type):
    x = args[0]
    return np.where(x > 0, x, x * attrs.alpha).astype(x.dtype, copy=False)


def _dropout_rel(arg_types, attrs):
    check_num_args("nn.dropout", arg_types, 1)
    data = tensor_arg(arg_types, 0, "nn.dropout")
    return TupleType([data, TensorType(data.shape, data.dtype)])


def _dropout_np(attrs, args, out_type):
    """Inference semantics: the data passes through unchanged; the mask is all ones."""
    x = args[0]
    return x.copy(), np.ones_like(x)


def _softmax_rel(op_name):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, 1)
        data = tensor_arg(arg_types, 0, op_name)
        normalize_axis(attrs.axis, len(data.shape), op_name)
        return data

    rel.__name__ = f"softmax_rel[{op_name}]"
    return rel


def _softmax_np(attrs, args, out_type):
    x = args[0]
    axis = normalize_axis(attrs.axis, x.ndim)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype, copy=False)


def _log_softmax_np(attrs, args, out_type):
    x = args[0]
    axis = normalize_axis(attrs.axis, x.ndim)
    shifted = x - x.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


define_op("nn.relu", named(identity_rel, "nn.relu"), _relu_np, OpPattern.ELEMWISE, None, 1,
          "max(x, 0).")
define_op("nn.leaky_relu", named(identity_rel, "nn.leaky_relu"), _leaky_relu_np,
          OpPattern.ELEMWISE, A.LeakyReluAttrs, 1, "x > 0 ? x : alpha * x.")
define_op("nn.prelu", lambda t, a: channel_vector_rel(t, a, "nn.prelu"), _prelu_np,
          OpPattern.BROADCAST, A.PReluAttrs, 2, "x > 0 ? x : alpha[c] * x.")
define_op("nn.bias_add", channel_vector_rel, _bias_add_np, OpPattern.BROADCAST, A.BiasAddAttrs, 2,
          "Add a 1-D bias along one axis.")
define_op("nn.dropout", _dropout_rel, _dropout_np, OpPattern.OPAQUE, A.DropoutAttrs, 1,
          "Dropout: (output, mask); identity at inference.")
for _name, _impl in (("nn.softmax", _softmax_np), ("nn.fast_softmax", _softmax_np),
                     ("nn.log_softmax", _log_softmax_np)):
    define_op(_name, _softmax_rel(_name), _impl, OpPattern.OUT_ELEMWISE_FUSABLE, A.SoftmaxAttrs,
              1, f"{_name} along an axis.")
