"""ATen's ``ctc_loss`` (IntList and Tensor lengths, whole) and ``_ctc_loss`` (what
decomposition leaves: the per-sample losses and the forward-variable table) onto Relax,
composed by ``frontend_common.torch_ctc`` (shared with the Relay importer) on the CTC kernel
of ``topi.ctc`` (``call_tir`` of the PrimFunc ``schedule.ctc`` writes)."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_ctc
from ....schedule import ctc as ctc_rule
from ....topi import ctc as topi_ctc
from ... import op as _op
from ...expr import const
from ...transform.legalize_ops.rule_stage import call_rule_stage
from .context import AtenContext, register


def _const(array):
    array = np.asarray(array)
    return const(array, str(array.dtype))


def _ctc(ctx: AtenContext, args, zero_infinity: bool, reduction: str):
    log_probs, targets = args[0], args[1]
    lengths, longest = [], None
    for k in (2, 3):
        v = args[k]
        if isinstance(v, list | tuple | int):  # (the IntList overloads: constants)
            values = np.asarray(v, dtype="int64")
            if k == 3:
                longest = int(values.max(initial=0))
            v = _const(values)
        lengths.append(ctx.emit(v))
    dtype = ctx.dtype(log_probs)
    if not dtype.startswith("float"):
        raise ctx.fail(f"ctc_loss: log_probs must be floats, got {dtype}")
    blank = int(args[4]) if len(args) > 4 and args[4] is not None else 0

    def kernel(lp, tg, input_lengths, target_lengths, blank, width):
        operands = [ctx.emit(x) for x in (lp, tg, input_lengths, target_lengths)]
        return ctx.emit(call_rule_stage(
            ctx.bb, lambda *ts: topi_ctc.ctc_alpha_stage(*ts, blank, width), *operands,
            name="ctc_log_alpha", rule=ctc_rule.RULE))

    parts = torch_ctc.ctc_loss(_op, kernel, log_probs, targets, lengths[0], lengths[1],
                               ctx.shape(log_probs), ctx.shape(targets), dtype, _const,
                               ctx.emit, blank=blank, reduction=reduction,
                               zero_infinity=zero_infinity, longest_target=longest)
    return tuple(ctx.emit(p) for p in parts)


@register("ctc_loss.IntList", "ctc_loss.Tensor")
def _ctc_loss(ctx: AtenContext, args):
    """``ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
    zero_infinity=False)`` (ATen's Reduction: 0 none, 1 mean, 2 sum)."""
    reduction = torch_ctc.REDUCTIONS[int(args[5]) if len(args) > 5 and args[5] is not None
                                     else 1]
    zero_infinity = bool(args[6]) if len(args) > 6 and args[6] is not None else False
    return _ctc(ctx, args, zero_infinity, reduction)[0]


@register("_ctc_loss.default", "_ctc_loss.Tensor")
def _ctc_loss_parts(ctx: AtenContext, args):
    """``(neg_log_likelihood, log_alpha)`` per sample, before any zero_infinity."""
    _, nll, alpha = _ctc(ctx, args, False, "none")
    return nll, alpha
