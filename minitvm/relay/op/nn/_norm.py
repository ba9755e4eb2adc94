"""Normalizations: nn.batch_norm (a 3-tuple result), nn.layer_norm, nn.group_norm,
nn.instance_norm, nn.lrn and nn.l2_normalize. The numpy references
(``minitvm.topi.reference.nn``) are inference-mode formulas."""

from __future__ import annotations

from ....ir.op import OpPattern
from ....ir.type import TensorType, TupleType
from ....topi.shape_conditions import agree, divides
from ..op import define_op
from ..type_relations import (
    check_num_args,
    normalize_axis,
    shape_str,
    tensor_arg,
)
from . import attrs as A

_PARAM_NAMES = ("gamma", "beta", "moving_mean", "moving_var")


def _check_channel_params(op_name, arg_types, axis_dim, dtype, start=1):
    """Every parameter after the data must be a 1-D tensor of the channel extent and dtype."""
    for i in range(start, len(arg_types)):
        t = tensor_arg(arg_types, i, op_name)
        name = _PARAM_NAMES[i - 1] if i - 1 < len(_PARAM_NAMES) else f"argument {i}"
        ok = len(t.shape) == 1 and agree(t.shape[0], axis_dim)
        if not ok:
            raise TypeError(f"{op_name}: {name} must have shape ({axis_dim},) to match the "
                            f"normalized axis, got {shape_str(t.shape)}")
        if t.dtype != dtype:
            raise TypeError(f"{op_name}: {name} has dtype {t.dtype} but the data is {dtype}")


def batch_norm_rel(arg_types, attrs, op_name: str = "nn.batch_norm"):
    """(normalized data, mean, var): the data type and two vectors of the channel extent."""
    check_num_args(op_name, arg_types, 5)
    data = tensor_arg(arg_types, 0, op_name)
    axis = normalize_axis(attrs.axis, len(data.shape), op_name)
    c = data.shape[axis]
    _check_channel_params(op_name, arg_types, c, data.dtype)
    vec = TensorType((c,), data.dtype)
    return TupleType([TensorType(data.shape, data.dtype), vec, vec])


def _norm_rel(op_name, n_args):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, n_args)
        data = tensor_arg(arg_types, 0, op_name)
        axis = normalize_axis(attrs.axis, len(data.shape), op_name)
        c = data.shape[axis]
        if "num_groups" in attrs:
            g = int(attrs.num_groups)
            if g <= 0 or not divides(c, g):
                raise TypeError(f"{op_name}: channels {c} are not divisible by num_groups {g}")
        _check_channel_params(op_name, arg_types, c, data.dtype)
        return TensorType(data.shape, data.dtype)

    rel.__name__ = f"norm_rel[{op_name}]"
    return rel


def _lrn_rel(arg_types, attrs):
    check_num_args("nn.lrn", arg_types, 1)
    data = tensor_arg(arg_types, 0, "nn.lrn")
    normalize_axis(attrs.axis, len(data.shape), "nn.lrn")
    return data


def _l2_rel(arg_types, attrs):
    check_num_args("nn.l2_normalize", arg_types, 1)
    return tensor_arg(arg_types, 0, "nn.l2_normalize")


define_op("nn.batch_norm", batch_norm_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=A.BatchNormAttrs, num_inputs=5,
          describe="Batch normalization (inference): returns (out, mean, var).")
define_op("nn.layer_norm", _norm_rel("nn.layer_norm", 3), pattern=OpPattern.OPAQUE,
          attrs_type=A.LayerNormAttrs, num_inputs=3, describe="Layer normalization over one axis.")
define_op("nn.instance_norm", _norm_rel("nn.instance_norm", 3), pattern=OpPattern.OPAQUE,
          attrs_type=A.InstanceNormAttrs, num_inputs=3, describe="Instance normalization.")
define_op("nn.group_norm", _norm_rel("nn.group_norm", 3), pattern=OpPattern.OPAQUE,
          attrs_type=A.GroupNormAttrs, num_inputs=3, describe="Group normalization.")
define_op("nn.lrn", _lrn_rel, pattern=OpPattern.OPAQUE, attrs_type=A.LRNAttrs, num_inputs=1,
          describe="Local response normalization across channels.")
define_op("nn.l2_normalize", _l2_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=A.L2NormalizeAttrs, num_inputs=1, describe="L2 normalization over axes.")
