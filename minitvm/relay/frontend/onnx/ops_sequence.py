"""ONNX sequences and optionals on Relay: resolved at import (``frontend_common.onnx_sequence``);
a sequence is a tuple of Relay tensors, known in length."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_sequence import SeqOps, register_sequence_ops
from ... import op as _op
from .registry import CONVERTERS


class _RelayOps(SeqOps):
    def concat(self, ctx, values, axis):
        return values[0] if len(values) == 1 else _op.concatenate(values, axis)

    def expand_dims(self, ctx, value, axis):
        return _op.expand_dims(value, axis)

    def squeeze(self, ctx, value, axis):
        return _op.squeeze(value, axis=[axis])

    def slice_axis(self, ctx, value, axis, begin, end):
        return _op.strided_slice(value, [begin], [end], axes=[axis])

    def const(self, ctx, arr: np.ndarray):
        return ctx.const(arr)


register_sequence_ops(CONVERTERS, _RelayOps(), value=lambda ctx, v, what: ctx.value(v, what),
                      shape=lambda ctx, v: ctx.shape(v), dtype=lambda ctx, v: ctx.dtype(v))
