"""Numpy references of the training-loss ops nn.nll_loss, nn.cross_entropy,
nn.cross_entropy_with_logits, and of the streaming nn.fifo_buffer."""

from __future__ import annotations

import numpy as np

from ..utils import normalize_axis, reference

__all__ = ["nll_loss_np"]


def nll_loss_np(predictions, targets, weights, reduction="mean", ignore_index=-100):
    """Negative log-likelihood: -predictions[n, target, ...] * weights[target], skipping
    ``ignore_index``; "mean" divides by the total weight of the kept targets."""
    t = targets.astype(np.int64)
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    picked = np.take_along_axis(predictions, safe[:, None], axis=1)[:, 0]
    w = np.where(keep, weights[safe], 0).astype(np.float64)
    loss = -picked.astype(np.float64) * w
    if reduction == "none":
        return loss.astype(predictions.dtype)
    if reduction == "sum":
        return np.array(loss.sum(), dtype=predictions.dtype)
    return np.array(loss.sum() / w.sum(), dtype=predictions.dtype)


@reference("nn.nll_loss")
def _nll_loss(attrs, args, out_type):
    return nll_loss_np(*args, reduction=attrs.reduction, ignore_index=int(attrs.ignore_index))


@reference("nn.cross_entropy")
def _cross_entropy(attrs, args, out_type):
    x, y = args
    return np.array(-(np.log(x.astype(np.float64)) * y).sum() / x.shape[0], dtype=x.dtype)


@reference("nn.cross_entropy_with_logits")
def _cross_entropy_with_logits(attrs, args, out_type):
    x, y = args
    return np.array(-(x.astype(np.float64) * y).sum() / x.shape[0], dtype=x.dtype)


@reference("nn.fifo_buffer")
def _fifo_buffer(attrs, args, out_type):
    data, buffer = args
    axis = normalize_axis(int(attrs.axis), buffer.ndim)
    joined = np.concatenate([buffer, data], axis=axis)
    n = buffer.shape[axis]
    return np.ascontiguousarray(np.take(joined, np.arange(joined.shape[axis] - n,
                                                          joined.shape[axis]), axis=axis))
