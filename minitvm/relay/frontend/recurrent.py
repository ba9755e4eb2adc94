"""``frontend_common.onnx_rnn.RecurrentOps`` on Relay expressions: the tensor operations the
shared LSTM / GRU / RNN unrolling builds, for the ONNX and the PyTorch importers."""

from __future__ import annotations

import numpy as np

from ...frontend_common.onnx_rnn import (
    RowStep,
    direction_cell,
    direction_params,
    gate_width,
    unary_op,
    weights_input_size,
)
from ...ir.prim_expr import Any
from ...ir.type import TensorType
from .. import expr as _expr
from .. import op as _op
from ..loops import while_loop
from ..op import nn as _nn
from ..op import vm as _vm
from .common import ImportError_, dynamic_quantize_uint8, infer_dtype, infer_shape, infer_type

__all__ = ["RelayRecurrentOps", "RunTimeSize", "is_run_time_length", "recurrent_loop"]

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


def is_run_time_length(ops: RelayRecurrentOps, x, layout: int) -> bool:
    """Is the sequence axis of a recurrent layer's input ``x`` a ``relay.Any()``?"""
    return isinstance(ops.shape(x)[1 if layout else 0], RunTimeSize)


def _zeros_state(x3, hid: int, dtype: str):
    """Zeros ``[batch, hid]`` for a ``[seq, batch, G]`` ``x3`` whose batch is known at run
    time only (a ``dyn.zeros`` of the batch read from ``x3``'s shape)."""
    batch = _op.strided_slice(_op.shape_of(x3, "int64"), [1], [2], [1])
    hid_ = _expr.const(np.array([hid], "int64"), "int64")
    return _op.zeros(_op.concatenate([batch, hid_], 0), dtype)


def recurrent_loop(spec, ops: RelayRecurrentOps, x, w, r, b=None, lens=None, h0=None, c0=None,
                   p=None, narrow=None) -> tuple:
    """``(Y, Y_h, Y_c)`` of an ONNX RNN / GRU / LSTM node whose sequence length is known at run
    time only: per direction, the input projection of every step in one product, then a
    recursive function (``relay.loops.while_loop``) taking one step a call: it reads its row of
    the projection by the step's index and writes its output into that row of a ``[?, batch,
    H]`` result made once before the loop (``vm.update_row``: in place in the Relay VM, so a
    step costs O(batch * H), not O(seq * batch * H)). The projection, the length and the
    result are loop variables, not values the body reads from outside (a body's expression is
    computed at each call: the projection of every step, each step). For the Relay VM
    (``relay.vm.compile``) or the interpreter. The batch may be a ``relay.Any()`` too; a
    run-time input size is the one ``W`` fixes when ``narrow(x, 2, size)`` (the importer's
    ``Context.narrow_input``) fixes it in the type of the graph input ``x`` is, which the VM
    checks on entry; else it is refused, naming that size (no Relay op checks a computed
    tensor against it at run time, and a reshape to it reads a wrong one silently). Arguments
    and results as ``onnx_rnn.unroll``'s."""
    shape = ops.shape(x)
    if isinstance(shape[2], RunTimeSize):
        width = weights_input_size(ops, w)
        if width is None or narrow is None or not narrow(x, 2, width):
            fix = f"; its weights W fix it at {width}: pass it in shape=" \
                if width is not None else ""
            raise ImportError_(f"a {spec.kind} over a run-time sequence length needs a static "
                               f"input size, got ?{fix}")
        shape = (*shape[:2], width)
    seq_first = shape if not spec.layout else (shape[1], shape[0], shape[2])
    _, batch, width = seq_first
    if spec.layout:
        x = _op.transpose(x, (1, 0, 2))
    hid, gates = spec.hidden, gate_width(spec)
    i64 = TensorType((), "int64")
    seq_len = _op.take(_op.shape_of(x, "int64"), _expr.const(np.array(0, "int64"), "int64"))
    state_axis = 1 if spec.layout else 0
    lstm = spec.kind == "LSTM"
    run_time_batch = isinstance(batch, RunTimeSize)
    rows = Any() if run_time_batch else batch
    state_type = TensorType((rows, hid), ops.dtype)
    ys_type = TensorType((Any(), rows, hid), ops.dtype)
    xw_type = TensorType((Any(), rows, gates), ops.dtype)
    lens_dtype = infer_dtype(lens) if lens is not None else None
    ys_all, hs, cs = [], [], []
    for d, direction in enumerate(spec.directions):
        w_d, r_d, wb, rb, p_d = direction_params(spec, ops, d, w, r, b, p)
        reverse = direction == "reverse"
        xs = x
        if reverse:  # each sequence from its own end: reversed, run forward, reversed back
            xs = ops.reverse_sequence(x, lens) if lens is not None else _op.reverse(x, 0)
        # (the projection of the [seq, batch, width] input as it is: [seq, batch, G*H])
        xw3, cell = direction_cell(spec, ops, d, xs, w_d, r_d, wb, rb, p_d)
        zero_state = _zeros_state(xw3, hid, ops.dtype) if run_time_batch else \
            ops.zeros((batch, hid))
        h = ops.take(h0, d, state_axis) if h0 is not None else zero_state
        c = ops.take(c0, d, state_axis) if c0 is not None and lstm else zero_state

        def body(t, n, xw3, h, *rest, cell=cell, lens=lens):
            c, ys = rest if lstm else (None, rest[0])
            mask = None
            if lens is not None:
                mask = _op.expand_dims(_op.less(_op.cast(t, lens_dtype), lens), 1)
            row = _op.take(xw3, t, axis=0)
            y, h_new, c_new = cell(RowStep(spec, ops, row, batch), None, h, c, mask)
            ys = _vm.update_row(ys, y, t)  # (in place: ys is not used after)
            t = _op.add(t, _expr.const(np.array(1, "int64"), "int64"))
            return [t, n, xw3, h_new] + ([c_new] if lstm else []) + [ys]

        loop_vars = [_expr.var("t", i64), _expr.var("n", i64), _expr.var("xw", xw_type),
                     _expr.var("h", state_type)] + \
            ([_expr.var("c", state_type)] if lstm else []) + [_expr.var("ys", ys_type)]
        loop = while_loop(lambda t, n, *_: _op.less(t, n), loop_vars, body)
        # (a fresh result each run, each direction: the loop writes it in place)
        zeros = _op.zeros_like(_op.strided_slice(xw3, [0], [hid], [1], axes=[2]))
        result = _expr.Call(loop, [_expr.const(np.array(0, "int64"), "int64"), seq_len, xw3, h]
                            + ([c] if lstm else []) + [zeros])
        ys = _expr.TupleGetItem(result, 5 if lstm else 4)
        if reverse:
            ys = ops.reverse_sequence(ys, lens) if lens is not None else _op.reverse(ys, 0)
        ys_all.append(_op.expand_dims(ys, 1))
        hs.append(_expr.TupleGetItem(result, 3))
        if lstm:
            cs.append(_expr.TupleGetItem(result, 4))
    y = _op.concatenate(ys_all, 1) if len(ys_all) > 1 else ys_all[0]  # [seq, dirs, batch, H]
    if spec.layout:
        y = _op.transpose(y, (2, 0, 1, 3))
    y_h = _op.stack(hs, state_axis)
    y_c = _op.stack(cs, state_axis) if lstm else None
    return y, y_h, y_c
