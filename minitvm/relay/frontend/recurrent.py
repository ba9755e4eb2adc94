"""``frontend_common.onnx_rnn.RecurrentOps`` on Relay expressions: the tensor operations the
shared LSTM / GRU / RNN unrolling builds, for the ONNX and the PyTorch importers."""

from __future__ import annotations

import numpy as np

from ...frontend_common.onnx_rnn import unary_op
from ...ir.prim_expr import Any
from ...ir.type import TensorType
from .. import expr as _expr
from .. import op as _op
from ..op import nn as _nn
from .common import ImportError_, dynamic_quantize_uint8, infer_dtype, infer_shape, infer_type

__all__ = ["RelayRecurrentOps", "RunTimeSize"]

UNTIL_END = 2**62  # a strided_slice end past any axis (clipped to its size)


class RunTimeSize:
    """A size known at run time only (a ``relay.Any()`` batch) in the shared unrolling's shape
    arithmetic: its products with static sizes stay run-time sizes, a reshape infers it (-1),
    a slice runs to the axis's end; using it as a count (a sequence length) is an error."""

    def __mul__(self, other):
        if isinstance(other, int | RunTimeSize):
            return RunTimeSize()
        return NotImplemented

    __rmul__ = __mul__

    def __index__(self):
        raise ImportError_("a recurrent layer over a sequence of run-time length cannot be "
                           "unrolled; pass a static sequence length in shape=")

    __int__ = __index__

    def __repr__(self) -> str:
        return "?"


def run_time_codes(shape) -> list:
    """A reshape's new shape with its run-time size inferred (-1); an error for two."""
    shape = list(shape)
    if sum(isinstance(d, RunTimeSize) for d in shape) > 1:
        raise ImportError_(f"a recurrent layer's reshape to {tuple(shape)}: more than one "
                           "run-time size; pass static sizes in shape=")
    return [-1 if isinstance(d, RunTimeSize) else d for d in shape]


def _dialect_op(name: str):
    return getattr(_nn, name[3:]) if name.startswith("nn.") else getattr(_op, name)


class RelayRecurrentOps:
    """``RecurrentOps`` on Relay expressions of one dtype."""

    def __init__(self, dtype: str):
        self.dtype = dtype
        self._consts: dict[int, tuple] = {}  # id(DynamicQuantWeight) -> its constants

    def _weight_consts(self, w):
        """One set of constants per weight, every step reading it: (weight_t, column sums,
        row-sum weight or None, scale). (A Constant a step would be a parameter a step.)"""
        got = self._consts.get(id(w))
        if got is None:
            plan = w.plan
            got = self._consts[id(w)] = (
                w, _expr.const(plan.weight_t), _expr.const(plan.column_sums),
                None if plan.row_sum_weight is None else _expr.const(plan.row_sum_weight),
                _expr.const(w.scale))
        return got[1:]

    def shape(self, x):
        """``x``'s static shape; a ``RunTimeSize`` for each ``relay.Any()`` axis (the batch of
        a dynamic-batch import)."""
        t = infer_type(x)
        if isinstance(t, TensorType) and not t.is_static() and \
                all(isinstance(d, int | Any) for d in t.shape):
            return tuple(RunTimeSize() if isinstance(d, Any) else int(d) for d in t.shape)
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
        return _op.reshape(x, run_time_codes(shape))

    def transpose(self, x, axes):
        return _op.transpose(x, axes)

    def take(self, x, index, axis):
        return _op.take(x, _expr.const(np.array(index, "int64")), axis=axis)

    def take_row(self, x, index, axis):
        return _op.take(x, _expr.const(np.array([index], "int64")), axis=axis)

    def split(self, x, parts, axis):
        return list(_op.split(x, parts, axis))

    def slice(self, x, begin, end, strides):
        end = [UNTIL_END if isinstance(e, RunTimeSize) else e for e in end]
        return _op.strided_slice(x, list(begin), end, list(strides),
                                 axes=list(range(len(begin))))

    def concat(self, xs, axis):
        return _op.concatenate(list(xs), axis)

    def stack(self, xs, axis):
        return _op.stack(xs, axis)

    def zeros(self, shape):  # a constant: FoldConstant does not fold the zeros op
        if any(isinstance(d, RunTimeSize) for d in shape):
            raise ImportError_("a recurrent layer's zero state of a run-time batch (a "
                               "sequence of length 0); pass a static batch in shape=")
        return _expr.const(np.zeros(shape, self.dtype), self.dtype)

    def reverse(self, x, axis):
        return _op.reverse(x, axis)

    def reverse_sequence(self, x, lens):
        return _op.reverse_sequence(x, lens, seq_axis=0, batch_axis=1)

    def step_mask(self, lens, t):
        t_ = _expr.const(np.array(t, infer_dtype(lens)))
        return _op.expand_dims(_op.less(t_, lens), 1)

    def dynamic_quantized_dense(self, x, w):
        """``DynamicQuantWeight``'s product: ``x`` quantized to uint8 over its range with 0
        (as ``DynamicQuantizeLinear``), the int32 VNNI ``nn.dense`` less the zero point's
        shares (``MatmulVnniPlan``), scaled by ``s_x * w.scale``."""
        weight, column_sums, row_sum_weight, w_scale = self._weight_consts(w)
        q, scale, zp = dynamic_quantize_uint8(x, "float32")
        y = _nn.dense(q, weight, units=w.units, out_dtype="int32")
        if row_sum_weight is not None:
            sums = _op.sum(_op.cast(q, "int32"), axis=[-1], keepdims=True)
            y = _op.subtract(y, _op.multiply(sums, row_sum_weight))
        y = _op.subtract(y, _op.multiply(_op.cast(zp, "int32"), column_sums))
        return _op.multiply(_op.cast(y, "float32"), _op.multiply(scale, w_scale))
