"""Numpy references of the training-loss ops nn.nll_loss, nn.cross_entropy, nn.ctc_log_alpha,
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


@reference("nn.ctc_log_alpha")
def _ctc_log_alpha(attrs, args, out_type):
    """CTC's forward variables ``(N, T, width)`` (``topi.ctc``), one sample at a time."""
    log_probs, targets, input_lengths, target_lengths = (np.asarray(a) for a in args)
    frames, batch, classes = log_probs.shape
    width, blank = int(out_type.shape[2]), int(attrs.blank)
    out = np.full((batch, frames, width), -np.inf, dtype=out_type.dtype)
    offsets = np.concatenate([[0], np.cumsum(target_lengths)[:-1]]).astype(np.int64)
    for n in range(batch):
        length = int(target_lengths[n])
        labels = targets[offsets[n]:offsets[n] + length] if targets.ndim == 1 else \
            targets[n, :length]
        ext = np.full(min(2 * length + 1, width), blank, dtype=np.int64)
        ext[1::2] = labels[:len(ext[1::2])]
        steps = min(max(int(input_lengths[n]), 0), frames)
        if steps == 0:
            continue
        alpha = out[n]
        alpha[0, 0] = log_probs[0, n, blank]
        if len(ext) > 1:
            alpha[0, 1] = log_probs[0, n, ext[1]]
        with np.errstate(divide="ignore", invalid="ignore"):
            for t in range(1, steps):
                for s in range(len(ext)):
                    terms = [alpha[t - 1, s]]
                    if s >= 1:
                        terms.append(alpha[t - 1, s - 1])
                    if s >= 2 and s % 2 == 1 and ext[s] != ext[s - 2]:
                        terms.append(alpha[t - 1, s - 2])
                    top = max(terms)
                    lse = top if top == -np.inf else top + np.log(
                        sum(np.exp(v - top) for v in terms))
                    alpha[t, s] = lse + log_probs[t, n, ext[s]]
    return out
