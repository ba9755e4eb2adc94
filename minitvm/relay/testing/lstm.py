"""An unrolled LSTM (TVM's ``relay.testing.lstm``): ``iterations`` steps of one cell sharing
its weights, the steps bound by ``let`` as TVM builds them."""

from __future__ import annotations

from ..expr import Function, Let, Tuple, TupleGetItem, var
from ..op import nn
from ..op import tensor as _t
from ..op import transform as _tr
from .init import create_workload

__all__ = ["lstm_cell", "get_net", "get_workload"]


def lstm_cell(x, h, c, i2h_w, i2h_b, h2h_w, h2h_b, num_hidden: int):
    """One step: gates = x·Wi + bi + h·Wh + bh split into in/forget/cell/out; returns (h', c')."""
    gates = _t.add(nn.bias_add(nn.dense(x, i2h_w, units=4 * num_hidden), i2h_b),
                   nn.bias_add(nn.dense(h, h2h_w, units=4 * num_hidden), h2h_b))
    parts = _tr.split(gates, 4, axis=1)
    in_gate = _t.sigmoid(TupleGetItem(parts.astuple(), 0))
    forget = _t.sigmoid(TupleGetItem(parts.astuple(), 1))
    cell_in = _t.tanh(TupleGetItem(parts.astuple(), 2))
    out_gate = _t.sigmoid(TupleGetItem(parts.astuple(), 3))
    c_next = _t.add(_t.multiply(forget, c), _t.multiply(in_gate, cell_in))
    return _t.multiply(out_gate, _t.tanh(c_next)), c_next


def get_net(iterations: int, num_hidden: int, batch_size: int = 1,
            dtype: str = "float32") -> Function:
    if iterations < 1:
        raise ValueError(f"lstm: iterations must be >= 1, got {iterations}")
    data = var("data", shape=(iterations, batch_size, num_hidden), dtype=dtype)
    i2h_w = var("i2h_weight", shape=(4 * num_hidden, num_hidden), dtype=dtype)
    i2h_b = var("i2h_bias", shape=(4 * num_hidden,), dtype=dtype)
    h2h_w = var("h2h_weight", shape=(4 * num_hidden, num_hidden), dtype=dtype)
    h2h_b = var("h2h_bias", shape=(4 * num_hidden,), dtype=dtype)
    zeros = _t.zeros((batch_size, num_hidden), dtype)
    steps = []
    h = c = zeros
    for t in range(iterations):
        x = _tr.squeeze(_tr.strided_slice(data, [t], [t + 1], axes=[0]), axis=[0])
        h_new, c_new = lstm_cell(x, h, c, i2h_w, i2h_b, h2h_w, h2h_b, num_hidden)
        hv = var(f"h{t}", shape=(batch_size, num_hidden), dtype=dtype)
        cv = var(f"c{t}", shape=(batch_size, num_hidden), dtype=dtype)
        steps.append((hv, h_new, cv, c_new))
        h, c = hv, cv
    body = Tuple([h, c])
    for hv, h_new, cv, c_new in reversed(steps):
        body = Let(hv, h_new, Let(cv, c_new, body))
    return Function([data, i2h_w, i2h_b, h2h_w, h2h_b], body)


def get_workload(iterations: int, num_hidden: int, batch_size: int = 1,
                 dtype: str = "float32"):
    """``(mod, params)`` of the unrolled LSTM; its output is the last (hidden, cell) state."""
    return create_workload(get_net(iterations, num_hidden, batch_size, dtype))
