"""Max pooling's indices output on Relay (ONNX MaxPool's ``Indices``, PyTorch's
``max_pool*d_with_indices``): the shared algorithm of ``frontend_common.onnx_pool`` driven by
Relay operators, for the ONNX and the PyTorch importers."""

from __future__ import annotations

import numpy as np

from ...frontend_common.onnx_pool import maxpool_indices as _indices
from .. import expr as _expr
from .. import op as _op
from ..op import nn as _nn
from .common import infer_dtype, infer_shape


class _RelayIndicesOps:
    def pad(self, x, widths, value):
        return _nn.pad(x, widths, pad_value=value)

    def strided_slice(self, x, begin, end, strides, axes):
        return _op.strided_slice(x, begin, end, strides=strides, axes=axes)

    def stack(self, xs):
        return _op.stack(xs, 0)

    def argmax0(self, x):
        return _op.argmax(x, axis=[0])

    def take0(self, table, idx):
        return _op.take(_const(table), idx, axis=0)

    def add_const(self, x, c):
        return _op.add(x, _const(c))


def _const(value):
    arr = np.asarray(value)
    return _expr.const(arr, str(arr.dtype))  # int64 kept (const alone narrows to int32)


def maxpool_indices(x, out_sizes, kernel, strides, dil, begin, end, storage_order: int = 0,
                    per_plane: bool = False):
    """int64 indices of the element each max-pool output took (``frontend_common.onnx_pool``):
    flat over the whole input, or with ``per_plane`` within each N, C plane."""
    return _indices(_RelayIndicesOps(), infer_shape(x), infer_dtype(x), x, out_sizes, kernel,
                    strides, dil, begin, end, storage_order, per_plane)
