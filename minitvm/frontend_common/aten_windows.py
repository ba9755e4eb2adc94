"""What the Relay and Relax PyTorch importers share of ATen's window ops: an ``int[2]``
argument as an (h, w) pair, and ``Tensor.unfold``'s constant window index with the axis order
that moves the window's entries last."""

from __future__ import annotations

import numpy as np

__all__ = ["pair", "unfold_index", "size_axis_last"]


def pair(v) -> tuple[int, int]:
    """An ATen ``int[2]`` argument (an int, or a list of one or two) as an (h, w) pair."""
    v = [int(e) for e in v] if isinstance(v, list | tuple) else [int(v)]
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def unfold_index(length: int, size: int, step: int, axis: int, fail) -> np.ndarray:
    """The int64 [windows, size] index ``w * step + k`` of ``unfold(axis, size, step)`` over an
    axis of ``length`` (``(length - size) // step + 1`` windows); ``fail(msg)`` builds the error
    for a size or step that does not fit."""
    if step < 1 or not 0 <= size <= length:
        raise fail(f"unfold: size {size} and step {step} do not fit axis {axis} of length "
                   f"{length} (needs 0 <= size <= length, step >= 1)")
    windows = (length - size) // step + 1
    return (np.arange(windows)[:, None] * step + np.arange(size)[None, :]).astype("int64")


def size_axis_last(ndim: int, axis: int) -> list[int] | None:
    """The axis order of a take at ``axis`` by ``unfold_index`` (``ndim`` axes after it) that
    moves the window's entries (axis ``axis + 1``) last; None when they are last already."""
    if axis + 1 == ndim - 1:
        return None
    return [a for a in range(ndim) if a != axis + 1] + [axis + 1]
