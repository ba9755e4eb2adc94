"""MaxPool's ``Indices`` output on Relay: the shared algorithm of
``frontend_common.onnx_pool`` driven by Relay operators."""

from __future__ import annotations

from ....frontend_common.onnx_pool import maxpool_indices as _indices
from ... import op as _op
from ...op import nn as _nn
from .registry import Context


class _RelayIndicesOps:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def pad(self, x, widths, value):
        return _nn.pad(x, widths, pad_value=value)

    def strided_slice(self, x, begin, end, strides, axes):
        return _op.strided_slice(x, begin, end, strides=strides, axes=axes)

    def stack(self, xs):
        return _op.stack(xs, 0)

    def argmax0(self, x):
        return _op.argmax(x, axis=[0])

    def take0(self, table, idx):
        return _op.take(self.ctx.const(table), idx, axis=0)

    def add_const(self, x, c):
        return _op.add(x, self.ctx.const(c))


def maxpool_indices(ctx: Context, x, out_sizes, kernel, strides, dil, begin, end,
                    storage_order: int):
    return _indices(_RelayIndicesOps(ctx), ctx.shape(x), ctx.dtype(x), x, out_sizes, kernel,
                    strides, dil, begin, end, storage_order)
