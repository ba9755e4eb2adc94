"""Numpy reference of ``topi.selection``'s order (a minitvm addition to ``tvm.topi.testing``)."""

from __future__ import annotations

import numpy as np


def selection_order_python(x: np.ndarray, axis: int, ascend: bool) -> np.ndarray:
    """Positions along ``axis`` in the order topk / sort / argsort select them: by value
    (ascending or descending), ties in input order, NaN after every number either way."""
    key = np.moveaxis(x, axis, -1)
    if key.dtype.kind == "f":
        nan = np.isnan(key)
        rank = np.where(nan, 0, key.astype("float64") * (1 if ascend else -1))
    else:
        nan = np.zeros(key.shape, bool)
        rank = key if ascend else ~key
    pos = np.broadcast_to(np.arange(key.shape[-1]), key.shape)
    return np.moveaxis(np.lexsort((pos, rank, nan), axis=-1), -1, axis)
