"""ONNX's ``NegativeLogLikelihoodLoss`` and the loss of ``SoftmaxCrossEntropyLoss`` (what
torch's dynamo exporter writes for ``F.cross_entropy``), built for the ONNX importers of both
dialects from the operators they share.

``ops`` is the dialect's operator namespace; ``pick(logp, target)`` reads ``logp[n, target[n,
...], ...]`` (the class axis is 1); ``scalar(v)`` is a constant of the loss dtype and
``index(v)`` an int64 constant. The mean divides by the summed weights of the targets kept (the
count of them without weights), as the ONNX reference and torch do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["nll_loss", "REDUCTIONS"]

REDUCTIONS = ("none", "sum", "mean")


def nll_loss(ops: Any, logp, target, weight, reduction: str, ignore_index: int | None,
             pick: Callable, scalar: Callable, index: Callable,
             emit: Callable = lambda e: e):
    """The loss of log-probabilities ``logp`` (N, C, d...) at int64 class ``target`` (N,
    d...), optionally weighted per class by ``weight`` (C)."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction {reduction!r} is not one of {REDUCTIONS}")
    keep = None
    if ignore_index is not None:
        keep = emit(ops.not_equal(target, index(ignore_index)))
        target = emit(ops.where(keep, target, index(0)))
    value = emit(pick(logp, target))
    w = emit(ops.take(weight, target, 0)) if weight is not None else None
    if keep is not None:
        w = emit(ops.where(keep, w if w is not None else ops.ones_like(value), scalar(0.0)))
    loss = emit(ops.negative(value if w is None else ops.multiply(w, value)))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return ops.sum(loss)
    if w is None:
        return ops.mean(loss)
    return ops.divide(ops.sum(loss), ops.sum(w))
