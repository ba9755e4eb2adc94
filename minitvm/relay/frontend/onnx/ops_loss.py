"""ONNX losses: ``NegativeLogLikelihoodLoss`` and ``SoftmaxCrossEntropyLoss`` (torch's dynamo
exporter writes it for ``F.cross_entropy``: a SimCLR NT-Xent objective), through
``frontend_common.onnx_nll``; the optional second output of the latter is the log-softmax."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_nll import nll_loss
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .registry import register


def _log_softmax_classes(ctx, x):
    """log_softmax over axis 1 (the classes), the last axis moved there and back if needed."""
    nd = len(ctx.shape(x))
    if nd <= 2:
        return _nn.log_softmax(x, axis=-1)
    order = [0] + list(range(2, nd)) + [1]
    back = [0, nd - 1] + list(range(1, nd - 1))
    return _op.transpose(_nn.log_softmax(_op.transpose(x, order), axis=-1), back)


def _loss(ctx, logp, ins, attrs):
    dt = ctx.dtype(logp)
    target = ins[1] if ctx.dtype(ins[1]) == "int64" else _op.cast(ins[1], "int64")
    weight = ins[2] if len(ins) > 2 and ins[2] is not None else None
    ignore = attrs.get("ignore_index")

    def pick(lp, t):
        return _op.squeeze(_op.gather(lp, 1, _op.expand_dims(t, 1)), [1])

    return nll_loss(_op, logp, target, weight, str(attrs.get("reduction", "mean")),
                    None if ignore is None else int(ignore), pick,
                    lambda v: _expr.const(np.array(v, dtype=dt), dt),
                    lambda v: _expr.const(np.array(v, dtype="int64"), "int64"))


@register("NegativeLogLikelihoodLoss")
def _negative_log_likelihood(ctx, ins, attrs):
    return _loss(ctx, ins[0], ins, attrs)


@register("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(ctx, ins, attrs):
    logp = _log_softmax_classes(ctx, ins[0])
    return [_loss(ctx, logp, ins, attrs), logp]
