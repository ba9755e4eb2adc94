"""Softmax and normalization references in TVM's testing signatures."""

from __future__ import annotations

import numpy as np


def softmax_python(a_np, axis: int = 1):
    e = np.exp(a_np - a_np.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_python(a_np, axis: int = 1):
    shifted = a_np - a_np.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def layer_norm_python(data, gamma, beta, axis, epsilon: float = 1e-5):
    axes = tuple(a % data.ndim for a in (axis if isinstance(axis, (list, tuple)) else (axis,)))
    mean = data.mean(axis=axes, keepdims=True)
    var = data.var(axis=axes, keepdims=True)
    out = (data - mean) / np.sqrt(var + epsilon)
    shape = [data.shape[i] if i in axes else 1 for i in range(data.ndim)]
    out = out * gamma.reshape(shape)
    return out + beta.reshape(shape) if beta is not None else out


def instance_norm_python(data, gamma, beta, axis, epsilon: float = 1e-5):
    axes = tuple(a % data.ndim for a in (axis if isinstance(axis, (list, tuple)) else (axis,)))
    mean = data.mean(axis=axes, keepdims=True)
    var = data.var(axis=axes, keepdims=True)
    shape = [1] * data.ndim
    shape[1] = data.shape[1]
    return (data - mean) / np.sqrt(var + epsilon) * gamma.reshape(shape) + beta.reshape(shape)


def group_norm_python(data, gamma, beta, num_groups, channel_axis, axes, epsilon=1e-5):
    """Group norm: channels split into ``num_groups``, normalized over them and ``axes``."""
    ch = channel_axis % data.ndim
    c = data.shape[ch]
    shape = list(data.shape)
    shape[ch:ch + 1] = [num_groups, c // num_groups]
    x = data.reshape(shape)
    red = sorted({(a % data.ndim) + (1 if (a % data.ndim) >= ch else 0) for a in axes}
                 | {ch + 1})
    mean = x.mean(axis=tuple(red), keepdims=True)
    var = x.var(axis=tuple(red), keepdims=True)
    out = ((x - mean) / np.sqrt(var + epsilon)).reshape(data.shape)
    bshape = [1] * data.ndim
    bshape[ch] = c
    return out * gamma.reshape(bshape) + beta.reshape(bshape)


def batch_norm(x, gamma, beta, moving_mean, moving_var, axis, epsilon, center, scale,
               training, momentum):
    """Returns (out, new moving mean, new moving var), as TVM's reference does."""
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    red = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    if training:
        mean, var = x.mean(axis=red), x.var(axis=red)
        new_mean = moving_mean * (1 - momentum) + mean * momentum
        new_var = moving_var * (1 - momentum) + var * momentum
    else:
        mean, var, new_mean, new_var = moving_mean, moving_var, moving_mean, moving_var
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + epsilon)
    if scale:
        out = out * gamma.reshape(shape)
    if center:
        out = out + beta.reshape(shape)
    return out, new_mean, new_var


def l2_normalize_python(a_np, eps, axis=None):
    sq = np.sum(a_np * a_np, axis=tuple(axis) if axis is not None else None, keepdims=True)
    return a_np / np.sqrt(np.maximum(sq, eps))


def lrn_python(a_np, size, axis, bias, alpha, beta):
    """Local response normalization across ``size`` neighbours on ``axis``."""
    sq = np.moveaxis(a_np * a_np, axis, 0)
    n = sq.shape[0]
    acc = np.zeros_like(sq)
    half = size // 2
    for i in range(n):
        acc[i] = sq[max(0, i - half):min(n, i + half + 1)].sum(axis=0)
    acc = np.moveaxis(acc, 0, axis)
    return a_np / np.power(bias + alpha * acc / size, beta)
