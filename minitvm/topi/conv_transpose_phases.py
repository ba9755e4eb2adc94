"""The output phases of a transposed convolution, each an ordinary stride-1 convolution.

With stride ``s``, dilation ``d`` and padding ``p`` before, output row ``y = s*q + r`` gathers
the filter rows ``k`` with ``(r + p - d*k) % s == 0``, from input rows
``q + (r + p - d*k) / s``. With ``g = gcd(s, d)`` those taps are ``s/g`` apart, so their input
rows are ``d/g`` apart: each phase ``r`` is a stride-1 convolution with dilation ``d/g`` over
the input, with those filter rows in descending order (flipped) and padding of its own. A phase
no tap reaches (``(r + p) % g != 0``, or a filter shorter than the stride) is all zeros, and so
is one whose taps read only padding. Every phase computes
``ceil(size_out / s)`` rows; where ``s`` does not divide ``size_out`` the interleaved result is
cropped. Padding past the filter's reach crops the input instead. With groups, the weight's
``(in, out/groups)`` axes are regrouped to conv2d's ``(out, in/groups)``. Relay's Legalize and
Relax's LegalizeOps of ``nn.conv2d_transpose`` both build their per-phase ``conv2d`` calls from
this."""

from __future__ import annotations

from math import gcd
from typing import NamedTuple

import numpy as np


class Phase(NamedTuple):
    """One output phase along one axis: the filter taps its conv reads, in its order (empty:
    the phase is zeros), and that conv's padding before and after (negative: that many input
    rows are cropped instead, where the transposed conv's padding reaches past the filter)."""

    taps: list[int]
    before: int
    after: int


def phase_rows(stride: int, size_out: int) -> int:
    """The rows every phase computes (the last phases' extra row is cropped)."""
    return -(-size_out // stride)


def phase_dilation(stride: int, dilation: int) -> int:
    """The dilation of each phase's stride-1 conv."""
    return dilation // gcd(stride, dilation)


def phases(stride: int, pad_before: int, kernel: int, size_in: int, size_out: int,
           dilation: int = 1) -> list[Phase]:
    """The ``stride`` phases along one axis."""
    q, step = phase_rows(stride, size_out), phase_dilation(stride, dilation)
    out = []
    for r in range(stride):
        taps = [k for k in range(kernel - 1, -1, -1)
                if (r + pad_before - dilation * k) % stride == 0]
        first = (r + pad_before - dilation * taps[0]) // stride if taps else 0  # at q = 0
        before, after = -first, q + first + (len(taps) - 1) * step - size_in
        if not taps or size_in + min(before, 0) + min(after, 0) <= 0:  # reads no input row
            out.append(Phase([], 0, 0))
        else:
            out.append(Phase(taps, before, after))
    return out


def regroup_weight(weight: np.ndarray, groups: int) -> np.ndarray:
    """A transposed conv's ``(in, out/groups, kh, kw)`` weight as conv2d's
    ``(out, in/groups, kh, kw)``: output channel ``g*og + j`` of group ``g`` reads input
    channel ``g*cg + c`` through ``weight[g*cg + c, j]``."""
    c, og, kh, kw = weight.shape
    w = weight.reshape(groups, c // groups, og, kh, kw).transpose(0, 2, 1, 3, 4)
    return np.ascontiguousarray(w.reshape(groups * og, c // groups, kh, kw))
