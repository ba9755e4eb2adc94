"""``nn.dense(x, transpose(w))`` with a known ``w`` -> ``nn.dense(x, w.T)`` (pre-transposed)."""

from __future__ import annotations

import numpy as np

from ..analysis import search_fc_transpose
from ..transform import SimplifyFCTranspose
from .utils import _run_opt_pass

__all__ = ["convert"]


def convert(func, params: dict):
    """Pre-transpose every weight ``w`` of ``params`` that ``func`` feeds to ``nn.dense``
    through ``transpose(w, [1, 0])``: ``params`` gets ``<w>.T`` instead of ``w`` (in place) and
    the function reads it directly. Returns ``(new_func, params)``."""
    from ...runtime.ndarray import array

    names = search_fc_transpose(func)
    for name in names:
        if name not in params:
            raise KeyError(f"simplify_fc_transpose.convert: no value for the weight {name!r}")
        value = params.pop(name)
        w = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        params[name + ".T"] = array(np.ascontiguousarray(np.transpose(w, (1, 0))))
    return _run_opt_pass(func, SimplifyFCTranspose(names)), params
