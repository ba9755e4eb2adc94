"""torch's ``nn.functional.ctc_loss`` (ATen ``ctc_loss`` / ``_ctc_loss``) composed for the
importers of both dialects on the CTC forward-variable kernel (``topi.ctc``): the loss of
sample ``n`` is ``-log(alpha[T_n - 1, 2 L_n] + alpha[T_n - 1, 2 L_n - 1])`` (log-sum-exp of
the table's two final entries, gathered at the sample's lengths), then ``zero_infinity`` and
the reduction: ``none``, ``sum``, or ``mean`` (each loss divided by its target length, at
least 1, then averaged over the batch), as torch's.

``ops`` is the dialect's operator namespace; ``alpha_kernel(log_probs, targets,
input_lengths, target_lengths, blank, width)`` calls the kernel on ``(T, N, C)`` log
probabilities (the dialect's op or call_tir); ``const(array)`` makes a constant of a numpy
array; ``emit`` binds a value used more than once. Shapes are static; lengths may be run-time
tensors (or Python ints, made constants by the caller)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["REDUCTIONS", "ctc_loss"]

# ATen's Reduction enum: 0 none, 1 mean, 2 sum
REDUCTIONS = ("none", "mean", "sum")


def _cast(ops: Any, x, dtype: str):
    return (getattr(ops, "astype", None) or ops.cast)(x, dtype)


def ctc_loss(ops: Any, alpha_kernel: Callable, log_probs, targets, input_lengths,
             target_lengths, lp_shape: Sequence[int], tg_shape: Sequence[int], dtype: str,
             const: Callable, emit: Callable = lambda e: e, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False,
             longest_target: int | None = None):
    """``(loss, nll, log_alpha)``: torch's ``ctc_loss`` (after ``zero_infinity`` and
    ``reduction``) and ``_ctc_loss``'s outputs, the per-sample losses as they are and the
    table ``(N, T, 2 S + 1)``, ``S`` the ``longest_target`` when the caller knows it (ATen's
    width) else the targets' bound (the padded targets' last dim, or their total). A ``(T, C)``
    ``log_probs`` is one unbatched sample (targets ``(S,)``, scalar lengths)."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"ctc_loss: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    lp_shape, tg_shape = tuple(lp_shape), tuple(tg_shape)
    unbatched = len(lp_shape) == 2
    if unbatched:
        log_probs = ops.expand_dims(log_probs, 1)
        targets = ops.reshape(targets, (1,) + tg_shape)
        input_lengths = ops.reshape(input_lengths, (1,))
        target_lengths = ops.reshape(target_lengths, (1,))
        lp_shape, tg_shape = (lp_shape[0], 1, lp_shape[1]), (1,) + tg_shape
    frames, batch = lp_shape[0], lp_shape[1]
    bound = tg_shape[-1] if len(tg_shape) == 2 else tg_shape[0]
    width = 2 * (bound if longest_target is None else min(longest_target, bound)) + 1
    input_lengths = emit(_cast(ops, input_lengths, "int64"))
    target_lengths = emit(_cast(ops, target_lengths, "int64"))
    alpha = emit(alpha_kernel(log_probs, targets, input_lengths, target_lengths, blank, width))

    def i64(v):
        return const(np.array(v, dtype="int64"))

    flat = emit(ops.reshape(alpha, (batch * frames * width,)))
    last_frame = ops.minimum(ops.maximum(ops.subtract(input_lengths, i64(1)), i64(0)),
                             i64(frames - 1))
    row = emit(ops.add(i64(np.arange(batch) * frames * width),
                       ops.multiply(last_frame, i64(width))))
    doubled = emit(ops.multiply(target_lengths, i64(2)))
    final = ops.take(flat, ops.add(row, ops.minimum(doubled, i64(width - 1))), axis=0)
    before = ops.take(flat, ops.add(row, ops.minimum(ops.maximum(
        ops.subtract(doubled, i64(1)), i64(0)), i64(width - 1))), axis=0)
    neg_inf = const(np.array(-np.inf, dtype))
    final = emit(ops.where(ops.greater(doubled, i64(width - 1)), neg_inf, final))
    before = emit(ops.where(ops.logical_and(ops.greater(target_lengths, i64(0)),
                                            ops.less_equal(doubled, i64(width))),
                            before, neg_inf))
    top = emit(ops.maximum(final, before))
    log_sum = ops.add(top, ops.log(ops.add(ops.exp(ops.subtract(final, top)),
                                           ops.exp(ops.subtract(before, top)))))
    loss = emit(ops.negative(ops.where(ops.equal(top, neg_inf), neg_inf, log_sum)))
    raw = loss
    if zero_infinity:
        loss = emit(ops.where(ops.equal(loss, const(np.array(np.inf, dtype))),
                              const(np.array(0, dtype)), loss))
    if reduction == "sum":
        loss = ops.sum(loss)
    elif reduction == "mean":
        divisor = _cast(ops, ops.maximum(target_lengths, i64(1)), dtype)
        loss = ops.mean(ops.divide(loss, divisor))
    elif unbatched:
        loss = ops.reshape(loss, ())
    if unbatched:
        alpha = ops.reshape(alpha, (frames, width))
        raw = ops.reshape(raw, ())
    return loss, raw, alpha
