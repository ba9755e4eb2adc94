"""ONNX sequences and optionals on Relax: resolved at import (``frontend_common.onnx_sequence``);
a sequence is a tuple of Relax tensors (or known values), known in length."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_sequence import SeqOps, register_sequence_ops
from ... import op as _op
from .context import CONVERTERS


class _RelaxOps(SeqOps):
    def concat(self, ctx, values, axis):
        exprs = [ctx.expr(v) for v in values]
        return exprs[0] if len(exprs) == 1 else ctx.emit(_op.concat(exprs, axis))

    def expand_dims(self, ctx, value, axis):
        return ctx.emit(_op.expand_dims(ctx.expr(value), axis))

    def squeeze(self, ctx, value, axis):
        return ctx.emit(_op.squeeze(ctx.expr(value), [axis]))

    def slice_axis(self, ctx, value, axis, begin, end):
        return ctx.emit(_op.strided_slice(ctx.expr(value), [axis], [begin], [end]))

    def const(self, ctx, arr: np.ndarray):
        return arr  # a value known at import


register_sequence_ops(CONVERTERS, _RelaxOps(), value=lambda ctx, v, what: ctx.value(v, what),
                      shape=lambda ctx, v: ctx.shape(v), dtype=lambda ctx, v: ctx.dtype(v))
