"""The CTC forward variables (tag ``ctc_alpha``): ``log_alpha[n, t, s]``, the log probability
of emitting the first ``s + 1`` symbols of sample ``n``'s blank-extended target in the first
``t + 1`` frames (Graves et al. 2006), as torch's ``_ctc_loss`` returns it beside the loss.

The stage's te body only names its inputs and its shape; ``schedule/ctc.py`` writes its loops
(a pass over the frames per sample, each frame one pass over the extended target), for Relay's
compute of ``nn.ctc_log_alpha`` and the Relax torch importer's call_tir. Operands:
``log_probs`` ``(T, N, C)`` float, ``targets`` ``(N, S)`` (padded) or ``(sum of lengths,)``
(concatenated) integers, ``input_lengths`` / ``target_lengths`` ``(N,)`` integers. The output
is ``(N, T, width)``, ``-inf`` wherever no path reaches (past a sample's frames or its
``2 L + 1`` extended symbols).

The frames, the batch and the targets' length may be symbolic sizes where a symbolic kernel's
builder collects shape conditions (Relay's VM): a symbolic targets length is then stated
positive (the rule reads a label), so that no targets at all take the per-shape path."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from . import shape_conditions
from .utils import compute

__all__ = ["CTC_ALPHA_TAG", "ctc_alpha_stage"]

CTC_ALPHA_TAG = "ctc_alpha"


def ctc_alpha_stage(log_probs, targets, input_lengths, target_lengths, blank: int,
                    width: int):
    """The ``(N, T, width)`` forward-variable stage (see the module)."""
    shapes = [log_probs.shape, targets.shape, input_lengths.shape, target_lengths.shape]
    if not all(isinstance(d, E.IntImm) for s in shapes for d in s) and \
            not shape_conditions.collecting():
        raise ValueError("ctc_alpha_stage: the operands' shapes must be static (or symbolic "
                         "where shape conditions are collected)")
    if len(log_probs.shape) != 3 or len(targets.shape) not in (1, 2) or \
            len(input_lengths.shape) != 1 or len(target_lengths.shape) != 1:
        raise ValueError(f"ctc_alpha_stage: expected log_probs (T, N, C), targets (N, S) or "
                         f"(total,) and lengths (N,), got {shapes}")
    frames, batch = log_probs.shape[0], log_probs.shape[1]
    if not isinstance(targets.shape[-1], E.IntImm):  # (the rule reads a label: none is no case)
        shape_conditions.assume_positive(targets.shape[-1])
    operands = (log_probs, targets, input_lengths, target_lengths)

    def body(*i):  # (stands for the rule's loops; the loads make the operands its inputs)
        value = None
        for x in operands:
            load = x[tuple(E.IntImm("int64", 0) for _ in x.shape)]
            load = load if load.dtype == log_probs.dtype else E.Cast(log_probs.dtype, load)
            value = load if value is None else value + load
        return value

    return te.compute([batch, frames, int(width)], body, name="T_ctc_log_alpha",
                      tag=CTC_ALPHA_TAG,
                      attrs={"operands": operands, "blank": int(blank), "width": int(width)})


@compute("nn.ctc_log_alpha")
def _ctc_compute(attrs, inputs, out_type):
    return [ctc_alpha_stage(*inputs, int(attrs.blank), int(out_type.shape[2]))]
