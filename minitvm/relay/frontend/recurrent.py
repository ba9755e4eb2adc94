"""``frontend_common.onnx_rnn.RecurrentOps`` on Relay expressions: the tensor operations the
shared LSTM / GRU / RNN unrolling builds, for the ONNX and the PyTorch importers."""

from __future__ import annotations

import numpy as np

from ...frontend_common.onnx_rnn import unary_op
from .. import expr as _expr
from .. import op as _op
from ..op import nn as _nn
from .common import infer_dtype, infer_shape

__all__ = ["RelayRecurrentOps"]


def _dialect_op(name: str):
    return getattr(_nn, name[3:]) if name.startswith("nn.") else getattr(_op, name)


class RelayRecurrentOps:
    """``RecurrentOps`` on Relay expressions of one dtype."""

    def __init__(self, dtype: str):
        self.dtype = dtype

    def shape(self, x):
        return infer_shape(x)

    def scalar(self, value):
        return _expr.const(np.array(value, self.dtype), self.dtype)

    def unary(self, name, x):
        return _dialect_op(unary_op(name))(x)

    def binary(self, name, a, b):
        return getattr(_op, name)(a, b)

    def where(self, cond, a, b):
        return _op.where(cond, a, b)

    def dense(self, x, w):
        return _nn.dense(x, w)

    def reshape(self, x, shape):
        return _op.reshape(x, shape)

    def transpose(self, x, axes):
        return _op.transpose(x, axes)

    def take(self, x, index, axis):
        return _op.take(x, _expr.const(np.array(index, "int64")), axis=axis)

    def take_row(self, x, index, axis):
        return _op.take(x, _expr.const(np.array([index], "int64")), axis=axis)

    def split(self, x, parts, axis):
        return list(_op.split(x, parts, axis))

    def slice(self, x, begin, end, strides):
        return _op.strided_slice(x, list(begin), list(end), list(strides),
                                 axes=list(range(len(begin))))

    def concat(self, xs, axis):
        return _op.concatenate(list(xs), axis)

    def stack(self, xs, axis):
        return _op.stack(xs, axis)

    def zeros(self, shape):  # a constant: FoldConstant does not fold the zeros op
        return _expr.const(np.zeros(shape, self.dtype), self.dtype)

    def reverse(self, x, axis):
        return _op.reverse(x, axis)

    def reverse_sequence(self, x, lens):
        return _op.reverse_sequence(x, lens, seq_axis=0, batch_axis=1)

    def step_mask(self, lens, t):
        t_ = _expr.const(np.array(t, infer_dtype(lens)))
        return _op.expand_dims(_op.less(t_, lens), 1)
