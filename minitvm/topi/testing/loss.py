"""Loss references in TVM's testing signatures (``nll_loss``)."""

from __future__ import annotations

from ..reference.loss import nll_loss_np

__all__ = ["nll_loss"]


def nll_loss(predictions, targets, weights, reduction="mean", ignore_index=-100):
    """Negative log-likelihood loss of (N, C, d...) log-probabilities."""
    return nll_loss_np(predictions, targets, weights, reduction, ignore_index)
