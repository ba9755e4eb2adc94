"""Relay's ops for ``frontend_common.onnx_run_time_taps``: ONNX Resize sampled by scales known
only at run time (fractional output sizes, antialiased downscales), as onnxruntime."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_run_time_taps
from ... import op as _op
from ...op import annotation as _annotation
from .registry import Context

__all__ = ["resize_by_scales"]


class _RelayOps:
    """The ops ``onnx_run_time_taps`` builds with, as Relay calls; the rest by name from
    ``relay.op``."""

    def __init__(self, ctx: Context):
        self._ctx = ctx

    def __getattr__(self, name: str):
        return getattr(_op, name)

    def const(self, v):
        return self._ctx.const(v)

    def cast(self, x, dtype: str):
        return _op.cast(x, dtype)

    def dim(self, x, axis: int):
        return _op.take(_op.shape_of(x, "int64"), self._ctx.const(np.array(axis, "int64")))

    def positions(self, n):
        return _op.arange(self._ctx.const(np.array(0, "int64")), n,
                          self._ctx.const(np.array(1, "int64")), "int64")

    def dense(self, a, b):
        return _op.nn.dense(a, b)

    def transpose(self, x, axes):
        return _op.transpose(x, axes)

    def materialize(self, x):
        return _annotation.stop_fusion(x)

    def ndim(self, x) -> int:
        return len(self._ctx.shape(x))

    def dtype(self, x) -> str:
        return self._ctx.dtype(x)

    def fail(self, message: str):
        return self._ctx.fail(message)


def resize_by_scales(ctx: Context, x, attrs: dict, size, scale, lo, hi):
    """``x`` (N, C, spatial...) of a float dtype resized to the run-time spatial ``size``
    sampling each axis by ``scale`` (``onnx_run_time_taps.resize_by_scales``)."""
    return onnx_run_time_taps.resize_by_scales(_RelayOps(ctx), x, attrs, size, scale, lo, hi)
