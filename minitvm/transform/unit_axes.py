"""Shape arithmetic of unit dims, shared by both dialects' SinkUnitSqueeze: which axes a squeeze
(or a reshape that only drops unit dims) removes, and a constant given them back."""

from __future__ import annotations

import numpy as np

__all__ = ["dropped_unit_axes", "unsqueezed"]


def dropped_unit_axes(shape_in, shape_out) -> tuple[int, ...] | None:
    """The axes of ``shape_in`` (all of extent 1) whose removal gives ``shape_out``, else None
    (a reshape that moves or merges dims). Matching greedily loses nothing: a dim equal to the
    next one wanted is as good kept as dropped."""
    if len(shape_out) >= len(shape_in):
        return None
    axes, j = [], 0
    for i, d in enumerate(shape_in):
        if j < len(shape_out) and d == shape_out[j]:
            j += 1
        elif d == 1:
            axes.append(i)
        else:
            return None
    return tuple(axes) if j == len(shape_out) else None


def unsqueezed(value: np.ndarray, rank: int, axes, full_rank: int) -> np.ndarray:
    """``value`` (broadcastable to a tensor of ``rank`` dims) with the unit ``axes`` of a
    ``full_rank``-dim tensor put back."""
    dims = iter((1,) * (rank - value.ndim) + value.shape)
    return value.reshape([1 if i in axes else next(dims) for i in range(full_rank)])
