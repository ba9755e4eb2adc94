"""ONNX losses onto Relax: ``NegativeLogLikelihoodLoss`` and ``SoftmaxCrossEntropyLoss``
(torch's dynamo exporter writes it for ``F.cross_entropy``), through
``frontend_common.onnx_nll``; the optional second output of the latter is the log-softmax."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_nll import nll_loss
from ... import op as _op
from ...expr import const
from .context import Context, register


def _log_softmax_classes(ctx: Context, x):
    """log_softmax over axis 1 (the classes)."""
    return ctx.emit(_op.nn.log_softmax(x, axis=1))


def _loss(ctx: Context, logp, ins, attrs):
    dt = ctx.dtype(logp)
    target = ctx.expr(ins[1])
    if ctx.dtype(target) != "int64":
        target = ctx.emit(_op.astype(target, "int64"))
    weight = ctx.expr(ins[2]) if len(ins) > 2 and ins[2] is not None else None
    ignore = attrs.get("ignore_index")

    def pick(lp, t):
        t = ctx.emit(_op.expand_dims(t, 1))
        return _op.squeeze(ctx.emit(_op.gather_elements(lp, t, 1)), [1])

    return ctx.emit(nll_loss(_op, logp, target, weight, str(attrs.get("reduction", "mean")),
                             None if ignore is None else int(ignore), pick,
                             lambda v: const(np.array(v, dtype=dt), dt),
                             lambda v: const(np.array(v, dtype="int64"), "int64"), ctx.emit))


@register("NegativeLogLikelihoodLoss")
def _negative_log_likelihood(ctx: Context, ins, attrs):
    return _loss(ctx, ctx.expr(ins[0]), ins, attrs)


@register("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(ctx: Context, ins, attrs):
    logp = _log_softmax_classes(ctx, ctx.expr(ins[0]))
    return [_loss(ctx, logp, ins, attrs), logp]
