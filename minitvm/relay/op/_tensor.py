"""``relay.op._tensor``: shape functions of the elementwise and broadcast operators (the output
shape from the input shapes, computed at run time for dynamic shapes), on numpy shape arrays."""

from __future__ import annotations

import numpy as np

__all__ = ["elemwise_shape_func", "broadcast_shape_func", "full_shape_func",
           "no_data_full_shape_func"]


def elemwise_shape_func(attrs, inputs, _out_ndims=None) -> list[np.ndarray]:
    """The output shape of an elementwise op: its first input's shape."""
    return [np.asarray(inputs[0], dtype="int64").copy()]


def broadcast_shape_func(attrs, inputs, _out_ndims=None) -> list[np.ndarray]:
    """The broadcast of the input shapes (numpy's rule; a mismatch names both shapes)."""
    shapes = [tuple(int(d) for d in np.asarray(s).reshape(-1)) for s in inputs]
    try:
        out = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"broadcast_shape_func: shapes {shapes} do not broadcast") from None
    return [np.asarray(out, dtype="int64")]


def full_shape_func(attrs, inputs, _out_ndims=None) -> list[np.ndarray]:
    """The output shape of ``full`` with a shape argument: that shape."""
    return [np.asarray(inputs[1] if len(inputs) > 1 else inputs[0], dtype="int64").copy()]


def no_data_full_shape_func(attrs, inputs, _out_ndims=None) -> list[np.ndarray]:
    """The output shape of ``zeros``/``ones`` with a shape argument: that shape."""
    return [np.asarray(inputs[0], dtype="int64").copy()]
