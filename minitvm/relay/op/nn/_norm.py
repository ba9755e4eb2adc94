"""Normalizations: nn.batch_norm (a 3-tuple result), nn.layer_norm, nn.group_norm,
nn.instance_norm, nn.lrn and nn.l2_normalize. The references are inference-mode formulas."""

from __future__ import annotations

import numpy as np

from ....ir.op import OpPattern
from ....ir.type import TensorType, TupleType
from ..op import define_op
from ..type_relations import (
    check_num_args,
    is_static_dim,
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
        ok = len(t.shape) == 1 and not (
            is_static_dim(t.shape[0]) and is_static_dim(axis_dim) and t.shape[0] != axis_dim
        )
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
        if "num_groups" in attrs and is_static_dim(c):
            g = int(attrs.num_groups)
            if g <= 0 or c % g:
                raise TypeError(f"{op_name}: channels {c} are not divisible by num_groups {g}")
        _check_channel_params(op_name, arg_types, c, data.dtype)
        return TensorType(data.shape, data.dtype)

    rel.__name__ = f"norm_rel[{op_name}]"
    return rel


def _bcast(v, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


def _affine(attrs, y, gamma, beta, axis):
    if attrs.scale:
        y = y * _bcast(gamma, axis, y.ndim)
    if attrs.center:
        y = y + _bcast(beta, axis, y.ndim)
    return y


def _batch_norm_np(attrs, args, out_type):
    x, gamma, beta, mean, var = args
    axis = normalize_axis(attrs.axis, x.ndim)
    y = (x - _bcast(mean, axis, x.ndim)) / np.sqrt(_bcast(var, axis, x.ndim) + attrs.epsilon)
    y = _affine(attrs, y, gamma, beta, axis)
    return y.astype(x.dtype, copy=False), mean.copy(), var.copy()


def _normalize(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def _layer_norm_np(attrs, args, out_type):
    x, gamma, beta = args
    axis = normalize_axis(attrs.axis, x.ndim)
    y = _affine(attrs, _normalize(x, (axis,), attrs.epsilon), gamma, beta, axis)
    return y.astype(x.dtype, copy=False)


def _instance_norm_np(attrs, args, out_type):
    x, gamma, beta = args
    axis = normalize_axis(attrs.axis, x.ndim)
    axes = tuple(i for i in range(1, x.ndim) if i != axis)
    y = _affine(attrs, _normalize(x, axes, attrs.epsilon), gamma, beta, axis)
    return y.astype(x.dtype, copy=False)


def _group_norm_np(attrs, args, out_type):
    x, gamma, beta = args
    axis = normalize_axis(attrs.axis, x.ndim)
    g = int(attrs.num_groups)
    c = x.shape[axis]
    split = x.shape[:axis] + (g, c // g) + x.shape[axis + 1:]
    xs = x.reshape(split)
    axes = tuple(i for i in range(1, xs.ndim) if i != axis)
    y = _normalize(xs, axes, attrs.epsilon).reshape(x.shape)
    return _affine(attrs, y, gamma, beta, axis).astype(x.dtype, copy=False)


def _lrn_rel(arg_types, attrs):
    check_num_args("nn.lrn", arg_types, 1)
    data = tensor_arg(arg_types, 0, "nn.lrn")
    normalize_axis(attrs.axis, len(data.shape), "nn.lrn")
    return data


def _lrn_np(attrs, args, out_type):
    x = args[0]
    axis = normalize_axis(attrs.axis, x.ndim)
    size = int(attrs.size)
    sq = np.moveaxis(x.astype(np.float64) ** 2, axis, -1)
    half = size // 2
    padded = np.pad(sq, [(0, 0)] * (sq.ndim - 1) + [(half, size - 1 - half)])
    csum = np.concatenate([np.zeros(padded.shape[:-1] + (1,)), np.cumsum(padded, -1)], -1)
    window = csum[..., size:] - csum[..., :-size]
    window = np.moveaxis(window, -1, axis)
    return (x / (attrs.bias + attrs.alpha * window / size) ** attrs.beta).astype(x.dtype)


def _l2_rel(arg_types, attrs):
    check_num_args("nn.l2_normalize", arg_types, 1)
    return tensor_arg(arg_types, 0, "nn.l2_normalize")


def _l2_np(attrs, args, out_type):
    x = args[0]
    axes = tuple(int(a) for a in attrs.axis)
    norm = np.sqrt(np.maximum((x * x).sum(axis=axes, keepdims=True), attrs.eps))
    return (x / norm).astype(x.dtype, copy=False)


define_op("nn.batch_norm", batch_norm_rel, _batch_norm_np, OpPattern.OUT_ELEMWISE_FUSABLE,
          A.BatchNormAttrs, 5, "Batch normalization (inference): returns (out, mean, var).")
define_op("nn.layer_norm", _norm_rel("nn.layer_norm", 3), _layer_norm_np, OpPattern.OPAQUE,
          A.LayerNormAttrs, 3, "Layer normalization over one axis.")
define_op("nn.instance_norm", _norm_rel("nn.instance_norm", 3), _instance_norm_np,
          OpPattern.OPAQUE, A.InstanceNormAttrs, 3, "Instance normalization.")
define_op("nn.group_norm", _norm_rel("nn.group_norm", 3), _group_norm_np, OpPattern.OPAQUE,
          A.GroupNormAttrs, 3, "Group normalization.")
define_op("nn.lrn", _lrn_rel, _lrn_np, OpPattern.OPAQUE, A.LRNAttrs, 1,
          "Local response normalization across channels.")
define_op("nn.l2_normalize", _l2_rel, _l2_np, OpPattern.OUT_ELEMWISE_FUSABLE, A.L2NormalizeAttrs,
          1, "L2 normalization over axes.")
