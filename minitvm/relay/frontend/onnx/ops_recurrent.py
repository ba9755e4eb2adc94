"""ONNX recurrent operators (RNN, GRU, LSTM) on Relay: the shared unrolling of
``frontend_common.onnx_rnn`` driven by Relay operators."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_rnn import parse_spec, recurrent_inputs, unary_op, unroll
from ... import op as _op
from ...op import nn as _nn
from .registry import Context, register


def _dialect_op(name: str):
    return getattr(_nn, name[3:]) if name.startswith("nn.") else getattr(_op, name)


class RelayRecurrentOps:
    """``RecurrentOps`` on Relay expressions of one dtype."""

    def __init__(self, ctx: Context, dtype: str):
        self.ctx = ctx
        self.dtype = dtype

    def shape(self, x):
        return self.ctx.shape(x)

    def scalar(self, value):
        return self.ctx.const(np.array(value, self.dtype))

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
        return _op.take(x, self.ctx.const(np.array(index, "int64")), axis=axis)

    def split(self, x, parts, axis):
        return list(_op.split(x, parts, axis))

    def stack(self, xs, axis):
        return _op.stack(xs, axis)

    def zeros(self, shape):
        return _op.zeros(shape, self.dtype)

    def reverse(self, x, axis):
        return _op.reverse(x, axis)

    def reverse_sequence(self, x, lens):
        return _op.reverse_sequence(x, lens, seq_axis=0, batch_axis=1)

    def step_mask(self, lens, t):
        t_ = self.ctx.const(np.array(t, self.ctx.dtype(lens)))
        return _op.expand_dims(_op.less(t_, lens), 1)


def _recurrent(kind: str):
    def convert(ctx: Context, ins, attrs):
        x, w, r, b, lens, h0, c0, p = recurrent_inputs(kind, ins)
        spec = parse_spec(kind, attrs, ctx.shape(w)[0], ctx.fail)
        if lens is not None:
            if ctx.dtype(lens) not in ("int32", "int64"):
                raise ctx.fail(f"sequence_lens must be int32, got {ctx.dtype(lens)}")
            known = ctx.maybe_value(lens)
            seq = ctx.shape(x)[1 if spec.layout else 0]
            if known is not None and (known == seq).all():
                lens = None  # every sequence is full length: no masking needed
        y, y_h, y_c = unroll(spec, RelayRecurrentOps(ctx, ctx.dtype(x)), x, w, r, b, lens,
                             h0, c0, p)
        return [y, y_h] + ([y_c] if kind == "LSTM" else [])

    return convert


for _kind in ("RNN", "GRU", "LSTM"):
    register(_kind)(_recurrent(_kind))
